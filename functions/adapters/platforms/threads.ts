import { platformOrigin, request } from './http.ts';
import {
  asContainerStatus,
  bestEffort,
  type ContainerCheckpoint,
  type ContainerState,
  channelAuth,
  found,
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

// Threads API (graph.threads.net, v1.0). Publishing is two steps: create a media container
// (POST /{user-id}/threads: TEXT, IMAGE, VIDEO, or CAROUSEL over item containers made with
// is_carousel_item=true), wait until GET /{container-id}?fields=status,error_message says FINISHED,
// then POST /{user-id}/threads_publish?creation_id=… → {id}. Meta fetches images and videos from
// their public URLs. The container id is the checkpoint: its status turns PUBLISHED once published,
// which is how a retry knows whether the earlier attempt got through.
// Long-lived tokens last 60 days and are refreshed with GET /refresh_access_token?grant_type=th_refresh_token.

const PLATFORM = 'threads';
const REAL_ORIGIN = 'https://graph.threads.net';
const VERSION = 'v1.0';
/** Refresh this long before expiry (a token must be unexpired, and at least a day old, to refresh). */
const REFRESH_AHEAD_MS = 3 * 24 * 3600_000;

interface Session {
  client: GraphClient;
  userId: string;
}

type AuthContext = { credentials: Credentials; saveCredentials(c: Credentials): Promise<void> };

async function open(ctx: AuthContext): Promise<Session> {
  const { token, accountId } = channelAuth(PLATFORM, ctx.credentials);
  const origin = platformOrigin(PLATFORM, REAL_ORIGIN);
  let current: Credentials = ctx.credentials;
  let currentToken = token;

  const refresh = async (): Promise<string | null> => {
    const url = `${origin}/refresh_access_token?grant_type=th_refresh_token&access_token=${encodeURIComponent(currentToken)}`;
    const res = await request(PLATFORM, url, { method: 'GET' });
    if (res.status !== 200) return null;
    const body = jsonObject(res.body) as { access_token?: unknown; expires_in?: unknown } | null;
    if (!body || typeof body.access_token !== 'string' || !body.access_token) return null;
    currentToken = body.access_token;
    current = {
      ...current,
      access_token: body.access_token,
      ...(typeof body.expires_in === 'number'
        ? { expires_at: new Date(Date.now() + body.expires_in * 1000).toISOString() }
        : {}),
    };
    await ctx.saveCredentials(current);
    return currentToken;
  };

  const client = new GraphClient({ platform: PLATFORM, base: `${origin}/${VERSION}`, token, refresh });
  const expiresAt =
    typeof ctx.credentials.expires_at === 'string' ? Date.parse(ctx.credentials.expires_at) : Number.NaN;
  if (Number.isFinite(expiresAt) && expiresAt - Date.now() < REFRESH_AHEAD_MS) await client.refreshNow();
  return { client, userId: accountId };
}

function jsonObject(body: unknown): Record<string, unknown> | null {
  let v = body;
  if (typeof v === 'string') {
    try {
      v = JSON.parse(v);
    } catch {
      return null;
    }
  }
  return v && typeof v === 'object' ? (v as Record<string, unknown>) : null;
}

async function containerState(s: Session, id: string): Promise<ContainerState> {
  const body = await s.client.get<{ status?: unknown; error_message?: unknown }>(`/${id}`, {
    fields: 'status,error_message',
  });
  const status = asContainerStatus(body.status);
  if (!status)
    throw new PlatformError(
      'system',
      `${PLATFORM}: container ${id} has unknown status ${String(body.status)}`,
    );
  return { status, detail: typeof body.error_message === 'string' ? body.error_message : undefined };
}

function mediaParams(m: MediaInput): Params {
  // Threads posts take images and videos only (core rules already refuse other kinds).
  if (m.type === 'image') return { media_type: 'IMAGE', image_url: m.url, alt_text: m.alt || undefined };
  if (m.type === 'video') return { media_type: 'VIDEO', video_url: m.url, alt_text: m.alt || undefined };
  throw new PlatformError('user_content', `${PLATFORM}: ${m.type} attachments are not supported`, {
    retryable: false,
  });
}

async function createContainer(s: Session, ctx: PublishContext): Promise<{ id: string; children: string[] }> {
  const replyControl = typeof ctx.options.reply_control === 'string' ? ctx.options.reply_control : undefined;
  const post = (params: Params) => s.client.post<{ id: string }>(`/${s.userId}/threads`, params);
  const common: Params = { text: ctx.text || undefined, reply_control: replyControl };

  if (ctx.media.length === 0) {
    if (!ctx.text)
      throw new PlatformError('user_content', `${PLATFORM}: a post needs text or media`, {
        retryable: false,
      });
    return { id: (await post({ media_type: 'TEXT', ...common })).id, children: [] };
  }
  const first = ctx.media[0];
  if (ctx.media.length === 1 && first) {
    return { id: (await post({ ...mediaParams(first), ...common })).id, children: [] };
  }
  // Carousel: one item container per attachment (no text on items), each processed before the parent.
  const children: string[] = [];
  for (const m of ctx.media) children.push((await post({ ...mediaParams(m), is_carousel_item: true })).id);
  for (const id of children) await waitForContainer(PLATFORM, id, () => containerState(s, id));
  const parent = await post({ media_type: 'CAROUSEL', children: children.join(','), ...common });
  return { id: parent.id, children };
}

interface ThreadsMedia {
  id: string;
  text?: string;
  timestamp?: string;
  permalink?: string;
}

/** The post a PUBLISHED container became: the user's threads since the attempt, matched on text. */
async function findPublished(
  s: Session,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult | null> {
  const since = searchSince(ctx, cp.created_at);
  const items = await listEdge<ThreadsMedia>(s.client, `/${s.userId}/threads`, {
    fields: 'id,text,timestamp,permalink',
    since,
    limit: 50,
  });
  const matches = items
    .filter((m) => sameText(m.text, ctx.text) && !(parseGraphTime(m.timestamp) < since * 1000))
    .sort((a, b) => parseGraphTime(a.timestamp) - parseGraphTime(b.timestamp));
  const hit = matches[0];
  return hit ? found(hit.id, hit.permalink) : null;
}

async function publishContainer(
  s: Session,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const state = await waitForContainer(PLATFORM, cp.container_id, () => containerState(s, cp.container_id));
  if (state === 'PUBLISHED') return resolvePublished(s, ctx, cp);
  const media = await s.client.post<{ id: string }>(`/${s.userId}/threads_publish`, {
    creation_id: cp.container_id,
  });
  const permalink = await bestEffort(() =>
    s.client.get<{ permalink?: string }>(`/${media.id}`, { fields: 'permalink' }),
  );
  return found(media.id, permalink?.permalink);
}

async function resolvePublished(
  s: Session,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const hit = await findPublished(s, ctx, cp);
  if (!hit)
    throw outcomeUnknown(PLATFORM, `container ${cp.container_id} is PUBLISHED but its post was not found`);
  return hit;
}

/** The checkpointed container's status, or null when it no longer exists. */
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
    const s = await open(ctx);
    const cp = readContainerCheckpoint(ctx.checkpoint);
    if (cp) {
      // An earlier attempt made a container: publish it, or find the post it already became.
      const state = await checkpointState(s, cp);
      if (state?.status === 'PUBLISHED') return resolvePublished(s, ctx, cp);
      if (state?.status === 'FINISHED' || state?.status === 'IN_PROGRESS')
        return publishContainer(s, ctx, cp);
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
    // Containers are made before the checkpoint and published only after it: no checkpoint, no post.
    if (!cp) return null;
    const s = await open(ctx);
    const state = await checkpointState(s, cp);
    if (!state) throw outcomeUnknown(PLATFORM, `container ${cp.container_id} can no longer be read`);
    if (state.status !== 'PUBLISHED') return null;
    return resolvePublished(s, ctx, cp);
  },

  async metrics(ctx) {
    const s = await open(ctx);
    const out: Record<string, Engagement> = {};
    for (const id of ctx.externalIds) {
      try {
        const body = await s.client.get<Parameters<typeof insightNumbers>[0]>(`/${id}/insights`, {
          metric: 'views,likes,replies,reposts,quotes',
        });
        const n = insightNumbers(body);
        out[id] = {
          ...noEngagement(),
          impressions: n.views ?? 0,
          likes: n.likes ?? 0,
          comments: n.replies ?? 0,
          shares: (n.reposts ?? 0) + (n.quotes ?? 0),
        };
      } catch (err) {
        if (!skippable(err)) throw err;
      }
    }
    return out;
  },
};
