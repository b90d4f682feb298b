import { type GraphClient, type Params, pageGraph } from '../meta/client.ts';
import { type CommentEdge, publishComment, reconcileComment } from '../meta/comments.ts';
import { bestEffort, findPost, found, metaFormat, searchSince } from '../meta/publish.ts';
import { postOrComment } from '../support.ts';
import {
  type Credentials,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from '../types.ts';
import { publishReel, publishStory, readPhaseCheckpoint, reconcilePhases } from './formats.ts';

// Facebook Pages API (graph.facebook.com) with a Page access token; the channel's account_id is the
// Page id. Text and link posts: POST /{page-id}/feed (message, link). Photos: each one uploaded with
// POST /{page-id}/photos (url, published=false), then one POST /{page-id}/feed with
// attached_media[i]={"media_fbid": …}. A video: POST /{page-id}/videos (file_url, description).
// Meta fetches media by URL. The Pages API has no idempotency key, so the checkpoint (saved before
// the publishing call) records what was about to be posted, and reconcile looks the Page's feed (or
// videos) up since the attempt for that message. The first comment: POST /{page-post-id}/comments
// with the Page token, so the Page is its author (pages_manage_engagement; meta/comments.ts).
// `options.format` `reel` and `story` go through their upload phases instead (formats.ts).

const PLATFORM = 'facebook';
const WEB = 'https://www.facebook.com';
/** Meta downloads the file during POST /videos; give it longer than the default. */
const VIDEO_TIMEOUT_MS = 120_000;

interface Session {
  client: GraphClient;
  pageId: string;
}

function session(credentials: Credentials): Session {
  const { client, accountId } = pageGraph(PLATFORM, credentials);
  return { client, pageId: accountId };
}

interface FeedCheckpoint {
  kind: 'feed' | 'video';
  message: string;
  photo_ids: string[];
  created_at: string;
}

function readCheckpoint(cp: Record<string, unknown> | null): FeedCheckpoint | null {
  if (!cp || (cp.kind !== 'feed' && cp.kind !== 'video')) return null;
  return {
    kind: cp.kind,
    message: typeof cp.message === 'string' ? cp.message : '',
    photo_ids: Array.isArray(cp.photo_ids)
      ? cp.photo_ids.filter((p): p is string => typeof p === 'string')
      : [],
    created_at: typeof cp.created_at === 'string' ? cp.created_at : new Date(0).toISOString(),
  };
}

/** Video permalinks come back relative (`/page/videos/123/`). */
const absolute = (url: unknown): string | null =>
  typeof url !== 'string' || !url ? null : url.startsWith('/') ? `${WEB}${url}` : url;

/** The post text. A link option rides along as a link post; photo posts cannot carry one, so it joins the text. */
function messageFor(ctx: PublishContext, hasPhotos: boolean): { message: string; link?: string } {
  const link = typeof ctx.options.link === 'string' ? ctx.options.link : undefined;
  if (!link) return { message: ctx.text };
  if (!hasPhotos) return { message: ctx.text, link };
  return { message: ctx.text.includes(link) ? ctx.text : [ctx.text, link].filter(Boolean).join('\n\n') };
}

/** The Page's post (or video) made since the attempt with this exact message, oldest first. */
async function lookup(s: Session, ctx: PublishContext, cp: FeedCheckpoint): Promise<PublishResult | null> {
  const video = cp.kind === 'video';
  const hit = await findPost<{ id: string; permalink_url?: string }>(
    s.client,
    `/${s.pageId}/${video ? 'videos' : 'feed'}`,
    { text: video ? 'description' : 'message', time: 'created_time', link: 'permalink_url' },
    cp.message,
    searchSince(ctx, cp.created_at),
  );
  return hit ? found(hit.id, absolute(hit.permalink_url)) : null;
}

async function uploadPhoto(s: Session, m: MediaInput): Promise<string> {
  // Unpublished: the photo only appears as part of the feed post that attaches it.
  const photo = await s.client.post<{ id: string }>(`/${s.pageId}/photos`, {
    url: m.url,
    published: false,
    alt_text_custom: m.alt || undefined,
  });
  return photo.id;
}

async function publishVideo(
  s: Session,
  ctx: PublishContext,
  video: MediaInput,
  prior: FeedCheckpoint | null,
) {
  if (prior?.kind === 'video') {
    const earlier = await lookup(s, ctx, prior);
    if (earlier) return earlier;
  }
  const cp: FeedCheckpoint = {
    kind: 'video',
    message: ctx.text,
    photo_ids: [],
    created_at: new Date().toISOString(),
  };
  await ctx.saveCheckpoint({ ...cp });
  const params: Params = {
    file_url: video.url,
    description: ctx.text || undefined,
    title: ctx.title || undefined,
  };
  const created = await s.client.post<{ id: string }>(`/${s.pageId}/videos`, params, VIDEO_TIMEOUT_MS);
  const node = await bestEffort(() =>
    s.client.get<{ permalink_url?: string }>(`/${created.id}`, { fields: 'permalink_url' }),
  );
  return found(created.id, absolute(node?.permalink_url));
}

function comments(ctx: PublishContext): CommentEdge {
  const s = session(ctx.credentials);
  return {
    platform: PLATFORM,
    client: s.client,
    accountId: s.pageId,
    handle: '',
    textField: 'message',
    timeField: 'created_time',
    extraFields: 'from,permalink_url',
    url: (c) => absolute(c.permalink_url),
    readUrl: async (id) =>
      absolute(
        (await s.client.get<{ permalink_url?: string }>(`/${id}`, { fields: 'permalink_url' })).permalink_url,
      ),
  };
}

export async function publishPagePost(ctx: PublishContext): Promise<PublishResult> {
  const s = session(ctx.credentials);
  const format = metaFormat(ctx);
  if (format === 'reel') return publishReel(s, ctx, readPhaseCheckpoint(ctx.checkpoint));
  if (format === 'story') return publishStory(s, ctx, readPhaseCheckpoint(ctx.checkpoint));
  const prior = readCheckpoint(ctx.checkpoint);
  for (const m of ctx.media) {
    if (m.type !== 'image' && m.type !== 'video') {
      throw new PlatformError('user_content', `${PLATFORM}: ${m.type} attachments are not supported`, {
        retryable: false,
      });
    }
  }
  const video = ctx.media.find((m) => m.type === 'video');
  if (video) {
    if (ctx.media.length > 1) {
      throw new PlatformError('user_content', `${PLATFORM}: a video is posted on its own`, {
        retryable: false,
      });
    }
    return publishVideo(s, ctx, video, prior);
  }

  const { message, link } = messageFor(ctx, ctx.media.length > 0);
  if (prior?.kind === 'feed') {
    // The earlier attempt may have posted before it died: never post twice.
    const earlier = await lookup(s, ctx, { ...prior, message });
    if (earlier) return earlier;
  }
  // Photos uploaded unpublished by the earlier attempt can still be attached.
  const reuse = prior?.kind === 'feed' && prior.photo_ids.length === ctx.media.length;
  const photoIds = reuse && prior ? prior.photo_ids : [];
  if (!reuse) for (const m of ctx.media) photoIds.push(await uploadPhoto(s, m));

  const cp: FeedCheckpoint = {
    kind: 'feed',
    message,
    photo_ids: photoIds,
    created_at: new Date().toISOString(),
  };
  await ctx.saveCheckpoint({ ...cp });
  const params: Params = { message: message || undefined, link };
  photoIds.forEach((id, i) => {
    params[`attached_media[${i}]`] = JSON.stringify({ media_fbid: id });
  });
  const post = await s.client.post<{ id: string }>(`/${s.pageId}/feed`, params);
  const node = await bestEffort(() =>
    s.client.get<{ permalink_url?: string }>(`/${post.id}`, { fields: 'permalink_url' }),
  );
  return found(post.id, absolute(node?.permalink_url));
}

export async function reconcilePagePost(ctx: PublishContext): Promise<PublishResult | null> {
  const phases = readPhaseCheckpoint(ctx.checkpoint);
  if (phases) return reconcilePhases(session(ctx.credentials), phases);
  const cp = readCheckpoint(ctx.checkpoint);
  // The checkpoint is saved right before the publishing call: without one, nothing was posted.
  if (!cp) return null;
  return lookup(session(ctx.credentials), ctx, cp);
}

/** The Page's post, or (part `comment`) the first comment under it; Page posts have no threads. */
export const { publish, reconcile } = postOrComment(
  PLATFORM,
  { publish: publishPagePost, reconcile: reconcilePagePost },
  {
    publish: (ctx) => publishComment(comments(ctx), ctx),
    reconcile: (ctx) => reconcileComment(comments(ctx), ctx),
  },
);
