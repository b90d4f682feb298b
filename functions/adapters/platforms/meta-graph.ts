import { errorFromStatus, type HttpResponse, request, retryAfterSeconds } from './http.ts';
import { outcomeUnknown, sleep } from './support.ts';
import {
  type Credentials,
  type Engagement,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from './types.ts';

// Shared pieces of the three Meta connectors (Threads, Instagram, Facebook Pages). All three speak the
// Graph API: parameters as form fields or query strings with `access_token`, errors as
// `{"error": {"message", "type", "code", "error_subcode", "is_transient", "fbtrace_id", ...}}`
// (developers.facebook.com/docs/graph-api/guides/error-handling), and Threads/Instagram publish through
// media containers that Meta processes asynchronously (IN_PROGRESS → FINISHED | ERROR | EXPIRED, and
// PUBLISHED once published).

/** Graph API version used for graph.facebook.com (Instagram with Facebook Login, Facebook Pages). */
export const GRAPH_VERSION = 'v24.0';

export type Params = Record<string, string | number | boolean | null | undefined>;

export interface GraphErrorBody {
  message?: string;
  type?: string;
  code?: number;
  error_subcode?: number;
  error_user_title?: string;
  error_user_msg?: string;
  is_transient?: boolean;
  fbtrace_id?: string;
}

// Error codes from the Graph API error-handling guide and the Instagram Platform error-code table.
/** Token missing, expired, revoked or invalidated (102 API session, 104 token required, 190, 2500). */
const AUTH_CODES = new Set([102, 104, 190, 2500]);
/** Throttling: app (4), user (17), page (32), per-call (613), app limit (341), BUC limits (80001–80014). */
const THROTTLE_CODES = new Set([4, 17, 32, 341, 613]);
const isThrottle = (code: number) => THROTTLE_CODES.has(code) || (code >= 80001 && code <= 80014);
/** Instagram: the account reached the 24-hour Content Publishing limit. */
const PUBLISH_LIMIT_SUBCODES = new Set([2207042]);
/** Permission refusals: 3 (capability), 10 (permission denied), 200–299 (permission per object). */
const isPermission = (code: number) => code === 3 || code === 10 || (code >= 200 && code <= 299);
/** Policy: 368 temporarily blocked for policy violations; Instagram spam restriction and restricted account. */
const POLICY_CODES = new Set([368]);
const POLICY_SUBCODES = new Set([2207050, 2207051]);
/** Media the platform could not fetch or does not accept (size, format, aspect ratio, codec). */
const MEDIA_CODES = new Set([324, 352, 9004, 36000, 36001, 36003]);
const MEDIA_SUBCODES = new Set([2207004, 2207005, 2207009, 2207026, 2207052]);
/** Server-side hiccups Meta documents as "try again" (unknown, service, Instagram internal -1/-2). */
const TRANSIENT_CODES = new Set([1, 2, -1, -2]);
const TRANSIENT_SUBCODES = new Set([2207001, 2207003, 2207008, 2207020, 2207027, 2207032, 2207053]);

/** The Graph error object of a response body, if it has one. */
export function graphErrorOf(body: unknown): GraphErrorBody | undefined {
  const parsed = typeof body === 'string' ? tryJson(body) : body;
  if (parsed && typeof parsed === 'object' && 'error' in parsed) {
    const error = (parsed as { error: unknown }).error;
    if (error && typeof error === 'object') return error as GraphErrorBody;
  }
  return undefined;
}

/**
 * Seconds until a throttled app may call again: the Business Use Case header's
 * `estimated_time_to_regain_access` (minutes), else Retry-After.
 */
export function graphRetryAfter(headers: Headers): number | undefined {
  for (const name of ['x-business-use-case-usage', 'x-ad-account-usage', 'x-app-usage']) {
    const raw = headers.get(name);
    const usage = raw ? tryJson(raw) : undefined;
    const minutes = usage ? maxRegainMinutes(usage) : undefined;
    if (minutes !== undefined) return minutes * 60;
  }
  return retryAfterSeconds(headers);
}

function maxRegainMinutes(usage: unknown): number | undefined {
  let best: number | undefined;
  const visit = (v: unknown) => {
    if (Array.isArray(v)) for (const x of v) visit(x);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'estimated_time_to_regain_access' && typeof x === 'number' && x > 0)
          best = Math.max(best ?? 0, x);
        else visit(x);
      }
    }
  };
  visit(usage);
  return best;
}

