import { createHash } from 'node:crypto';
import { fitImageObject } from '#adapters/fit-function';
import { IMAGE_MAX_BYTES, LinkCardUnavailable, readCardImage, readPageMeta } from '#adapters/link-card';
import { putMediaObject, readObject } from '#adapters/media-store';
import { webhookAddressPolicy } from '#adapters/webhooks/policy';
import type { DeliveryWarningCode, Platform } from '#core/constants';
import { cardImageKey, type LinkCard, linkCardUrl } from '#core/link-cards';
import { MEDIA_LIMITS } from '#core/media-limits';
import { FIT_FUNCTION_ENV } from '#core/vocabulary';
import { logger } from '#shared/logger';

// The root part's link card, read by the delivery worker just before it publishes (core/link-cards.ts
// decides whether there is one to read). A page that gives no card is a stated outcome, never a
// failure: the post goes without one and the delivery's warnings say why (link_card_unavailable).

type CardImage = NonNullable<LinkCard['image']>;

/** The image a platform's card takes: its blob limit and the types every card image is sent as. */
export function cardImageTarget(platform: Platform): { maxBytes: number; types: readonly string[] } {
  const limits = MEDIA_LIMITS[platform].image;
  const types = ['image/jpeg', 'image/png'].filter((t) => !limits.formats || limits.formats.includes(t));
  // Bluesky: app.bsky.embed.external#external thumb, a blob of ≤ 1,000,000 bytes (MEDIA_LIMITS).
  return { maxBytes: Math.min(limits.maxBytes ?? IMAGE_MAX_BYTES, IMAGE_MAX_BYTES), types };
}

/** Re-encodes an image to fit `target` (the media-fit function); null when it cannot. */
export type ImageFitter = (
  image: CardImage,
  target: { maxBytes: number; types: readonly string[] },
) => Promise<CardImage | null>;

export interface CardDeps {
  /** Default: the fit function, where the deployment has one. */
  fit?: ImageFitter | undefined;
}

/** How long a card waits for its image to be re-encoded: past it, the card goes without one. */
export const CARD_FIT_WAIT_MS = 15_000;

/**
 * The fit function's JPEG of the image, within the target's bytes: the image stored by its content
 * (cardImageKey), the rendition made beside it once, then read back. null when it cannot be fitted.
 */
export const fitWithFunction: ImageFitter = async (image, target) => {
  if (!target.types.includes('image/jpeg')) return null;
  const source = cardImageKey(createHash('sha256').update(image.bytes).digest('hex'));
  await putMediaObject(source, image.bytes, image.contentType);
  const answer = await fitImageObject(source, target.maxBytes, `card-${target.maxBytes}`, {
    signal: AbortSignal.timeout(CARD_FIT_WAIT_MS),
  });
  if (!answer.ok) return null;
  return { bytes: await readObject('media', answer.key), contentType: answer.content_type };
};

/**
 * The card for a root part, or null (none asked, or the page gave none: then `warn` says why). The
 * image is kept when it fits the platform, re-encoded when it does not and a fitter is at hand, and
 * dropped otherwise: a card without an image is still a card.
 */
export async function readLinkCard(
  platform: Platform,
  variant: { body: string; media: readonly unknown[]; options: Record<string, unknown> },
  warn: (code: DeliveryWarningCode, detail: string) => void,
  deps: CardDeps = { fit: process.env[FIT_FUNCTION_ENV] ? fitWithFunction : undefined },
): Promise<LinkCard | null> {
  const url = linkCardUrl(platform, variant);
  if (!url) return null;
  const policy = webhookAddressPolicy();
  let page: Awaited<ReturnType<typeof readPageMeta>>;
  try {
    page = await readPageMeta(url, { policy });
  } catch (err) {
    const why =
      err instanceof LinkCardUnavailable ? err.message : `The page could not be read: ${String(err)}`;
    warn('link_card_unavailable', `No link card for ${url}: ${why}`);
    return null;
  }
  let image: CardImage | null = null;
  if (page.imageUrl) {
    const target = cardImageTarget(platform);
    try {
      const fetched = await readCardImage(page.imageUrl, { policy });
      image = fits(fetched, target) ? fetched : ((await deps.fit?.(fetched, target)) ?? null);
      if (image && !fits(image, target)) image = null;
      if (image && image !== fetched)
        logger.info('link card image fitted', {
          platform,
          from: fetched.bytes.length,
          to: image.bytes.length,
        });
      if (!image)
        logger.info('link card image dropped: over the platform limit and not fitted', {
          platform,
          bytes: fetched.bytes.length,
          content_type: fetched.contentType,
        });
    } catch (err) {
      logger.info('link card image not read', { platform, reason: (err as Error).message });
      image = null;
    }
  }
  return { url, title: page.title, description: page.description, image };
}

const fits = (image: CardImage, target: { maxBytes: number; types: readonly string[] }) =>
  image.bytes.length <= target.maxBytes && target.types.includes(image.contentType);
