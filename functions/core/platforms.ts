import * as z from 'zod/mini';
import type { MediaKind, Platform } from './constants.ts';
import type { FieldError } from './errors.ts';
import { once } from './once.ts';
import { issuesToFieldErrors } from './validation.ts';

// Per-platform rules checked at createPost (docs/api/posts.md): text length as each platform counts it,
// media kinds and counts, and the `options` each platform understands.

export { type MediaKind, PLATFORMS, type Platform } from './constants.ts';

type Counter = 'graphemes' | 'x_weighted' | 'chars_urls_23' | 'code_points';

interface MediaRule {
  /** Media is mandatory (Instagram, TikTok, YouTube, Pinterest). */
  required: boolean;
  kinds: readonly MediaKind[];
  maxImages: number;
  maxVideos: number;
  /** At most this many items in all. */
  maxItems: number;
  /** Images and videos may be combined in one post (carousels). */
  mixed: boolean;
}

/** What Herald does on each platform beyond one post (docs/api/channels.md, "Capabilities"). */
export interface Capabilities {
  /** Follow-up items published as replies under the post. */
  thread: boolean;
  /** A comment by the same account right after the post (a channel may lack the grant: see channels). */
  first_comment: boolean;
  /** unpublishPost removes the post from the platform. */
  unpublish: boolean;
  /** Published posts are edited in place: not in this version (updatePost edits before publishing). */
  edit_after_publish: boolean;
}

export const CAPABILITIES: Record<Platform, Capabilities> = {
  x: { thread: true, first_comment: true, unpublish: true, edit_after_publish: false },
  bluesky: { thread: true, first_comment: true, unpublish: true, edit_after_publish: false },
  threads: { thread: true, first_comment: true, unpublish: true, edit_after_publish: false },
  mastodon: { thread: true, first_comment: true, unpublish: true, edit_after_publish: false },
  linkedin: { thread: false, first_comment: true, unpublish: true, edit_after_publish: false },
  facebook: { thread: false, first_comment: true, unpublish: true, edit_after_publish: false },
  instagram: { thread: false, first_comment: true, unpublish: false, edit_after_publish: false },
  youtube: { thread: false, first_comment: true, unpublish: true, edit_after_publish: false },
  pinterest: { thread: false, first_comment: false, unpublish: true, edit_after_publish: false },
  tiktok: { thread: false, first_comment: false, unpublish: false, edit_after_publish: false },
};

/**
 * The grant a part needs beyond posting, where Herald did not always ask for it: a channel
 * connected without it (or before Herald recorded grants) lacks the capability until reconnected.
 * Connectors' `connect.ts` request these on every new connection.
 */
export const PART_GRANTS: Partial<Record<Platform, { thread?: string; first_comment?: string }>> = {
  instagram: { first_comment: 'instagram_manage_comments' },
  facebook: { first_comment: 'pages_manage_engagement' },
  youtube: { first_comment: 'https://www.googleapis.com/auth/youtube.force-ssl' },
  threads: { thread: 'threads_manage_replies', first_comment: 'threads_manage_replies' },
};

export interface ChannelCapabilities extends Capabilities {
  /** For each capability the platform has but this channel lacks: the grant to reconnect with. */
  missing: { thread?: string; first_comment?: string };
}

/** What one channel can do: its platform's capabilities, less those its grant lacks. */
export function channelCapabilities(
  platform: Platform,
  grantedScopes: readonly string[] | null | undefined,
): ChannelCapabilities {
  const caps = { ...CAPABILITIES[platform] };
  const missing: ChannelCapabilities['missing'] = {};
  const needs = PART_GRANTS[platform] ?? {};
  for (const part of ['thread', 'first_comment'] as const) {
    const scope = needs[part];
    if (caps[part] && scope && !grantedScopes?.includes(scope)) {
      caps[part] = false;
      missing[part] = scope;
    }
  }
  return { ...caps, missing };
}

/**
 * The values of `options.format` each platform takes, the default first; none where the platform
 * has one kind of post only. getChannelOptions lists them as `capabilities.formats`; what each
 * format allows is in core/formats.ts.
 */
export const FORMATS: Record<Platform, readonly string[]> = {
  x: [],
  bluesky: [],
  threads: [],
  mastodon: [],
  linkedin: ['post', 'document'],
  facebook: ['feed', 'story', 'reel'],
  instagram: ['feed', 'story', 'reel'],
  youtube: ['video', 'short'],
  pinterest: [],
  tiktok: [],
};

/** The platforms whose posts take `options.poll` (a poll takes no media). */
export const POLL_PLATFORMS: readonly Platform[] = ['x', 'linkedin', 'mastodon', 'threads'];

