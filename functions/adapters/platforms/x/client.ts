import { expectOk, type HttpResponse, platformOrigin } from '../http.ts';
import { OAuthTokens } from '../oauth.ts';
import type { TokenSource } from '../types.ts';
import { xError } from './errors.ts';

// X API v2 (api.x.com) with the channel's OAuth 2.0 user token (account_id = the user id).

const origin = () => platformOrigin('x', 'https://api.x.com');

export interface Tweet {
  id: string;
  text: string;
  created_at?: string;
  /** With post.fields=referenced_tweets: a reply names the tweet it answers (`replied_to`). */
  referenced_tweets?: Array<{ type: string; id: string }>;
  public_metrics?: {
    retweet_count?: number;
    reply_count?: number;
    like_count?: number;
    quote_count?: number;
    impression_count?: number;
  };
}

export class Auth extends OAuthTokens {
  constructor(ctx: { tokens: TokenSource }) {
    super(ctx.tokens);
  }

  get userId(): string {
    return String(this.credentials.account_id ?? '');
  }
}

export interface CallInit {
  /** A media call: its refusals are the media's fault. */
  media?: boolean;
  json?: unknown;
  form?: FormData;
  timeoutMs?: number;
}

export function call<T>(
  auth: Auth,
  method: string,
  path: string,
  init: CallInit = {},
): Promise<HttpResponse<T>> {
  return auth.send<T>('x', `${origin()}${path}`, {
    method,
    json: init.json,
    body: init.form,
    timeoutMs: init.timeoutMs,
  });
}

/** The body of a 2xx answer; anything else as our error (`media`: a media call's refusal is the media's). */
export async function ok<T>(auth: Auth, method: string, path: string, init: CallInit = {}): Promise<T> {
  const res = await call<T>(auth, method, path, init);
  return expectOk(res, method, path, (r, what) => xError(r, what, init.media)).body;
}
