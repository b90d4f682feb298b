import type { Platform } from './constants.ts';
import {
  finishSuggestions,
  fitText,
  type GenerationFacts,
  HASHTAG_ROOM,
  type ImageFacts,
  type InboxFacts,
  type Suggestion,
  splitThread,
} from './generation.ts';
import { URL_RE } from './platforms.ts';
import type { CreateGenerationInput } from './requests.ts';

// The rule-based engine: what createGeneration answers where no model is configured ("model":
// "rules"). Deterministic text handling, never presented as a language model: it fits, splits and
// tags the text it is given, and describes an image from its file facts only.

/** Hashtags the engine adds on the platforms whose posts use them (none elsewhere). */
const HASHTAGS: Partial<Record<Platform, number>> = {
  x: 2,
  bluesky: 2,
  mastodon: 3,
  threads: 1,
  linkedin: 3,
  instagram: 5,
  tiktok: 4,
};

const STOPWORDS = new Set(
  (
    'about above after again against also because been before being below between both could does doing down during each ' +
    'even every from further have having here hers herself himself into itself just more most much must myself only other ' +
    'ours ourselves over same should some such than that their theirs them themselves then there these they this those ' +
    'through under until very want were what when where which while will with within without would your yours yourself ' +
    'yourselves make made today new now our are you can all any its was has had how who why not but out get got'
  ).split(' '),
);

/** The prompt's most frequent words of four letters or more that are not stopwords (ties: first seen). */
export function keywords(text: string, most: number): string[] {
  const counts = new Map<string, number>();
  for (const [w] of text
    .replace(URL_RE, ' ')
    .matchAll(/(?<![#@\p{L}\p{N}])\p{L}[\p{L}\p{N}]{3,29}(?![\p{L}\p{N}])/gu)) {
    const word = w.toLowerCase();
    if (!STOPWORDS.has(word)) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, most)
    .map(([w]) => w);
}

/** `body` with up to the platform's hashtags from `source`, only where the text has room for them. */
function withHashtags(platform: Platform, body: string, source: string): string {
  const most = HASHTAGS[platform] ?? 0;
  if (!most) return body;
  const present = new Set([...body.matchAll(/#([\p{L}\p{N}_]+)/gu)].map((m) => (m[1] ?? '').toLowerCase()));
  const tags = keywords(source, most)
    .filter((w) => !present.has(w))
    .map((w) => `#${w}`);
  let line = '';
  for (const tag of tags) {
    const next = line ? `${line} ${tag}` : tag;
    if (next.length > HASHTAG_ROOM) break;
    const candidate = `${body}\n\n${next}`;
    if (fitText(platform, candidate) !== candidate) break;
    line = next;
  }
  return line ? `${body}\n\n${line}` : body;
}

const KINDS: Record<string, string> = {
  'image/jpeg': 'JPEG',
  'image/png': 'PNG',
  'image/gif': 'GIF',
  'image/webp': 'WebP',
};

/** An alt text from what the probe recorded: kind, size, shape and the file name's words. */
function altOf(image: ImageFacts): string {
  const kind = KINDS[image.content_type] ?? image.content_type;
  const { width: w, height: h } = image;
  const shape = w && h ? (w > h * 1.1 ? 'landscape' : h > w * 1.1 ? 'portrait' : 'square') : null;
  const size = w && h ? `${w} × ${h} pixels${shape ? `, ${shape}` : ''}` : null;
  const words = (image.filename ?? '')
    .replace(/\.[A-Za-z0-9]{1,5}$/, '')
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word && !/^\d+$/.test(word))
    .join(' ');
  return [
    `A ${kind} image${size ? ` (${size})` : ''}${words ? ` titled “${words}”` : ''}.`,
    'This describes the file, not what the image shows: written from its file details, not by looking at it.',
  ].join(' ');
}

/** Short acknowledging answers that name the author. */
function repliesTo(item: InboxFacts): string[] {
  const who = item.author_handle.startsWith('@') ? item.author_handle : `@${item.author_handle}`;
  switch (item.kind) {
    case 'message':
      return [
        `Hi ${who}, thanks for your message. We have read it and will get back to you here soon.`,
        `Thanks for reaching out, ${who}! We will look into this and reply shortly.`,
      ];
    case 'mention':
      return [`Thanks for the mention, ${who}!`, `Thank you, ${who}, we appreciate you sharing this.`];
    case 'comment':
      return [`Thanks for your comment, ${who}!`, `Thank you, ${who}, glad you took the time to tell us.`];
  }
}

/**
 * The rules engine's answer to a generation: every suggestion within its checks, deterministic.
 * `inputText` and `outputText` are what it read and wrote: its usage is their estimateTokens.
 */
export function rulesGenerate(
  input: CreateGenerationInput,
  facts: GenerationFacts,
): { suggestions: Suggestion[]; inputText: string; outputText: string } {
  const platformOf = (id: string) => facts.channels.find((c) => c.id === id)?.platform;
  let raw: Suggestion[] = [];
  let inputText = '';
  switch (input.task) {
    case 'variants':
    case 'rewrite': {
      const source = input.task === 'variants' ? input.prompt : input.text;
      inputText = source;
      raw = input.channel_ids.flatMap((id) => {
        const platform = platformOf(id);
        if (!platform) return [];
        const body = fitText(platform, source);
        return [
          { channel_id: id, body: input.task === 'variants' ? withHashtags(platform, body, source) : body },
        ];
      });
      break;
    }
    case 'thread': {
      inputText = input.text;
      const platform = platformOf(input.channel_id);
      if (platform) {
        const split = splitThread(platform, input.text);
        raw = [{ channel_id: input.channel_id, body: split.body, thread: split.thread }];
      }
      break;
    }
    case 'alt_text':
      if (facts.image) {
        inputText = JSON.stringify(facts.image);
        raw = [{ alt: altOf(facts.image) }];
      }
      break;
    case 'reply':
      if (facts.item) {
        inputText = [facts.item.author_handle, facts.item.text, facts.item.post_text ?? ''].join('\n');
        raw = repliesTo(facts.item).map((body) => ({ body }));
      }
      break;
  }
  const suggestions = finishSuggestions(input, facts, raw);
  const outputText = suggestions
    .flatMap((s) => ('alt' in s ? [s.alt] : [s.body, ...('thread' in s ? s.thread.map((t) => t.body) : [])]))
    .join('\n');
  return { suggestions, inputText, outputText };
}
