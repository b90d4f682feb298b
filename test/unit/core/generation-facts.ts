import type { ChannelFacts, GenerationFacts } from '#core/generation';
import { checkVariant, PLATFORMS, type Platform } from '#core/platforms';

// The generation tests' facts: one channel per platform (no image, no inbox item), and createPost's
// own text check of a body.

export const id = (prefix: string, n: number) => `${prefix}_01JD${String(n).padStart(22, '0')}`;
export const channels: ChannelFacts[] = PLATFORMS.map((platform, i) => ({
  id: id('ch', i),
  platform,
  handle: `@herald-${platform}`,
}));
export const channelOf = (p: Platform) => channels.find((c) => c.platform === p) as ChannelFacts;
export const facts: GenerationFacts = { channels, image: null, item: null };

/** What checkVariant says of `body` on `p` (the body's own errors only). */
export const bodyErrors = (p: Platform, body: string) =>
  checkVariant(p, { body }, '').filter((e) => e.pointer === '/body');
