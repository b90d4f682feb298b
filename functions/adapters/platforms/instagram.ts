import { platformOrigin } from './http.ts';
import {
  asContainerStatus,
  type ContainerPlatform,
  type ContainerState,
  channelAuth,
  GRAPH_VERSION,
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

/** The Graph calls that differ for Instagram; the container flow itself is meta-graph's. */
function containers(s: Session, ctx: PublishContext): ContainerPlatform {
  return {
    platform: PLATFORM,
    client: s.client,
    accountId: s.igUserId,
    publishEdge: 'media_publish',
    postsEdge: 'media',
    textField: 'caption',
    noun: 'media',
    state: (id) => containerState(s, id),
    create: () => createContainer(s, ctx),
  };
}

export const connector: Connector = {
  async publish(ctx) {
    return publishThroughContainer(containers(open(ctx.credentials), ctx), ctx);
  },

  async reconcile(ctx) {
    const cp = readContainerCheckpoint(ctx.checkpoint);
    if (!cp) return null;
    return reconcileContainer(containers(open(ctx.credentials), ctx), ctx, cp);
  },

  async metrics(ctx) {
    // `impressions` is deprecated for media since v22.0; `views` replaces it.
    return postInsights(
      open(ctx.credentials).client,
      ctx.externalIds,
      'views,likes,comments,shares',
      (n) => ({
        impressions: n.views ?? 0,
        likes: n.likes ?? 0,
        comments: n.comments ?? 0,
        shares: n.shares ?? 0,
      }),
    );
  },
};
