import { expectOk, request, type StreamBody } from '../http.ts';
import { type Credentials, PlatformError } from '../types.ts';
import { userOriginFetch } from '../user-origin.ts';
import { mastodonError } from './errors.ts';

// Mastodon's REST API on the channel's own instance (credentials `instance` + `access_token`). The
// instance is the user's choice, so every call goes through the address-checked fetch.

export interface Status {
  id: string;
  url: string | null;
  uri: string;
  created_at: string;
  content: string;
  spoiler_text?: string;
  in_reply_to_id?: string | null;
  favourites_count?: number;
  reblogs_count?: number;
  replies_count?: number;
}

function originOf(creds: Credentials): string {
  const instance = String(creds.instance ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\//.test(instance))
    throw new PlatformError('auth_expired', 'mastodon: channel has no instance origin', { retryable: false });
  return instance;
}

function tokenOf(creds: Credentials): string {
  const token = String(creds.access_token ?? '');
  if (!token)
    throw new PlatformError('auth_expired', 'mastodon: channel has no access_token', { retryable: false });
  return token;
}

export class Api {
  constructor(
    private readonly origin: string,
    private readonly token: string,
  ) {}

  static of(creds: Credentials) {
    return new Api(originOf(creds), tokenOf(creds));
  }

  call<T>(
    method: string,
    path: string,
    init: {
      json?: unknown;
      form?: FormData;
      stream?: StreamBody;
      headers?: Record<string, string>;
      timeoutMs?: number;
    } = {},
  ) {
    return request<T>('mastodon', `${this.origin}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...init.headers },
      json: init.json,
      body: init.form, // fetch sets multipart/form-data with its boundary
      ...(init.stream ? { stream: init.stream } : {}),
      timeoutMs: init.timeoutMs,
      fetch: userOriginFetch(),
    });
  }

  async ok<T>(method: string, path: string, init: Parameters<Api['call']>[2] = {}): Promise<T> {
    return expectOk(await this.call<T>(method, path, init), method, path, mastodonError).body;
  }
}
