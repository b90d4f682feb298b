import { platformOrigin } from './http.ts';
import {
  asContainerStatus,
  type ContainerPlatform,
  type ContainerState,
  channelAuth,
  GraphClient,
  type Params,
  postInsights,
  publishThroughContainer,
  readContainerCheckpoint,
  reconcileContainer,
  waitForContainer,
} from './meta-graph.ts';
import {
  type Connector,
  type Credentials,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type TokenSource,
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
interface Session {
  client: GraphClient;
  userId: string;
}

type AuthContext = { credentials: Credentials; tokens: TokenSource };

/** The Graph client for the channel; a refused token is renewed once by the channel's token source. */
async function open(ctx: AuthContext): Promise<Session> {
  const { accountId } = channelAuth(PLATFORM, ctx.credentials);
  const origin = platformOrigin(PLATFORM, REAL_ORIGIN);
  const token = await ctx.tokens.accessToken();
  const refresh = async (): Promise<string | null> =>
    (await ctx.tokens.refreshAfter401()) ? String(ctx.tokens.credentials.access_token ?? '') : null;
  const client = new GraphClient({ platform: PLATFORM, base: `${origin}/${VERSION}`, token, refresh });
  return { client, userId: accountId };
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

/** The Graph calls that differ for Threads; the container flow itself is meta-graph's. */
function containers(s: Session, ctx: PublishContext): ContainerPlatform {
  return {
    platform: PLATFORM,
    client: s.client,
    accountId: s.userId,
    publishEdge: 'threads_publish',
    postsEdge: 'threads',
    textField: 'text',
    noun: 'post',
    state: (id) => containerState(s, id),
    create: () => createContainer(s, ctx),
  };
}

export const connector: Connector = {
  async publish(ctx) {
    return publishThroughContainer(containers(await open(ctx), ctx), ctx);
  },

  async reconcile(ctx) {
    const cp = readContainerCheckpoint(ctx.checkpoint);
    if (!cp) return null;
    return reconcileContainer(containers(await open(ctx), ctx), ctx, cp);
  },

  async metrics(ctx) {
    const s = await open(ctx);
    return postInsights(s.client, ctx.externalIds, 'views,likes,replies,reposts,quotes', (n) => ({
      impressions: n.views ?? 0,
      likes: n.likes ?? 0,
      comments: n.replies ?? 0,
      shares: (n.reposts ?? 0) + (n.quotes ?? 0),
    }));
  },
};
