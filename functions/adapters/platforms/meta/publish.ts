import { type Backoff, backoff, outcomeUnknown, pollWithin, searchFrom } from '../support.ts';
import {
  type Connector,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from '../types.ts';
import { type GraphClient, listEdge, type Params } from './client.ts';

// Publishing on the Graph API. Threads and Instagram publish through media containers that Meta
// processes asynchronously (IN_PROGRESS → FINISHED | ERROR | EXPIRED, and PUBLISHED once published):
// one container per post, or item containers under a CAROUSEL one. The container id is the
// checkpoint, which is how a retry knows whether the earlier attempt got through. Facebook Pages
// posts directly and finds an earlier attempt's post by looking (findPost).

// ---- Formats (Instagram, Facebook Pages) ----------------------------------------------------

export type MetaFormat = 'feed' | 'story' | 'reel';

/** The post's `options.format` on Instagram or a Facebook Page: feed unless story or reel. */
export function metaFormat(ctx: Pick<PublishContext, 'options'>): MetaFormat {
  const f = ctx.options.format;
  return f === 'story' || f === 'reel' ? f : 'feed';
}

/** A story or a reel is one item (a reel's a video), a story without text; as createPost checks (core/formats.ts). */
export function singleItem(platform: string, ctx: PublishContext, format: 'story' | 'reel'): MediaInput {
  const refuse = (message: string) =>
    new PlatformError('user_content', `${platform}: ${message}`, { retryable: false });
  const [m, ...rest] = ctx.media;
  if (!m || rest.length) throw refuse(`a ${format} is one ${format === 'reel' ? 'video' : 'image or video'}`);
  if (m.type !== 'image' && m.type !== 'video') throw refuse(`${m.type} attachments are not supported`);
  if (format === 'reel' && m.type !== 'video') throw refuse('a reel is a video');
  if (format === 'story' && ctx.text.trim()) throw refuse('a story takes no text');
  return m;
}

// ---- Finding a post an earlier attempt made ---------------------------------------------------

/** Epoch seconds to search from: the earlier of the attempt and the checkpoint, minus clock slack. */
export function searchSince(ctx: Pick<PublishContext, 'attemptStartedAt'>, checkpointAt?: string): number {
  return Math.floor(searchFrom(ctx, checkpointAt, 5 * 60_000) / 1000);
}

/** Graph timestamps look like `2026-04-15T14:30:00+0000`; make them parseable everywhere. */
export function parseGraphTime(value: unknown): number {
  if (typeof value !== 'string') return Number.NaN;
  return Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
}

/** Text as the platforms hand it back (line endings, surrounding white space). */
export const sameText = (a: unknown, b: string): boolean =>
  (typeof a === 'string' ? a : '').replace(/\r\n/g, '\n').trim() === b.replace(/\r\n/g, '\n').trim();

/** Reads after the irreversible step must not fail the publish: the post exists either way. */
export async function bestEffort<T>(fn: () => Promise<T>): Promise<T | null> {
  try {
    return await fn();
  } catch {
    return null;
  }
}

export function found(externalId: string, url: unknown): PublishResult {
  return { externalId, url: typeof url === 'string' && url ? url : null };
}

/** Where a listed item keeps its text, creation time and link. */
export interface PostFields {
  text: string;
  time: string;
  link: string;
}

/** The oldest item of an edge with this text, made since `since` (epoch seconds). */
export async function findPost<T extends { id: string }>(
  client: GraphClient,
  edge: string,
  fields: PostFields,
  text: string,
  since: number,
  /** A reply's: the field naming the post it answers (`{id}`), and that post's id. */
  parent?: { field: string; id: string },
): Promise<T | undefined> {
  const items = await listEdge<T & Record<string, unknown>>(client, edge, {
    fields: `id,${fields.text},${fields.time},${fields.link}${parent ? `,${parent.field}` : ''}`,
    since,
    limit: 50,
  });
  const answers = (m: Record<string, unknown>) =>
    !parent || (m[parent.field] as { id?: unknown } | undefined)?.id === parent.id;
  return items
    .filter(
      (m) => sameText(m[fields.text], text) && answers(m) && !(parseGraphTime(m[fields.time]) < since * 1000),
    )
    .sort((a, b) => parseGraphTime(a[fields.time]) - parseGraphTime(b[fields.time]))[0];
}

// ---- Containers (Threads, Instagram) ----------------------------------------------------------

export type ContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'ERROR' | 'EXPIRED' | 'PUBLISHED';

export interface ContainerState {
  status: ContainerStatus;
  /** Threads `error_message` / Instagram `status` when the container failed. */
  detail?: string;
}

/**
 * How long a publish attempt waits for Meta to process a container. Meta suggests polling about once
 * a minute for up to five minutes; a Lambda attempt should not block that long, so we back off up to
 * a budget and then hand the container (kept in the checkpoint) to the next attempt.
 */
export const containerPolling: Backoff = { firstDelayMs: 1000, maxDelayMs: 10_000, budgetMs: 60_000 };

export function asContainerStatus(value: unknown): ContainerStatus | undefined {
  return value === 'IN_PROGRESS' ||
    value === 'FINISHED' ||
    value === 'ERROR' ||
    value === 'EXPIRED' ||
    value === 'PUBLISHED'
    ? value
    : undefined;
}

/** Polls until the container can be published (FINISHED) or already was (PUBLISHED). */
export async function waitForContainer(
  platform: string,
  id: string,
  read: () => Promise<ContainerState>,
): Promise<'FINISHED' | 'PUBLISHED'> {
  const done = await pollWithin(backoff(containerPolling), async () => {
    const state = await read();
    if (state.status === 'FINISHED' || state.status === 'PUBLISHED') return state.status;
    if (state.status === 'ERROR') {
      throw new PlatformError(
        'media_error',
        `${platform}: container ${id} failed: ${state.detail ?? 'ERROR'}`,
        {
          retryable: false,
        },
      );
    }
    if (state.status === 'EXPIRED') {
      // Not published within 24 hours; the next attempt makes a new one.
      throw new PlatformError('system', `${platform}: container ${id} expired before publishing`);
    }
    return undefined;
  });
  if (done) return done;
  throw new PlatformError(
    'system',
    `${platform}: container ${id} still processing; resuming on the next attempt`,
    {
      retryAfterSeconds: 60,
    },
  );
}

/** The checkpoint Threads and Instagram keep: the container that will be (or was) published. */
export interface ContainerCheckpoint {
  container_id: string;
  children: string[];
  created_at: string;
}

export function readContainerCheckpoint(cp: Record<string, unknown> | null): ContainerCheckpoint | null {
  if (!cp || typeof cp.container_id !== 'string') return null;
  return {
    container_id: cp.container_id,
    children: Array.isArray(cp.children) ? cp.children.filter((c): c is string => typeof c === 'string') : [],
    created_at: typeof cp.created_at === 'string' ? cp.created_at : new Date(0).toISOString(),
  };
}

/** What differs between the platforms that publish through media containers. */
export interface ContainerPlatform {
  platform: string;
  client: GraphClient;
  /** The account whose edges make, publish and list the posts. */
  accountId: string;
  /** The edges that make a container (`threads`, `media`) and publish one (`threads_publish`, `media_publish`). */
  createEdge: string;
  publishEdge: string;
  /** The edge listing the account's posts, and the field that holds their text. */
  postsEdge: string;
  /** On a reply's listing: the field naming the post it answers (matched against ctx.replyTo.parent). */
  parentField?: string;
  textField: 'caption' | 'text';
  /** The container fields holding its status and, on ERROR, why. */
  statusFields: [status: string, detail: string];
  /** What the platform calls a post, for messages. */
  noun: string;
  /** Parameters every container of the post carries (its text, options). */
  common(ctx: PublishContext): Params;
  /** The container of a post without media (or the refusal of one). */
  textOnly(ctx: PublishContext): Params;
  /** The parameters of one attachment, alone or as a carousel item. */
  item(m: MediaInput, carousel: boolean): Params;
  /**
   * The post a PUBLISHED container became, where it is not found by its text on `postsEdge`
   * (an Instagram story has no caption and is listed on its own edge).
   */
  findPublished?(ctx: PublishContext, cp: ContainerCheckpoint, since: number): Promise<PublishResult>;
}

/** A container's status (and on ERROR, why). */
async function containerState(p: ContainerPlatform, id: string): Promise<ContainerState> {
  const [statusField, detailField] = p.statusFields;
  const body = await p.client.get<Record<string, unknown>>(`/${id}`, {
    fields: `${statusField},${detailField}`,
  });
  const status = asContainerStatus(body[statusField]);
  if (!status)
    throw new PlatformError(
      'system',
      `${p.platform}: container ${id} has unknown status ${String(body[statusField])}`,
    );
  const detail = body[detailField];
  return { status, detail: typeof detail === 'string' ? detail : undefined };
}

/** Makes the post's container: text only, one attachment, or a carousel over finished item containers. */
async function createContainer(
  p: ContainerPlatform,
  ctx: PublishContext,
): Promise<{ id: string; children: string[] }> {
  const post = (params: Params) => p.client.post<{ id: string }>(`/${p.accountId}/${p.createEdge}`, params);
  const common = p.common(ctx);
  const first = ctx.media[0];
  if (!first) return { id: (await post(p.textOnly(ctx))).id, children: [] };
  if (ctx.media.length === 1)
    return { id: (await post({ ...p.item(first, false), ...common })).id, children: [] };
  // Carousel items carry no text; the carousel container may only reference finished items.
  const children: string[] = [];
  for (const m of ctx.media) children.push((await post(p.item(m, true))).id);
  for (const id of children) await waitForContainer(p.platform, id, () => containerState(p, id));
  const parent = await post({ media_type: 'CAROUSEL', children: children.join(','), ...common });
  return { id: parent.id, children };
}

/** The post a PUBLISHED container became: the account's posts since the attempt, matched on text. */
async function resolvePublished(
  p: ContainerPlatform,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const fields = { text: p.textField, time: 'timestamp', link: 'permalink' };
  const since = searchSince(ctx, cp.created_at);
  if (p.findPublished) return p.findPublished(ctx, cp, since);
  const hit = await findPost<{ id: string; permalink?: string }>(
    p.client,
    `/${p.accountId}/${p.postsEdge}`,
    fields,
    ctx.text,
    since,
    p.parentField && ctx.replyTo ? { field: p.parentField, id: ctx.replyTo.parent.externalId } : undefined,
  );
  if (!hit)
    throw outcomeUnknown(
      p.platform,
      `container ${cp.container_id} is PUBLISHED but its ${p.noun} was not found`,
    );
  return found(hit.id, hit.permalink);
}

async function publishContainer(
  p: ContainerPlatform,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const state = await waitForContainer(p.platform, cp.container_id, () => containerState(p, cp.container_id));
  if (state === 'PUBLISHED') return resolvePublished(p, ctx, cp);
  const media = await p.client.post<{ id: string }>(`/${p.accountId}/${p.publishEdge}`, {
    creation_id: cp.container_id,
  });
  const permalink = await bestEffort(() =>
    p.client.get<{ permalink?: string }>(`/${media.id}`, { fields: 'permalink' }),
  );
  return found(media.id, permalink?.permalink);
}

/** The checkpointed container's status, or null when it no longer exists. */
async function checkpointState(
  p: ContainerPlatform,
  cp: ContainerCheckpoint,
): Promise<ContainerState | null> {
  try {
    return await containerState(p, cp.container_id);
  } catch (err) {
    if (err instanceof PlatformError && err.category === 'user_content') return null;
    throw err;
  }
}

/** Publish: resume the checkpointed container of an earlier attempt, or make, checkpoint and publish one. */
async function publishThroughContainer(p: ContainerPlatform, ctx: PublishContext): Promise<PublishResult> {
  const cp = readContainerCheckpoint(ctx.checkpoint);
  if (cp) {
    // An earlier attempt made a container: publish it, or find the post it already became.
    const state = await checkpointState(p, cp);
    if (state?.status === 'PUBLISHED') return resolvePublished(p, ctx, cp);
    if (state?.status === 'FINISHED' || state?.status === 'IN_PROGRESS') return publishContainer(p, ctx, cp);
    // ERROR, EXPIRED or gone: start over with a new container.
  }
  const container = await createContainer(p, ctx);
  const next: ContainerCheckpoint = {
    container_id: container.id,
    children: container.children,
    created_at: new Date().toISOString(),
  };
  await ctx.saveCheckpoint({ ...next });
  return publishContainer(p, ctx, next);
}

/**
 * Publish and reconcile through containers. Reconcile starts from the checkpointed container:
 * containers are made before the checkpoint and published only after it, so without one there is no
 * post (and the channel is not even opened).
 */
export function containerPublishing(
  open: (ctx: PublishContext) => ContainerPlatform | Promise<ContainerPlatform>,
): Pick<Connector, 'publish' | 'reconcile'> {
  return {
    async publish(ctx) {
      return publishThroughContainer(await open(ctx), ctx);
    },
    async reconcile(ctx) {
      const cp = readContainerCheckpoint(ctx.checkpoint);
      if (!cp) return null;
      const p = await open(ctx);
      const state = await checkpointState(p, cp);
      if (!state) throw outcomeUnknown(p.platform, `container ${cp.container_id} can no longer be read`);
      if (state.status !== 'PUBLISHED') return null;
      return resolvePublished(p, ctx, cp);
    },
  };
}
