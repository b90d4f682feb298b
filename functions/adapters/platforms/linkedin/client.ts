import { expectOk, type HttpResponse, platformOrigin, type StreamBody } from '../http.ts';
import { OAuthTokens } from '../oauth.ts';
import { PlatformError, type TokenSource } from '../types.ts';
import { linkedinError } from './errors.ts';

// LinkedIn's versioned REST API (api.linkedin.com/rest): every call sends `LinkedIn-Version` and
// `X-Restli-Protocol-Version: 2.0.0`. Credentials: access_token (+ refresh_token/expires_at for apps
// LinkedIn granted programmatic refresh), account_id = the author URN (urn:li:person:… or urn:li:organization:…).

export const LINKEDIN_VERSION = '202605';
export const REST_HEADERS = { 'linkedin-version': LINKEDIN_VERSION, 'x-restli-protocol-version': '2.0.0' };

const apiOrigin = () => platformOrigin('linkedin', 'https://api.linkedin.com');

export class Auth extends OAuthTokens {
  constructor(ctx: { tokens: TokenSource }) {
    super(ctx.tokens);
  }

  get author(): string {
    const urn = String(this.credentials.account_id ?? '');
    if (!/^urn:li:(person|organization):/.test(urn)) {
      throw new PlatformError('auth_expired', 'linkedin: channel has no author URN (account_id)', {
        retryable: false,
      });
    }
    return urn;
  }
}

export interface CallInit {
  /** A media call: its refusals are the media's fault. */
  media?: boolean;
  json?: unknown;
  bytes?: Uint8Array;
  /** A streamed upload body. */
  stream?: StreamBody;
  timeoutMs?: number;
  /** Headers besides the REST ones (a DELETE's X-RestLi-Method). */
  headers?: Record<string, string>;
}

/** A call to the REST API (path) or to an upload URL LinkedIn handed out (absolute). */
export function call<T>(
  auth: Auth,
  method: string,
  pathOrUrl: string,
  init: CallInit = {},
): Promise<HttpResponse<T>> {
  const upload = /^https?:\/\//.test(pathOrUrl);
  return auth.send<T>('linkedin', upload ? pathOrUrl : `${apiOrigin()}${pathOrUrl}`, {
    method,
    headers: {
      ...(upload ? {} : REST_HEADERS),
      ...(init.bytes ? { 'content-type': 'application/octet-stream' } : {}),
      ...init.headers,
    },
    json: init.json,
    body: init.bytes,
    ...(init.stream ? { stream: init.stream } : {}),
    timeoutMs: init.timeoutMs,
  });
}

export async function ok<T>(auth: Auth, method: string, path: string, init: CallInit = {}) {
  const res = await call<T>(auth, method, path, init);
  return expectOk(res, method, path, (r, what) => linkedinError(r, what, init.media));
}
