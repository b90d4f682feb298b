import { parseJson, platformOrigin, request } from '../http.ts';
import { type Credentials, PlatformError } from '../types.ts';
import { graphError } from './errors.ts';

// The Graph API as Threads, Instagram and Facebook Pages speak it: parameters as form fields or query
// strings with `access_token`, errors as in errors.ts.

/** Graph API version used for graph.facebook.com (Instagram with Facebook Login, Facebook Pages). */
export const GRAPH_VERSION = 'v24.0';

export type Params = Record<string, string | number | boolean | null | undefined>;

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

  /** DELETE, the token in the query as for GETs (Meta's documented form for deletes). */
  delete<T>(path: string, params: Params = {}): Promise<T> {
    return this.call<T>('DELETE', path, params);
  }

  private async call<T>(
    method: 'GET' | 'POST' | 'DELETE',
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
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    params: Params,
    timeoutMs?: number,
  ): Promise<T> {
    const form = encode({ ...params, access_token: this.token });
    const url = `${this.opts.base}${path}`;
    const res =
      method !== 'POST'
        ? await request(this.opts.platform, `${url}?${form}`, { method, timeoutMs })
        : await request(this.opts.platform, url, {
            method,
            body: form,
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            timeoutMs,
          });
    if (res.status < 200 || res.status >= 300) throw graphError(this.opts.platform, res);
    const body = typeof res.body === 'string' ? parseJson(res.body) : res.body;
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

/** The Graph client of an Instagram or Facebook Page channel (graph.facebook.com, the channel's token). */
export function pageGraph(platform: 'instagram' | 'facebook', credentials: Credentials) {
  const { token, accountId } = channelAuth(platform, credentials);
  const base = `${platformOrigin(platform, 'https://graph.facebook.com')}/${GRAPH_VERSION}`;
  return { client: new GraphClient({ platform, base, token }), accountId };
}

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
