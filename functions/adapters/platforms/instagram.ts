import { platformOrigin } from './http.ts';
import {
  asContainerStatus,
  bestEffort,
  type ContainerCheckpoint,
  type ContainerState,
  channelAuth,
  found,
  GRAPH_VERSION,
  GraphClient,
  insightNumbers,
  listEdge,
  noEngagement,
  outcomeUnknown,
  type Params,
  parseGraphTime,
  readContainerCheckpoint,
  sameText,
  searchSince,
  skippable,
  waitForContainer,
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

// Instagram API with Facebook Login (graph.facebook.com), content publishing for professional
// accounts: POST /{ig-user-id}/media makes a container (image_url; media_type=REELS with video_url —
// single feed videos are published as reels; media_type=CAROUSEL over item containers made with
// is_carousel_item=true), GET /{container-id}?fields=status_code,status until FINISHED, then
// POST /{ig-user-id}/media_publish?creation_id=… → {id}. Meta cURLs media from public URLs.
// The container id is the checkpoint: status_code turns PUBLISHED once published.
// The channel's token is a Facebook User (or Page) token; renewing it needs the app secret and a
// person, so an expired token is reported as auth_expired for re-authorization.

const PLATFORM = 'instagram';
const REAL_ORIGIN = 'https://graph.facebook.com';

interface Session {
  client: GraphClient;
  igUserId: string;
}

function open(credentials: Credentials): Session {
  const { token, accountId } = channelAuth(PLATFORM, credentials);
  const base = `${platformOrigin(PLATFORM, REAL_ORIGIN)}/${GRAPH_VERSION}`;
  return { client: new GraphClient({ platform: PLATFORM, base, token }), igUserId: accountId };
}

async function containerState(s: Session, id: string): Promise<ContainerState> {
  const body = await s.client.get<{ status_code?: unknown; status?: unknown }>(`/${id}`, {
    fields: 'status_code,status',
  });
  const status = asContainerStatus(body.status_code);
  if (!status)
    throw new PlatformError(
      'system',
      `${PLATFORM}: container ${id} has unknown status ${String(body.status_code)}`,
    );
  // On ERROR, `status` carries the reason (an error subcode and message).
  return { status, detail: typeof body.status === 'string' ? body.status : undefined };
}

function itemParams(m: MediaInput, carousel: boolean): Params {
  if (m.type === 'image') {
    // alt_text is accepted for image posts (not reels or stories).
    return { image_url: m.url, alt_text: m.alt || undefined, is_carousel_item: carousel || undefined };
  }
  if (m.type === 'video') {
    // Carousel items are VIDEO; a single video is published as a reel.
    return carousel
      ? { media_type: 'VIDEO', video_url: m.url, is_carousel_item: true }
      : { media_type: 'REELS', video_url: m.url };
  }
  throw new PlatformError('user_content', `${PLATFORM}: ${m.type} attachments are not supported`, {
    retryable: false,
  });
}

async function createContainer(s: Session, ctx: PublishContext): Promise<{ id: string; children: string[] }> {
  const post = (params: Params) => s.client.post<{ id: string }>(`/${s.igUserId}/media`, params);
  const caption = ctx.text || undefined;
  const first = ctx.media[0];
  if (!first)
    throw new PlatformError('user_content', `${PLATFORM}: posts need an image or a video`, {
      retryable: false,
    });
  if (ctx.media.length === 1)
    return { id: (await post({ ...itemParams(first, false), caption })).id, children: [] };

  const children: string[] = [];
  for (const m of ctx.media) children.push((await post(itemParams(m, true))).id);
  // The carousel container may only reference finished items.
  for (const id of children) await waitForContainer(PLATFORM, id, () => containerState(s, id));
  const parent = await post({ media_type: 'CAROUSEL', children: children.join(','), caption });
  return { id: parent.id, children };
}

interface IgMedia {
  id: string;
  caption?: string;
  timestamp?: string;
  permalink?: string;
}

/** The media a PUBLISHED container became: the account's media since the attempt, matched on caption. */
async function findPublished(
  s: Session,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult | null> {
  const since = searchSince(ctx, cp.created_at);
  const items = await listEdge<IgMedia>(s.client, `/${s.igUserId}/media`, {
    fields: 'id,caption,timestamp,permalink',
    since,
    limit: 50,
  });
  const hit = items
    .filter((m) => sameText(m.caption, ctx.text) && !(parseGraphTime(m.timestamp) < since * 1000))
    .sort((a, b) => parseGraphTime(a.timestamp) - parseGraphTime(b.timestamp))[0];
  return hit ? found(hit.id, hit.permalink) : null;
}

async function resolvePublished(
  s: Session,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const hit = await findPublished(s, ctx, cp);
  if (!hit)
    throw outcomeUnknown(PLATFORM, `container ${cp.container_id} is PUBLISHED but its media was not found`);
  return hit;
}

async function publishContainer(
  s: Session,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const state = await waitForContainer(PLATFORM, cp.container_id, () => containerState(s, cp.container_id));
  if (state === 'PUBLISHED') return resolvePublished(s, ctx, cp);
  const media = await s.client.post<{ id: string }>(`/${s.igUserId}/media_publish`, {
    creation_id: cp.container_id,
  });
  const permalink = await bestEffort(() =>
    s.client.get<{ permalink?: string }>(`/${media.id}`, { fields: 'permalink' }),
  );
  return found(media.id, permalink?.permalink);
}

async function checkpointState(s: Session, cp: ContainerCheckpoint): Promise<ContainerState | null> {
  try {
    return await containerState(s, cp.container_id);
  } catch (err) {
    if (err instanceof PlatformError && err.category === 'user_content') return null;
    throw err;
  }
}

export const connector: Connector = {
  async publish(ctx) {
    const s = open(ctx.credentials);
    const cp = readContainerCheckpoint(ctx.checkpoint);
    if (cp) {
      const state = await checkpointState(s, cp);
      if (state?.status === 'PUBLISHED') return resolvePublished(s, ctx, cp);
      if (state?.status === 'FINISHED' || state?.status === 'IN_PROGRESS')
        return publishContainer(s, ctx, cp);
      // ERROR, EXPIRED or gone: start over with a new container.
    }
    const container = await createContainer(s, ctx);
    const next: ContainerCheckpoint = {
      container_id: container.id,
      children: container.children,
      created_at: new Date().toISOString(),
    };
    await ctx.saveCheckpoint({ ...next });
    return publishContainer(s, ctx, next);
  },

  async reconcile(ctx) {
    const cp = readContainerCheckpoint(ctx.checkpoint);
    if (!cp) return null;
    const s = open(ctx.credentials);
    const state = await checkpointState(s, cp);
    if (!state) throw outcomeUnknown(PLATFORM, `container ${cp.container_id} can no longer be read`);
    if (state.status !== 'PUBLISHED') return null;
    return resolvePublished(s, ctx, cp);
  },

  async metrics(ctx) {
    const s = open(ctx.credentials);
    const out: Record<string, Engagement> = {};
    for (const id of ctx.externalIds) {
      try {
        // `impressions` is deprecated for media since v22.0; `views` replaces it.
        const body = await s.client.get<Parameters<typeof insightNumbers>[0]>(`/${id}/insights`, {
          metric: 'views,likes,comments,shares',
        });
        const n = insightNumbers(body);
        out[id] = {
          ...noEngagement(),
          impressions: n.views ?? 0,
          likes: n.likes ?? 0,
          comments: n.comments ?? 0,
          shares: n.shares ?? 0,
        };
      } catch (err) {
        if (!skippable(err)) throw err;
      }
    }
    return out;
  },
};
