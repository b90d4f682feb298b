import type { Platform } from './constants.ts';
import { LINK_CARD_PLATFORMS } from './platforms.ts';

// Link cards (docs/api/posts.md, "Link cards"): Bluesky and LinkedIn do not unfurl a URL in a post
// made through their APIs, so Herald reads the page itself (with the webhook address checks) and
// attaches a preview card of the first URL in the text. A page that cannot be read publishes the
// post without a card and says so in the delivery's `warnings`: a card never fails a post.

/** The card as a connector attaches it: read from the page's Open Graph (or HTML) tags. */
export interface LinkCard {
  /** The URL in the text (after redirects the card still points at this one). */
  url: string;
  title: string;
  description: string;
  /** The card's image, already fitted to the platform's limit (Bluesky: a blob ≤ 1,000,000 bytes). */
  image: { bytes: Uint8Array; contentType: string } | null;
}

const FIRST_URL = /https?:\/\/[^\s<>"]+/iu;
/** Punctuation that ends a sentence, not a URL ("see https://x.com/a."). */
const TRAILING = /[.,;:!?)\]}'"»]+$/u;

/** The first http(s) URL in a text, without the sentence's punctuation after it; null when none. */
export function firstUrl(text: string): string | null {
  const m = FIRST_URL.exec(text);
  if (!m) return null;
  const url = m[0].replace(TRAILING, '');
  try {
    return new URL(url).toString() === '' ? null : url;
  } catch {
    return null;
  }
}

/**
 * The URL a variant's card is read from: on a platform with cards, when the caller did not turn
 * them off, the text has a URL, and (Bluesky) the post has no media (an embed is one or the other).
 */
export function linkCardUrl(
  platform: Platform,
  variant: { body: string; media: readonly unknown[]; options: Record<string, unknown> },
): string | null {
  if (!LINK_CARD_PLATFORMS.includes(platform)) return null;
  if (variant.options.link_card === false) return null;
  if (variant.media.length > 0) return null;
  if (platform === 'linkedin' && variant.options.poll) return null;
  return firstUrl(variant.body);
}

/**
 * Where a card's image goes when the platform needs it re-encoded (the fit function reads only the
 * media bucket): by its content, apart from every organization's assets, under a prefix the bucket
 * expires after a day (lib/constructs/media.ts). The rendition is made beside it.
 */
export const CARD_IMAGE_PREFIX = 'orgs/_cards/';
export const cardImageKey = (sha256Hex: string) => `${CARD_IMAGE_PREFIX}media/${sha256Hex}/image`;
