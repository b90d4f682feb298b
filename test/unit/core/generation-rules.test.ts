import { describe, expect, it } from 'vitest';
import { LIMITS } from '#core/constants';
import { estimateTokens, suggestionErrors } from '#core/generation';
import { keywords, rulesGenerate } from '#core/generation-rules';
import { replyTextErrors } from '#core/inbox-reply-rules';
import { CAPABILITIES, PLATFORMS, type Platform } from '#core/platforms';
import type { CreateGenerationInput } from '#core/requests';
import { bodyErrors, channelOf, channels, facts, id } from './generation-facts.ts';

// The rule-based engine ("model": "rules"): deterministic, and every suggestion passes the checks
// createPost and replyToInboxItem apply, on every platform.

const all = channels.map((c) => c.id);
const bodyOf = (s: unknown) => (s as { body: string }).body;

const LONG = Array.from(
  { length: 120 },
  (_, i) =>
    `Release ${i}: calendar sync and faster uploads reach every calendar team, see https://example.com/r/${i}.`,
).join(' ');

describe('rulesGenerate', () => {
  it.each(['variants', 'rewrite'] as const)('%s of a long text pass every platform’s text rules', (task) => {
    const input: CreateGenerationInput =
      task === 'variants' ? { task, prompt: LONG, channel_ids: all } : { task, text: LONG, channel_ids: all };
    const { suggestions } = rulesGenerate(input, facts);
    expect(suggestions.map((s) => (s as { channel_id: string }).channel_id)).toEqual(all);
    for (const s of suggestions) {
      expect(suggestionErrors(task, s, facts)).toEqual([]);
      const p = channels.find((c) => c.id === (s as { channel_id: string }).channel_id)?.platform as Platform;
      expect(bodyErrors(p, bodyOf(s))).toEqual([]);
    }
    expect(rulesGenerate(input, facts)).toEqual(rulesGenerate(input, facts));
  });

  it('adds keyword hashtags where the platform uses them and there is room', () => {
    const prompt =
      'Calendar sync is here. The calendar now syncs with every team calendar, and uploads are faster.';
    const { suggestions } = rulesGenerate({ task: 'variants', prompt, channel_ids: all }, facts);
    const of = (p: Platform) =>
      bodyOf(suggestions.find((s) => (s as { channel_id: string }).channel_id === channelOf(p).id));
    expect(of('x')).toBe(`${prompt}\n\n#calendar #sync`);
    expect(of('instagram')).toMatch(/\n\n#calendar #sync #syncs #team #uploads$/);
    expect(of('facebook')).toBe(prompt);
    expect(of('youtube')).toBe(prompt);
    // No room: a text filling the limit gets none.
    const full = rulesGenerate(
      { task: 'variants', prompt: `${'calendar '.repeat(31)}sync.`, channel_ids: [channelOf('x').id] },
      facts,
    );
    expect(bodyOf(full.suggestions[0])).not.toContain('#');
    // Room for one tag only: that one (268 + "\n\n#calendar" = 279 of X's 280).
    const base = 'Calendar calendar sync.';
    const roomy = `${base}${' ok'.repeat(Math.floor((268 - base.length) / 3))}`.padEnd(268, '!');
    const one = rulesGenerate({ task: 'variants', prompt: roomy, channel_ids: [channelOf('x').id] }, facts);
    expect(bodyOf(one.suggestions[0])).toBe(`${roomy}\n\n#calendar`);
    // Rewrites keep the text: no hashtags.
    const rw = rulesGenerate({ task: 'rewrite', text: prompt, channel_ids: [channelOf('x').id] }, facts);
    expect(bodyOf(rw.suggestions[0])).toBe(prompt);
  });

  it('picks keywords by frequency, skipping stopwords, URLs and existing tags', () => {
    expect(
      keywords('Uploads uploads UPLOADS calendar calendar with with with https://example.com/uploads', 3),
    ).toEqual(['uploads', 'calendar']);
    expect(keywords('#launch launch', 2)).toEqual(['launch']);
  });

  it.each(PLATFORMS.filter((p) => CAPABILITIES[p].thread))('splits a thread on %s within the limits', (p) => {
    const { suggestions } = rulesGenerate(
      { task: 'thread', text: LONG.slice(0, 6000), channel_id: channelOf(p).id },
      facts,
    );
    const [s] = suggestions;
    expect(s && 'thread' in s).toBe(true);
    expect(s && suggestionErrors('thread', s, facts)).toEqual([]);
    const t = s as { thread: unknown[] };
    expect(t.thread.length).toBeLessThanOrEqual(LIMITS.threadItems);
  });

  it('describes an image from its file facts, and says so', () => {
    const image = {
      id: id('med', 1),
      content_type: 'image/png',
      width: 1200,
      height: 630,
      size_bytes: 48213,
      filename: 'spring_launch-banner-2030.png',
    };
    const { suggestions, inputText, outputText } = rulesGenerate(
      { task: 'alt_text', media_id: image.id },
      { ...facts, image },
    );
    expect(suggestions).toEqual([
      {
        alt: 'A PNG image (1200 × 630 pixels, landscape) titled “spring launch banner”. This describes the file, not what the image shows: written from its file details, not by looking at it.',
      },
    ]);
    expect((suggestions[0] as { alt: string }).alt.length).toBeLessThanOrEqual(LIMITS.alt);
    expect(inputText).toContain('spring_launch');
    expect(estimateTokens(outputText)).toBeGreaterThan(0);
  });

  it('answers an inbox item briefly, naming the author, within replyTextErrors', () => {
    for (const [platform, kind, handle] of [
      ['mastodon', 'comment', 'ana@example.social'],
      ['mastodon', 'message', '@ana@example.social'],
      ['x', 'mention', 'ana'],
      ['youtube', 'comment', '@AnaTube'],
      ['instagram', 'message', 'ana.ig'],
    ] as const) {
      const item = {
        id: id('inb', 1),
        channel_id: channelOf(platform).id,
        platform,
        kind,
        author_handle: handle,
        text: 'Love it',
        post_text: 'Our news',
      };
      const out = rulesGenerate({ task: 'reply', inbox_item_id: item.id }, { ...facts, item });
      expect(out.suggestions.length).toBeGreaterThan(0);
      for (const s of out.suggestions) {
        expect(bodyOf(s)).toContain(handle.startsWith('@') ? handle : `@${handle}`);
        expect(replyTextErrors(platform, kind, bodyOf(s), handle)).toEqual([]);
      }
      expect(out.inputText).toContain('Love it');
      expect(out.outputText).toBe(out.suggestions.map(bodyOf).join('\n'));
    }
  });
});
