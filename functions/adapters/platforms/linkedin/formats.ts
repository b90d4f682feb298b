import { LINKEDIN_POLL_QUESTION_MAX } from '#core/formats';
import type { LinkCard } from '#core/link-cards';
import { pollWithMedia, rootPoll, str } from '../support.ts';
import { PlatformError, type PublishContext } from '../types.ts';
import type { Auth } from './client.ts';
import { assetStatus, uploadDocument, uploadImageBytes, waitAvailable } from './media.ts';

// The post shapes beyond text and images/videos, each one `content` of POST /rest/posts (Posts API:
// content is one of media, multiImage, poll, article …, never two):
// - a document (Documents API): `content.media` {id: urn:li:document:…, title}; a title is required.
// - a poll (Poll API): `content.poll` {question ≤ 140, options [{text ≤ 30}] × 2–4, settings.duration}.
// - an article, the link card (Article Post API): `content.article` {source, title, description,
//   thumbnail: urn:li:image:…}. LinkedIn does not scrape the URL: the card is what we send.

export type Content = Record<string, unknown>;

const fail = (message: string) =>
  new PlatformError('user_content', `linkedin: ${message}`, { retryable: false });

// Poll API: "one day (ONE_DAY), three days (THREE_DAYS), one week (SEVEN_DAYS) or two weeks (FOURTEEN_DAYS)".
export const POLL_DURATIONS: Readonly<Record<number, string>> = {
  1440: 'ONE_DAY',
  4320: 'THREE_DAYS',
  10080: 'SEVEN_DAYS',
  20160: 'FOURTEEN_DAYS',
};
export const POLL_DEFAULT_MINUTES = 10080;

/** The poll's question: the post's title, else its text (the commentary stays the text). */
export function pollQuestion(ctx: Pick<PublishContext, 'title' | 'text'>): string {
  return (ctx.title ?? '').trim() || ctx.text.trim();
}

/** The root's poll as content.poll, or null without one. */
export function pollContent(ctx: PublishContext): Content | null {
  const poll = rootPoll(ctx, POLL_DEFAULT_MINUTES);
  if (!poll) return null;
  if (ctx.media.length > 0) throw pollWithMedia('linkedin');
  const question = pollQuestion(ctx);
  if (!question) throw fail("a poll needs a question: the post's title or its text");
  if ([...question].length > LINKEDIN_POLL_QUESTION_MAX)
    throw fail(`the poll's question is over ${LINKEDIN_POLL_QUESTION_MAX} characters`);
  const duration = POLL_DURATIONS[poll.minutes];
  if (!duration) throw fail(`a poll lasts 1, 3, 7 or 14 days, not ${poll.minutes} minutes`);
  return {
    poll: { question, options: poll.choices.map((text) => ({ text })), settings: { duration } },
  };
}

/** The document's title on the carousel: `document_title`, else the post's title, else the file's name. */
export function documentTitle(ctx: PublishContext, filename: string): string {
  return str(ctx.options.document_title) ?? (str(ctx.title?.trim()) || filename);
}

/**
 * One PDF as a document post. The URN is checkpointed once its bytes are up (stage `document`), so
 * a retry — after a crash, or while LinkedIn still processes it — reuses the document instead of
 * uploading it again. Returns the content and the URN for the posting checkpoint.
 */
export async function documentContent(
  auth: Auth,
  ctx: PublishContext,
): Promise<{ content: Content; urn: string }> {
  const [item, ...rest] = ctx.media;
  if (!item || rest.length > 0 || item.type !== 'document')
    throw new PlatformError('media_error', 'linkedin: a document post takes exactly one PDF', {
      retryable: false,
    });
  let urn = str(ctx.checkpoint?.document);
  if (urn) {
    const status = await assetStatus(auth, 'documents', urn);
    // Never uploaded (or gone): the earlier attempt died before its bytes arrived.
    if (status === null || status === 'WAITING_UPLOAD') urn = undefined;
  }
  if (!urn) {
    urn = await uploadDocument(auth, item);
    await ctx.saveCheckpoint({ stage: 'document', document: urn });
  }
  await waitAvailable(auth, 'documents', urn);
  return { content: { media: { id: urn, title: documentTitle(ctx, item.filename) } }, urn };
}

// Images API: "JPG, GIF, and PNG" are the formats an image may be.
const CARD_IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif']);

/**
 * The link card as an article. Its image is uploaded through the Images API; when LinkedIn refuses
 * the image (or cannot take its type) the card goes without one and the delivery says so: a card
 * never fails the post. Auth, rate limits and outages still fail the attempt (it is retried).
 */
export async function articleContent(auth: Auth, ctx: PublishContext, card: LinkCard): Promise<Content> {
  let thumbnail: string | undefined;
  if (card.image && !CARD_IMAGE_TYPES.has(card.image.contentType)) {
    ctx.warn?.(
      'link_card_unavailable',
      `The card of ${card.url} was posted without its image: LinkedIn takes JPEG, PNG or GIF, not ${card.image.contentType}.`,
    );
  } else if (card.image) {
    try {
      thumbnail = await uploadImageBytes(auth, card.image.bytes);
    } catch (err) {
      if (!(err instanceof PlatformError) || err.category !== 'media_error') throw err;
      ctx.warn?.(
        'link_card_unavailable',
        `The card of ${card.url} was posted without its image: ${err.message}`.slice(0, 500),
      );
    }
  }
  return {
    article: {
      source: card.url,
      title: card.title.trim() || card.url,
      ...(card.description.trim() ? { description: card.description.trim() } : {}),
      ...(thumbnail ? { thumbnail } : {}),
    },
  };
}