/** The platforms whose posts get a preview card of the first URL in the text (`options.link_card`). */
export const LINK_CARD_PLATFORMS: readonly Platform[] = ['bluesky', 'linkedin'];

/** TikTok's `options.post_mode`: published at once, or sent to the creator's TikTok inbox to finish. */
export const TIKTOK_POST_MODES = ['direct', 'inbox'] as const;
export type TikTokPostMode = (typeof TIKTOK_POST_MODES)[number];

/** `options.media_fit`: `auto` lets Herald derive a rendition the platform takes (core/media-fit.ts). */
export const MEDIA_FIT_MODES = ['off', 'auto'] as const;

/** The format option of a platform with formats (absent: its one format). */
const format = (platform: Platform) => ({
  format: z.optional(z.enum(FORMATS[platform] as [string, ...string[]])),
});

export interface PlatformRule {
  maxText: number;
  counter: Counter;
  media: MediaRule;
  /** Built on first use: a request builds the schemas of the platforms it targets only. */
  options: () => z.ZodMiniType;
}

/** A URL as the platforms find one in a text (X and Mastodon count each as 23). */
export const URL_RE = /https?:\/\/[^\s<>"]+/giu;
const EMOJI = /\p{Extended_Pictographic}/u;
// Built on first use: constructing it costs ~15 ms (ICU data), which every API function's cold
// start paid at load although only post bodies are ever measured with it.
const segmenter = once(() => new Intl.Segmenter('en', { granularity: 'grapheme' }));

/** The user-perceived characters (grapheme clusters) of `text`. */
export function graphemes(text: string): string[] {
  return Array.from(segmenter().segment(text), (s) => s.segment);
}

// twitter-text v3 weighting: these code point ranges weigh 1, everything else 2,
// an emoji sequence 2, and every URL 23 (t.co wrapping).
const X_LIGHT: ReadonlyArray<readonly [number, number]> = [
  [0, 4351],
  [8192, 8205],
  [8208, 8223],
  [8242, 8247],
];

function xWeight(text: string): number {
  let weight = 0;
  const rest = text.replace(URL_RE, () => {
    weight += 23;
    return '';
  });
  for (const g of graphemes(rest)) {
    if (EMOJI.test(g)) {
      weight += 2;
      continue;
    }
    for (const ch of g) {
      const cp = ch.codePointAt(0) ?? 0;
      weight += X_LIGHT.some(([lo, hi]) => cp >= lo && cp <= hi) ? 1 : 2;
    }
  }
  return weight;
}

export function textLength(counter: Counter, text: string): number {
  switch (counter) {
    case 'graphemes':
      return graphemes(text).length;
    case 'x_weighted':
      return xWeight(text);
    case 'chars_urls_23': {
      let n = 0;
      const rest = text.replace(URL_RE, () => {
        n += 23;
        return '';
      });
      return n + [...rest].length;
    }
    case 'code_points':
      return [...text].length;
  }
}

const str = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
const httpsUrl = () => z.url({ protocol: /^https?$/ });

/**
 * `options.poll` as one platform takes it: 2–4 choices of at most `choiceMax` characters, and a
 * duration in minutes within the platform's range (absent: the platform's default, core/formats.ts).
 */
const poll = (choiceMax: number, minutes: { min: number; max: number; only?: readonly number[] }) => ({
  poll: z.optional(
    z.strictObject({
      choices: z.array(str(choiceMax)).check(z.minLength(2), z.maxLength(4)),
      duration_minutes: z.optional(
        z.int().check(
          z.minimum(minutes.min),
          z.maximum(minutes.max),
          z.refine((m) => !minutes.only || minutes.only.includes(m), {
            message: `Must be one of ${minutes.only?.join(', ')}.`,
          }),
        ),
      ),
    }),
  ),
});
const mediaFit = () => ({ media_fit: z.optional(z.enum(MEDIA_FIT_MODES)) });
const linkCard = () => ({ link_card: z.optional(z.boolean()) });

const media = (m: Partial<MediaRule> & Pick<MediaRule, 'maxItems'>): MediaRule => ({
  required: false,
  kinds: ['image', 'video'],
  maxImages: m.maxItems,
  maxVideos: 1,
  mixed: false,
  ...m,
});

export const PLATFORM_RULES: Record<Platform, PlatformRule> = {
  x: {
    maxText: 280,
    counter: 'x_weighted',
    media: media({ maxItems: 4 }),
    options: once(() =>
      z.strictObject({
        reply_settings: z.optional(z.enum(['following', 'mentionedUsers', 'subscribers', 'verified'])),
        ...poll(25, { min: 5, max: 10080 }),
        ...mediaFit(),
      }),
    ),
  },
  linkedin: {
    maxText: 3000,
    counter: 'code_points',
    // A document (PDF) posts only as options.format "document", alone (core/formats.ts).
    media: media({ maxItems: 20, kinds: ['image', 'video', 'document'] }),
    options: once(() =>
      z.strictObject({
        visibility: z.optional(z.enum(['PUBLIC', 'CONNECTIONS', 'LOGGED_IN'])),
        ...format('linkedin'),
        document_title: z.optional(str(400)),
        ...poll(30, { min: 1440, max: 20160, only: [1440, 4320, 10080, 20160] }),
        ...linkCard(),
        ...mediaFit(),
      }),
    ),
  },
  bluesky: {
    maxText: 300,
    counter: 'graphemes',
    media: media({ maxItems: 4 }),
    options: once(() =>
      z.strictObject({
        langs: z.optional(
          z.array(z.string().check(z.regex(/^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*$/))).check(z.maxLength(3)),
        ),
        ...linkCard(),
        ...mediaFit(),
      }),
    ),
  },
  mastodon: {
    maxText: 500,
    counter: 'chars_urls_23',
    media: media({ maxItems: 4, kinds: ['image', 'video', 'audio'] }),
    options: once(() =>
      z.strictObject({
        visibility: z.optional(z.enum(['public', 'unlisted', 'private', 'direct'])),
        spoiler_text: z.optional(z.string().check(z.maxLength(500))),
        sensitive: z.optional(z.boolean()),
        language: z.optional(z.string().check(z.regex(/^[a-z]{2,3}$/))),
        ...poll(50, { min: 5, max: 43829 }),
        ...mediaFit(),
      }),
    ),
  },
  threads: {
    maxText: 500,
    counter: 'code_points',
    media: media({ maxItems: 20, maxVideos: 20, mixed: true }),
    options: once(() =>
      z.strictObject({
        reply_control: z.optional(z.enum(['everyone', 'accounts_you_follow', 'mentioned_only'])),
        ...poll(25, { min: 1440, max: 1440 }),
        ...mediaFit(),
      }),
    ),
  },
  instagram: {
    maxText: 2200,
    counter: 'code_points',
    media: media({ required: true, maxItems: 10, maxVideos: 10, mixed: true }),
    options: once(() => z.strictObject({ ...format('instagram'), ...mediaFit() })),
  },
  facebook: {
    maxText: 63206,
    counter: 'code_points',
    media: media({ maxItems: 10 }),
    options: once(() =>
      z.strictObject({ link: z.optional(httpsUrl()), ...format('facebook'), ...mediaFit() }),
    ),
  },
  tiktok: {
    maxText: 2200,
    counter: 'code_points',
    media: media({ required: true, maxItems: 35 }),
    options: once(() =>
      z.strictObject({
        privacy_level: z.optional(
          z.enum(['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'FOLLOWER_OF_CREATOR', 'SELF_ONLY']),
        ),
        disable_comment: z.optional(z.boolean()),
        disable_duet: z.optional(z.boolean()),
        disable_stitch: z.optional(z.boolean()),
        post_mode: z.optional(z.enum(TIKTOK_POST_MODES)),
        brand_content: z.optional(z.boolean()),
        brand_organic: z.optional(z.boolean()),
        ai_generated: z.optional(z.boolean()),
        cover_timestamp_ms: z.optional(z.int().check(z.minimum(0))),
        ...mediaFit(),
      }),
    ),
  },
  youtube: {
    maxText: 5000,
    counter: 'code_points',
    media: media({ required: true, maxItems: 1, maxImages: 0, kinds: ['video'] }),
    options: once(() =>
      z.strictObject({
        title: z.optional(str(100).check(z.regex(/^[^<>]*$/))),
        privacy_status: z.optional(z.enum(['public', 'unlisted', 'private'])),
        tags: z.optional(z.array(str(100)).check(z.maxLength(30))),
        made_for_kids: z.optional(z.boolean()),
        category_id: z.optional(z.string().check(z.regex(/^[0-9]{1,3}$/))),
        ...format('youtube'),
        thumbnail_url: z.optional(httpsUrl()),
        playlist_id: z.optional(z.string().check(z.regex(/^[A-Za-z0-9_-]{2,64}$/))),
        publish_at: z.optional(z.iso.datetime({ offset: true })),
        ...mediaFit(),
      }),
    ),
  },
  pinterest: {
    maxText: 800,
    counter: 'code_points',
    media: media({ required: true, maxItems: 1 }),
    options: once(() =>
      z.strictObject({
        board_id: z.optional(z.string().check(z.regex(/^[0-9]{1,32}$/))),
        link: z.optional(httpsUrl().check(z.maxLength(2048))),
        title: z.optional(str(100)),
        ...mediaFit(),
      }),
    ),
  },
};

const MEDIA_FIT_DESCRIPTION =
  '`auto`: Herald derives a rendition of each media item this platform takes (re-encoded, padded or cropped) instead of refusing it. Default: `off`.';

/**
 * What each option of PLATFORM_RULES[p].options means, for getChannelOptions (which derives type,
 * values and required from the schema itself). A unit test keeps the two the same set of names.
 */
export const OPTION_DESCRIPTIONS: Record<Platform, Record<string, string>> = {
  x: {
    reply_settings: 'Who may reply to the post (and to every item of its thread). Default: everyone.',
    poll: 'A poll under the text: 2–4 choices of at most 25 characters, `duration_minutes` 5–10080 (default 1440). No media with a poll.',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  linkedin: {
    visibility: 'Who sees the post. Default: PUBLIC.',
    format:
      'The kind of post: `post` (default), or `document`: one PDF (media kind `document`) shown as a swipeable carousel.',
    document_title:
      "A `document` post's title shown on the carousel. Default: the post title, else the PDF's file name.",
    poll: "A poll under the text: 2–4 choices of at most 30 characters, `duration_minutes` 1440, 4320, 10080 or 20160 (default 10080); the question is the post's title, else its text (at most 140 characters). No media with a poll.",
    link_card:
      'Show a preview card of the first URL in the text (its title, description and image). Default: true.',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  bluesky: {
    langs: 'Up to 3 BCP 47 language tags of the text (e.g. `en`, `pt-BR`), for feeds and filters.',
    link_card:
      'Show a preview card of the first URL in the text (its title, description and image), when the post has no media. Default: true.',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  mastodon: {
    visibility: "Who sees the status. Default: the account's default.",
    spoiler_text: 'A content warning shown before the text; counts toward the 500 characters.',
    sensitive: 'Hide the media behind a warning.',
    language: 'ISO 639 language code of the text (e.g. `en`).',
    poll: 'A poll under the status: 2–4 choices of at most 50 characters, `duration_minutes` 5–43829 (default 1440). No media with a poll.',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  threads: {
    reply_control: 'Who may reply. Default: everyone.',
    poll: 'A poll under the text: 2–4 choices of at most 25 characters; Threads polls last 24 hours (`duration_minutes` 1440). No media with a poll.',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  instagram: {
    format:
      'The kind of post: `feed` (default: an image, a video or a carousel), `story` (one image or video, no caption) or `reel` (one video).',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  facebook: {
    link: 'A link shared with the post (its preview shows under the text).',
    format:
      'The kind of post: `feed` (default), `story` (one image or video, no text) or `reel` (one vertical video).',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  tiktok: {
    privacy_level:
      "Who may watch the video: one of the creator's own privacy levels (choices.privacy_level, read from TikTok). Default: the most public of them.",
    disable_comment:
      'Turn comments off for this video (always off when the creator turned them off: limits).',
    disable_duet: 'Turn duets off for this video (always off when the creator turned them off).',
    disable_stitch: 'Turn stitches off for this video (always off when the creator turned them off).',
    post_mode:
      "`direct`: published at once; `inbox`: sent to the creator's TikTok inbox to finish in the app (the delivery ends published with no URL). Default: `direct` when the platform app is audited, else `inbox`.",
    brand_content: 'Disclose a paid partnership promoting a third party (TikTok shows “Paid partnership”).',
    brand_organic:
      "Disclose that the post promotes the creator's own business (TikTok shows “Promotional content”).",
    ai_generated: 'Label the content as AI-generated.',
    cover_timestamp_ms:
      "The video frame shown as the cover, in milliseconds from the start. Default: TikTok's choice.",
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  youtube: {
    title: 'The video title (at most 100 characters, no `<` or `>`). Default: the post title, else the text.',
    privacy_status: 'Who may watch the video. Default: public.',
    tags: 'Keywords (at most 30, 100 characters each).',
    made_for_kids: 'Declare the video made for children (COPPA). Default: false.',
    category_id: 'The video category (choices.category_id, read from YouTube). Default: 22 (People & Blogs).',
    format:
      'The kind of post: `video` (default) or `short` (a vertical or square video of at most 3 minutes).',
    thumbnail_url:
      "The `url` of a ready image asset to set as the video's thumbnail (JPEG or PNG, at most 2 MB).",
    playlist_id: 'A playlist of the channel to add the video to (choices.playlist_id, read from YouTube).',
    publish_at:
      'When the video goes public (ISO 8601, in the future): it is uploaded private and YouTube publishes it then.',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
  pinterest: {
    board_id:
      'The board to pin to (choices.board_id, read from Pinterest). Default: the board the channel was connected with.',
    link: 'Where the Pin leads when clicked.',
    title: 'The Pin title (at most 100 characters).',
    media_fit: MEDIA_FIT_DESCRIPTION,
  },
};

export interface VariantInput {
  body: string;
  media?: ReadonlyArray<{ type: MediaKind }> | undefined;
  options?: Record<string, unknown> | undefined;
}

/** Field errors for one variant against its channel's platform; pointers start at `base`. */
export function checkVariant(platform: Platform, variant: VariantInput, base: string): FieldError[] {
  const rule = PLATFORM_RULES[platform];
  const errors: FieldError[] = [];
  const length = textLength(rule.counter, variant.body);
  if (length > rule.maxText) {
    errors.push({
      pointer: `${base}/body`,
      code: 'text_too_long',
      message: `${platform} allows ${rule.maxText} characters as it counts them; this text is ${length}.`,
    });
  }

  const items = variant.media ?? [];
  const images = items.filter((m) => m.type === 'image').length;
  const videos = items.filter((m) => m.type === 'video').length;
  items.forEach((m, i) => {
    if (!rule.media.kinds.includes(m.type)) {
      errors.push({
        pointer: `${base}/media/${i}/type`,
        code: 'unsupported_media',
        message: `${platform} does not accept ${m.type} attachments.`,
      });
    }
  });
  if (rule.media.required && items.length === 0) {
    errors.push({
      pointer: `${base}/media`,
      code: 'media_required',
      message: `${platform} posts need media.`,
    });
  } else if (
    items.length > rule.media.maxItems ||
    images > rule.media.maxImages ||
    videos > rule.media.maxVideos ||
    (!rule.media.mixed && items.length > 1 && (videos > 0 || items.length - images > 0))
  ) {
    errors.push({
      pointer: `${base}/media`,
      code: 'too_many_media',
      message: `${platform} allows up to ${rule.media.maxImages} image(s) or ${rule.media.maxVideos} video(s)${
        rule.media.mixed ? ` (${rule.media.maxItems} items in all)` : ', not combined'
      }.`,
    });
  }

  const parsed = rule.options().safeParse(variant.options ?? {}, { reportInput: true });
  if (!parsed.success) {
    for (const e of issuesToFieldErrors(parsed.error.issues, `${base}/options`)) {
      errors.push({ pointer: e.pointer, code: 'invalid_option', message: `${platform}: ${e.message}` });
    }
  }
  if (platform === 'mastodon' && typeof variant.options?.spoiler_text === 'string') {
    const total = textLength('chars_urls_23', variant.body) + [...variant.options.spoiler_text].length;
    if (total > rule.maxText && length <= rule.maxText) {
      errors.push({
        pointer: `${base}/body`,
        code: 'text_too_long',
        message: `mastodon counts spoiler_text toward its ${rule.maxText} characters; together they are ${total}.`,
      });
    }
  }
  return errors;
}

/**
 * The longest first comment each platform takes, where it is not the post's own limit: a reply
 * (x, bluesky, threads, mastodon) is a post; LinkedIn, Facebook and YouTube comments have their own.
 */
export const COMMENT_MAX_TEXT: Partial<Record<Platform, number>> = {
  linkedin: 1250,
  facebook: 8000,
  youtube: 10000,
};

/**
 * The longest first comment `platform` takes: its comment API's own limit, else the post's (a
 * reply is a post; Instagram documents none for Graph API comments, so its caption's 2,200).
 */
export const commentMaxText = (platform: Platform): number =>
  COMMENT_MAX_TEXT[platform] ?? PLATFORM_RULES[platform].maxText;

/** Field errors of a first comment's text on `platform` (pointer: the comment's body). */
export function checkComment(platform: Platform, body: string, pointer: string): FieldError[] {
  const rule = PLATFORM_RULES[platform];
  const max = commentMaxText(platform);
  const length = textLength(rule.counter, body);
  if (length <= max) return [];
  return [
    {
      pointer,
      code: 'text_too_long',
      message: `${platform} allows ${max} characters in a comment as it counts them; this text is ${length}.`,
    },
  ];
}