/** Maps a failed Graph response onto our taxonomy from its error body (code, subcode, is_transient). */
export function graphError(platform: string, res: HttpResponse): PlatformError {
  const e = graphErrorOf(res.body);
  if (!e) {
    const text = typeof res.body === 'string' ? res.body.slice(0, 200) : '';
    return errorFromStatus(platform, res, text || 'no error body');
  }
  const code = typeof e.code === 'number' ? e.code : undefined;
  const sub = typeof e.error_subcode === 'number' ? e.error_subcode : undefined;
  const detail = [
    `(#${code ?? '?'}${sub ? `/${sub}` : ''})`,
    e.message ?? 'error',
    e.error_user_msg && e.error_user_msg !== e.message ? `— ${e.error_user_msg}` : '',
    e.fbtrace_id ? `[fbtrace_id ${e.fbtrace_id}]` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const msg = `${platform}: ${res.status} ${detail}`.slice(0, 500);
  const status = res.status;

  if (code !== undefined && AUTH_CODES.has(code))
    return new PlatformError('auth_expired', msg, { status, retryable: false });
  // Subcodes are more specific than codes: Instagram's spam block arrives as code 4 (a throttling code).
  if (sub !== undefined && POLICY_SUBCODES.has(sub))
    return new PlatformError('platform_rejected', msg, { status, retryable: false });
  if (
    (sub !== undefined && PUBLISH_LIMIT_SUBCODES.has(sub)) ||
    (code !== undefined && isThrottle(code)) ||
    status === 429
  ) {
    return new PlatformError('rate_limited', msg, {
      status,
      retryAfterSeconds: graphRetryAfter(res.headers),
    });
  }
  if (code !== undefined && (POLICY_CODES.has(code) || isPermission(code))) {
    return new PlatformError('platform_rejected', msg, { status, retryable: false });
  }
  if ((code !== undefined && MEDIA_CODES.has(code)) || (sub !== undefined && MEDIA_SUBCODES.has(sub))) {
    return new PlatformError('media_error', msg, { status, retryable: false });
  }
  if (
    e.is_transient === true ||
    status >= 500 ||
    (code !== undefined && TRANSIENT_CODES.has(code)) ||
    (sub !== undefined && TRANSIENT_SUBCODES.has(sub))
  ) {
    return new PlatformError('system', msg, { status, retryAfterSeconds: retryAfterSeconds(res.headers) });
  }
  if (status === 401) return new PlatformError('auth_expired', msg, { status, retryable: false });
  if (status === 403) return new PlatformError('platform_rejected', msg, { status, retryable: false });
  // 100 invalid parameter, 506 duplicate post, 1609005 link could not be scraped, and the rest: the request.
  return new PlatformError('user_content', msg, { status, retryable: false });
}

export interface GraphClientOptions {
  platform: string;
  /** Origin plus version path, e.g. `https://graph.facebook.com/v24.0`. */
  base: string;
  token: string;
  /** Obtains a fresh token (and stores it); null when it cannot. Used at most once per client. */
  refresh?: () => Promise<string | null>;
}

/**
 * A Graph API caller for one channel. GETs carry `access_token` in the query and POSTs in a form
 * body, as Meta documents them. When `refresh` is given, a refused token is refreshed once and the
 * call repeated once (safe even for POSTs: an auth refusal means nothing was done).
 */
export class GraphClient {
  private token: string;
  private refreshUsed = false;

  constructor(private readonly opts: GraphClientOptions) {
    this.token = opts.token;
  }

  get platform(): string {
    return this.opts.platform;
  }

  get<T>(path: string, params: Params = {}): Promise<T> {
    return this.call<T>('GET', path, params);
  }

  post<T>(path: string, params: Params = {}, timeoutMs?: number): Promise<T> {
    return this.call<T>('POST', path, params, timeoutMs);
  }

  private async call<T>(
    method: 'GET' | 'POST',
    path: string,
    params: Params,
    timeoutMs?: number,
  ): Promise<T> {
    try {
      return await this.once<T>(method, path, params, timeoutMs);
    } catch (err) {
      if (
        !(err instanceof PlatformError) ||
        err.category !== 'auth_expired' ||
        !this.opts.refresh ||
        this.refreshUsed
      ) {
        throw err;
      }
      this.refreshUsed = true;
      const fresh = await this.opts.refresh();
      if (!fresh) throw err;
      this.token = fresh;
      return this.once<T>(method, path, params, timeoutMs);
    }
  }

  private async once<T>(
    method: 'GET' | 'POST',
    path: string,
    params: Params,
    timeoutMs?: number,
  ): Promise<T> {
    const form = encode({ ...params, access_token: this.token });
    const url = `${this.opts.base}${path}`;
    const res =
      method === 'GET'
        ? await request(this.opts.platform, `${url}?${form}`, { method, timeoutMs })
        : await request(this.opts.platform, url, {
            method,
            body: form,
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            timeoutMs,
          });
    if (res.status < 200 || res.status >= 300) throw graphError(this.opts.platform, res);
    const body = typeof res.body === 'string' ? tryJson(res.body) : res.body;
    if (body === undefined || body === null || typeof body !== 'object') {
      throw new PlatformError(
        'system',
        `${this.opts.platform}: ${res.status} unreadable response to ${method} ${path}`,
      );
    }
    return body as T;
  }
}

export function encode(params: Params): string {
  const out = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) out.set(k, String(v));
  return out.toString();
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// ---- Credentials -------------------------------------------------------------------------------

export interface ChannelAuth {
  token: string;
  accountId: string;
}

/** The access token and account id every Meta channel carries (core/credentials.ts). */
export function channelAuth(platform: string, credentials: Credentials): ChannelAuth {
  const token = credentials.access_token;
  const accountId = credentials.account_id;
  if (typeof token !== 'string' || !token) {
    throw new PlatformError('auth_expired', `${platform}: the channel has no access_token`, {
      retryable: false,
    });
  }
  if (typeof accountId !== 'string' || !accountId) {
    throw new PlatformError('auth_expired', `${platform}: the channel has no account_id`, {
      retryable: false,
    });
  }
  return { token, accountId };
}

// ---- Containers ------------------------------------------------------------------------------

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
export const containerPolling = { firstDelayMs: 1000, maxDelayMs: 10_000, budgetMs: 60_000 };

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
  const started = Date.now();
  let delay = containerPolling.firstDelayMs;
  for (;;) {
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
    if (Date.now() - started + delay > containerPolling.budgetMs) {
      throw new PlatformError(
        'system',
        `${platform}: container ${id} still processing; resuming on the next attempt`,
        {
          retryAfterSeconds: 60,
        },
      );
    }
    await sleep(delay);
    delay = Math.min(containerPolling.maxDelayMs, delay * 2);
  }
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

// ---- Lookups ---------------------------------------------------------------------------------

interface Page<T> {
  data?: T[];
  paging?: { cursors?: { after?: string }; next?: string };
}

/** Items of a Graph edge (newest first), following `after` cursors for a few pages. */
export async function listEdge<T>(
  client: GraphClient,
  path: string,
  params: Params,
  pages = 4,
): Promise<T[]> {
  const out: T[] = [];
  let after: string | undefined;
  for (let i = 0; i < pages; i++) {
    const page = await client.get<Page<T>>(path, { ...params, after });
    out.push(...(page.data ?? []));
    after = page.paging?.next ? page.paging.cursors?.after : undefined;
    if (!after) break;
  }
  return out;
}

/** Epoch seconds to search from: the earlier of the attempt and the checkpoint, minus clock slack. */
export function searchSince(ctx: Pick<PublishContext, 'attemptStartedAt'>, checkpointAt?: string): number {
  const times = [ctx.attemptStartedAt.getTime()];
  const cp = checkpointAt ? Date.parse(checkpointAt) : Number.NaN;
  if (Number.isFinite(cp) && cp > 0) times.push(cp);
  return Math.floor((Math.min(...times) - 5 * 60_000) / 1000);
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

// ---- Publishing through containers (Threads, Instagram) ------------------------------------------

/** What differs between the platforms that publish through media containers. */
export interface ContainerPlatform {
  platform: string;
  client: GraphClient;
  /** The account whose edges make, publish and list the posts. */
  accountId: string;
  /** The edge that publishes a container (`media_publish`, `threads_publish`). */
  publishEdge: string;
  /** The edge listing the account's posts, and the field that holds their text. */
  postsEdge: string;
  textField: 'caption' | 'text';
  /** What the platform calls a post, for messages. */
  noun: string;
  /** A container's status (and on ERROR, why). */
  state(id: string): Promise<ContainerState>;
  /** Makes the container for the variant (and its carousel items). */
  create(): Promise<{ id: string; children: string[] }>;
}

interface PostItem {
  id: string;
  caption?: string;
  text?: string;
  timestamp?: string;
  permalink?: string;
}

/** The post a PUBLISHED container became: the account's posts since the attempt, matched on text. */
async function findPublished(
  p: ContainerPlatform,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult | null> {
  const since = searchSince(ctx, cp.created_at);
  const items = await listEdge<PostItem>(p.client, `/${p.accountId}/${p.postsEdge}`, {
    fields: `id,${p.textField},timestamp,permalink`,
    since,
    limit: 50,
  });
  const hit = items
    .filter((m) => sameText(m[p.textField], ctx.text) && !(parseGraphTime(m.timestamp) < since * 1000))
    .sort((a, b) => parseGraphTime(a.timestamp) - parseGraphTime(b.timestamp))[0];
  return hit ? found(hit.id, hit.permalink) : null;
}

async function resolvePublished(
  p: ContainerPlatform,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const hit = await findPublished(p, ctx, cp);
  if (!hit)
    throw outcomeUnknown(
      p.platform,
      `container ${cp.container_id} is PUBLISHED but its ${p.noun} was not found`,
    );
  return hit;
}

async function publishContainer(
  p: ContainerPlatform,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult> {
  const state = await waitForContainer(p.platform, cp.container_id, () => p.state(cp.container_id));
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
    return await p.state(cp.container_id);
  } catch (err) {
    if (err instanceof PlatformError && err.category === 'user_content') return null;
    throw err;
  }
}

/** Publish: resume the checkpointed container of an earlier attempt, or make, checkpoint and publish one. */
export async function publishThroughContainer(
  p: ContainerPlatform,
  ctx: PublishContext,
): Promise<PublishResult> {
  const cp = readContainerCheckpoint(ctx.checkpoint);
  if (cp) {
    // An earlier attempt made a container: publish it, or find the post it already became.
    const state = await checkpointState(p, cp);
    if (state?.status === 'PUBLISHED') return resolvePublished(p, ctx, cp);
    if (state?.status === 'FINISHED' || state?.status === 'IN_PROGRESS') return publishContainer(p, ctx, cp);
    // ERROR, EXPIRED or gone: start over with a new container.
  }
  const container = await p.create();
  const next: ContainerCheckpoint = {
    container_id: container.id,
    children: container.children,
    created_at: new Date().toISOString(),
  };
  await ctx.saveCheckpoint({ ...next });
  return publishContainer(p, ctx, next);
}

/**
 * Reconcile from the checkpointed container: containers are made before the checkpoint and published
 * only after it, so without one there is no post.
 */
export async function reconcileContainer(
  p: ContainerPlatform,
  ctx: PublishContext,
  cp: ContainerCheckpoint,
): Promise<PublishResult | null> {
  const state = await checkpointState(p, cp);
  if (!state) throw outcomeUnknown(p.platform, `container ${cp.container_id} can no longer be read`);
  if (state.status !== 'PUBLISHED') return null;
  return resolvePublished(p, ctx, cp);
}

// ---- Insights --------------------------------------------------------------------------------

interface InsightsBody {
  data?: Array<{ name?: string; values?: Array<{ value?: unknown }>; total_value?: { value?: unknown } }>;
}

/** `{"data": [{"name", "values": [{"value"}]}]}` (or `total_value`) as name → number. */
export function insightNumbers(body: InsightsBody): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of body.data ?? []) {
    if (!m.name) continue;
    const v = m.values?.[0]?.value ?? m.total_value?.value;
    out[m.name] = typeof v === 'number' ? v : 0;
  }
  return out;
}

/** Engagement per post from its insights; posts that vanished or cannot be read are left out. */
export async function postInsights(
  client: GraphClient,
  ids: string[],
  metric: string,
  engagement: (n: Record<string, number>) => Partial<Engagement>,
): Promise<Record<string, Engagement>> {
  const out: Record<string, Engagement> = {};
  for (const id of ids) {
    try {
      const body = await client.get<InsightsBody>(`/${id}/insights`, { metric });
      out[id] = { ...noEngagement(), ...engagement(insightNumbers(body)) };
    } catch (err) {
      if (!skippable(err)) throw err;
    }
  }
  return out;
}

export const noEngagement = (): Engagement => ({
  impressions: 0,
  likes: 0,
  comments: 0,
  shares: 0,
  clicks: 0,
});

/** A post that vanished or cannot be read is left out of the metrics; auth, limits and outages are not. */
export function skippable(err: unknown): boolean {
  return (
    err instanceof PlatformError && (err.category === 'user_content' || err.category === 'platform_rejected')
  );
}
