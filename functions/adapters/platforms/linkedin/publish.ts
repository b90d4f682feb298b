import { orOutcomeUnknown, publishedIn, searchFrom } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { Auth, call, ok } from './client.ts';
import { describe, linkedinError } from './errors.ts';
import { articleContent, type Content, documentContent, pollContent } from './formats.ts';
import { uploadImage, uploadVideo } from './media.ts';

// Posts of LinkedIn's REST API: text, images or a video (media.ts), a document, a poll or a link
// card as an article (formats.ts).
//
// `commentary` is "little text": ( ) [ ] { } < > @ # * _ ~ | \ are markup, and LinkedIn silently
// drops text after an unescaped one. We backslash-escape them so the text arrives as written.
//
// No idempotency key on POST /rest/posts. We checkpoint before it; reconcile (the worker's, while an
// earlier attempt may have made the post) looks the post up among the author's recent posts by its
// commentary, and a repeat that LinkedIn refuses as DUPLICATE_POST names the earlier post's URN,
// which we then report.

interface LiPost {
  id: string;
  author: string;
  commentary?: string;
  createdAt?: number;
  publishedAt?: number;
  lifecycleState?: string;
}

async function uploadAll(auth: Auth, media: MediaInput[]): Promise<Array<{ urn: string; item: MediaInput }>> {
  const out: Array<{ urn: string; item: MediaInput }> = [];
  for (const item of media) {
    if (item.type === 'image') out.push({ urn: await uploadImage(auth, item), item });
    else if (item.type === 'video') out.push({ urn: await uploadVideo(auth, item), item });
    else
      throw new PlatformError(
        'media_error',
        item.type === 'document'
          ? 'linkedin: a PDF is posted as a document post (options.format "document")'
          : `linkedin: ${item.type} attachments are not supported`,
        { retryable: false },
      );
  }
  return out;
}

function contentFor(uploaded: Array<{ urn: string; item: MediaInput }>): Record<string, unknown> | undefined {
  if (uploaded.length === 0) return undefined;
  const first = uploaded[0];
  if (uploaded.length === 1 && first) {
    return {
      media: {
        id: first.urn,
        ...(first.item.type === 'image' && first.item.alt ? { altText: first.item.alt } : {}),
      },
    };
  }
  return {
    multiImage: {
      images: uploaded.map((u) => ({ id: u.urn, ...(u.item.alt ? { altText: u.item.alt } : {}) })),
    },
  };
}

// Little text

const RESERVED = /[\\|{}@[\]()<>#*_~]/g;
export const escapeLittleText = (text: string) => text.replace(RESERVED, (c) => `\\${c}`);
export const unescapeLittleText = (text: string) => text.replace(/\\([\\|{}@[\]()<>#*_~])/g, '$1');

const permalink = (urn: string) => `https://www.linkedin.com/feed/update/${urn}`;

async function lookup(auth: Auth, ctx: PublishContext): Promise<PublishResult | null> {
  const since = searchFrom(ctx, ctx.checkpoint?.sentAt, 2 * 60_000);
  const qs = `q=author&author=${encodeURIComponent(auth.author)}&count=10&sortBy=LAST_MODIFIED`;
  const res = await ok<{ elements?: LiPost[] }>(auth, 'GET', `/rest/posts?${qs}`);
  const want = ctx.text.trim();
  const hit = (res.body.elements ?? []).find(
    (p) =>
      unescapeLittleText(p.commentary ?? '').trim() === want &&
      (p.createdAt ?? p.publishedAt ?? Date.now()) >= since,
  );
  return hit ? { externalId: hit.id, url: permalink(hit.id) } : null;
}

/** What the post carries besides its text, and the URNs it refers to (for the posting checkpoint). */
async function contentOf(auth: Auth, ctx: PublishContext): Promise<{ content?: Content; urns: string[] }> {
  if (ctx.options.format === 'document') {
    const { content, urn } = await documentContent(auth, ctx);
    return { content, urns: [urn] };
  }
  const poll = pollContent(ctx);
  if (poll) return { content: poll, urns: [] };
  if (ctx.media.length > 0) {
    const uploaded = await uploadAll(auth, ctx.media);
    return { content: contentFor(uploaded), urns: uploaded.map((u) => u.urn) };
  }
  // The worker reads the card for the root part only; a comment never gets here (comments.ts).
  if (ctx.linkCard && (ctx.part?.kind ?? 'root') === 'root') {
    const content = await articleContent(auth, ctx, ctx.linkCard);
    const thumb = (content.article as { thumbnail?: string }).thumbnail;
    return { content, urns: thumb ? [thumb] : [] };
  }
  return { urns: [] };
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  // An earlier attempt that may have made the post was reconciled (looked up) before this one.
  const sentBefore = ctx.checkpoint?.stage === 'posting';
  const { content, urns } = await contentOf(auth, ctx);
  const body: Record<string, unknown> = {
    author: auth.author,
    commentary: escapeLittleText(ctx.text),
    visibility: typeof ctx.options.visibility === 'string' ? ctx.options.visibility : 'PUBLIC',
    distribution: { feedDistribution: 'MAIN_FEED', targetEntities: [], thirdPartyDistributionChannels: [] },
    lifecycleState: 'PUBLISHED',
    isReshareDisabledByAuthor: false,
    ...(content ? { content } : {}),
  };
  await ctx.saveCheckpoint({
    stage: 'posting',
    media: urns,
    // A document's URN stays in the checkpoint: a retry of the post reuses it.
    ...(ctx.options.format === 'document' && urns[0] ? { document: urns[0] } : {}),
    sentAt: new Date().toISOString(),
  });
  const res = await call(auth, 'POST', '/rest/posts', { json: body });
  if (res.status !== 201 && res.status !== 200) {
    const err = linkedinError(res, 'POST /rest/posts');
    const duplicateOf = /duplicate of (urn:li:(?:share|ugcPost):\d+)/i.exec(describe(res))?.[1];
    // Our own earlier, unanswered attempt is the most likely original: report it instead of failing.
    if (sentBefore && duplicateOf) return { externalId: duplicateOf, url: permalink(duplicateOf) };
    throw err;
  }
  const urn = res.headers.get('x-restli-id') ?? res.headers.get('x-linkedin-id');
  if (!urn)
    throw new PlatformError('system', 'linkedin: post created without an x-restli-id header', {
      retryable: false,
    });
  return { externalId: urn, url: permalink(urn) };
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const done = publishedIn(ctx.checkpoint, permalink);
  if (done) return done;
  // No checkpoint before POST /rest/posts: the attempt died before it, so there is no post.
  if (ctx.checkpoint?.stage !== 'posting') return null;
  const auth = new Auth(ctx);
  // Typically 403: reading a member's posts needs r_member_social, which most apps do not have.
  return orOutcomeUnknown('linkedin', "the author's posts could not be read", () => lookup(auth, ctx));
}
