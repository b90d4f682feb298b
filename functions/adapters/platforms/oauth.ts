import { type HttpResponse, type RequestOptions, request } from './http.ts';
import type { Credentials, TokenSource } from './types.ts';

// OAuth 2.0 user tokens as a connector holds them during one publish or metrics call: the current
// access token from the channel's token source, renewed by that source (the worker's, which goes
// through the one OAuth client under the credentials' lease) when it expires or the platform
// refuses it — at most once per call.

export class OAuthTokens {
  private token_: string;

  constructor(private readonly source: TokenSource) {
    this.token_ = String(source.credentials.access_token ?? '');
  }

  /** The channel's tokens, renewed first when they are about to expire. */
  static async open(ctx: { tokens: TokenSource }): Promise<OAuthTokens> {
    const tokens = new OAuthTokens(ctx.tokens);
    await tokens.token();
    return tokens;
  }

  /** The current credentials (after any refresh). */
  get credentials(): Readonly<Credentials> {
    return this.source.credentials;
  }

  get accessToken(): string {
    return this.token_;
  }

  get authorization(): string {
    return `Bearer ${this.token_}`;
  }

  /** A current access token; auth_expired when the channel has none. */
  async token(): Promise<string> {
    this.token_ = await this.source.accessToken();
    return this.token_;
  }

  /** After a 401: renew once; false when that is not possible (again). */
  async refreshAfter401(): Promise<boolean> {
    if (!(await this.source.refreshAfter401())) return false;
    this.token_ = String(this.source.credentials.access_token ?? '');
    return true;
  }

  /** Sends a request (which reads the token itself); after a 401, renews once and sends it again. */
  async retrying401<R extends { status: number }>(send: () => Promise<R>): Promise<R> {
    const res = await send();
    if (res.status === 401 && (await this.refreshAfter401())) return send();
    return res;
  }

  /** A request with the current bearer token; after a 401, renewed once and sent again. */
  send<T>(platform: string, url: string, init: RequestOptions = {}): Promise<HttpResponse<T>> {
    return this.retrying401(async () =>
      request<T>(platform, url, {
        ...init,
        headers: { ...init.headers, authorization: `Bearer ${await this.token()}` },
      }),
    );
  }
}
