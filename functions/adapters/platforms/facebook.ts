import { platformOrigin } from './http.ts';
import {
  bestEffort,
  channelAuth,
  found,
  GRAPH_VERSION,
  GraphClient,
  insightNumbers,
  listEdge,
  noEngagement,
  type Params,
  parseGraphTime,
  sameText,
  searchSince,
  skippable,
} from './meta-graph.ts';
import {
  type Connector,
  type Credentials,
  type Engagement,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from './types.ts';

// Facebook Pages API (graph.facebook.com) with a Page access token; the channel's account_id is the
// Page id. Text and link posts: POST /{page-id}/feed (message, link). Photos: each one uploaded with
// POST /{page-id}/photos (url, published=false), then one POST /{page-id}/feed with
// attached_media[i]={"media_fbid": …}. A video: POST /{page-id}/videos (file_url, description).
// Meta fetches media by URL. The Pages API has no idempotency key, so the checkpoint (saved before
// the publishing call) records what was about to be posted, and reconcile looks the Page's feed (or
// videos) up since the attempt for that message.

const PLATFORM = 'facebook';
const REAL_ORIGIN = 'https://graph.facebook.com';
const WEB = 'https://www.facebook.com';
/** Meta downloads the file during POST /videos; give it longer than the default. */
const VIDEO_TIMEOUT_MS = 120_000;

interface Session {
  client: GraphClient;
  pageId: string;
}

interface FeedCheckpoint {
  kind: 'feed' | 'video';
  message: string;
  photo_ids: string[];
  created_at: string;
}

function open(credentials: Credentials): Session {
  const { token, accountId } = channelAuth(PLATFORM, credentials);
  const base = `${platformOrigin(PLATFORM, REAL_ORIGIN)}/${GRAPH_VERSION}`;
  return { client: new GraphClient({ platform: PLATFORM, base, token }), pageId: accountId };
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

interface FeedItem {
  id: string;
  message?: string;
  description?: string;
  created_time?: string;
  permalink_url?: string;
}

/** The Page's post (or video) made since the attempt with this exact message, oldest first. */
async function lookup(s: Session, ctx: PublishContext, cp: FeedCheckpoint): Promise<PublishResult | null> {
  const since = searchSince(ctx, cp.created_at);
  const video = cp.kind === 'video';
  const items = await listEdge<FeedItem>(s.client, `/${s.pageId}/${video ? 'videos' : 'feed'}`, {
    fields: video ? 'id,description,created_time,permalink_url' : 'id,message,created_time,permalink_url',
    since,
    limit: 50,
  });
  const hit = items
    .filter((p) => sameText(video ? p.description : p.message, cp.message))
    .filter((p) => !(parseGraphTime(p.created_time) < since * 1000))
    .sort((a, b) => parseGraphTime(a.created_time) - parseGraphTime(b.created_time))[0];
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

export const connector: Connector = {
  async publish(ctx) {
    const s = open(ctx.credentials);
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
  },

  async reconcile(ctx) {
    const cp = readCheckpoint(ctx.checkpoint);
    // The checkpoint is saved right before the publishing call: without one, nothing was posted.
    if (!cp) return null;
    return lookup(open(ctx.credentials), ctx, cp);
  },

  async metrics(ctx) {
    const s = open(ctx.credentials);
    const out: Record<string, Engagement> = {};
    for (const id of ctx.externalIds) {
      // Feed posts are `{page-id}_{post-id}`; video ids have no underscore and no `shares` field.
      const isPost = id.includes('_');
      try {
        const node = await s.client.get<{
          shares?: { count?: number };
          reactions?: { summary?: { total_count?: number } };
          comments?: { summary?: { total_count?: number } };
        }>(`/${id}`, {
          fields: [
            isPost ? 'shares' : '',
            'reactions.limit(0).summary(true)',
            'comments.limit(0).summary(true)',
          ]
            .filter(Boolean)
            .join(','),
        });
        // Page post insights replaced `post_impressions` by views (`post_media_view`) in November 2025.
        // Insights need a Page with enough followers; without them the post still has its counts.
        const insights = isPost
          ? await bestEffort(() =>
              s.client.get<Parameters<typeof insightNumbers>[0]>(`/${id}/insights`, {
                metric: 'post_media_view',
              }),
            )
          : null;
        out[id] = {
          ...noEngagement(),
          impressions: insights ? (insightNumbers(insights).post_media_view ?? 0) : 0,
          likes: node.reactions?.summary?.total_count ?? 0,
          comments: node.comments?.summary?.total_count ?? 0,
          shares: node.shares?.count ?? 0,
        };
      } catch (err) {
        if (!skippable(err)) throw err;
      }
    }
    return out;
  },
};
