import { type HttpResponse, platformOrigin, type RequestOptions } from '../http.ts';
import type { OAuthTokens } from '../oauth.ts';

// The YouTube Data API (www.googleapis.com) and the upload sessions it hands out, with the channel's
// Google OAuth token.

const P = 'youtube';

export const api = (path: string) => `${platformOrigin(P, 'https://www.googleapis.com')}${path}`;

/** A request with the bearer token, refreshed and retried once on 401. */
export function authed<T>(tokens: OAuthTokens, url: string, init: RequestOptions): Promise<HttpResponse<T>> {
  return tokens.send<T>(P, url, init);
}
