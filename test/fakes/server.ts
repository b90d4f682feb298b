import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { asFailure, documentedError } from './documented-errors.ts';
import type { OAuthControl } from './oauth.ts';

// One loopback HTTP server hosting the contract fakes of the platforms, each under its own path
// prefix (`/x`, `/bluesky`, …). A fake implements the documented request and response shapes and
// error bodies of its platform's API, keeps state (posts, uploads, containers), records every
// request, and can be told to fail the next calls. Used by connector tests and the e2e tests
// (HERALD_PLATFORM_<NAME>_URL=<url>/<name>; Bluesky/Mastodon take the origin from the channel).
// With that override every host of a platform (web host of the consent page, API host, OAuth token host)
// is the one base, so a fake serves all of its platform's paths under its prefix.
//
// Control API (for tests in other processes):
//   GET  /__fakes/<platform>/state    posts, uploads, requests, and `oauth` (authorization server counters)
//   POST /__fakes/<platform>/fail     {status, body?, headers?, times?, pathPattern?, bodyIncludes?, queryIncludes?, headerIncludes?, delayMs?, holdAnswerMs?}
//                                     or {documented: "<kind>", times?}: the platform's documented answer of
//                                     that kind (tokenInvalidClient, tokenInvalidGrant, revokedToken,
//                                     expiredToken, throttled, or a variant name) from documented-errors.ts,
//                                     on the endpoints it applies to; given fields override it. 404 if unknown.
//   POST /__fakes/<platform>/revoke   {"access_token": "…"} or {"user": "<fake_user name>"}: the user revoked
//                                     the app; every token of that grant (or user) stops working at once.
//                                     200 {"revoked": <grants>}; 404 when no grant matches.
//   POST /__fakes/<platform>/inbox    an InboxSeed: someone comments on, mentions or messages the account.
//                                     The fake keeps it where its documented read endpoints serve it and
//                                     answers 201 {"platform_id": "…"}; 404 when the fake has no inbox.
//   POST /__fakes/<platform>/config   {setting: value, …}: the fake's own settings (TikTok: `audited`);
//                                     200 with the settings as they are now; 404 when it has none, 400 bad value.
//   POST /__fakes/reset               resets every fake

export interface FakeRequest {
  method: string;
  /** Path below the fake's prefix, e.g. `/2/tweets`. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string>;
  body: Buffer;
  /** Parsed JSON body when the request sent JSON. */
  json: unknown;
  /** When the fake received it (ms since epoch). */
  at: number;
}

export interface FakeResponse {
  status: number;
  headers?: Record<string, string>;
  /** Objects are sent as JSON. */
  body?: unknown;
}

export interface FakePlatform {
  readonly name: string;
  /** null: this fake serves no such route (the server answers one uniform 404 for every fake). */
  handle(req: FakeRequest, fake: FakeContext): FakeResponse | null | Promise<FakeResponse | null>;
  reset(): void;
  /** The fake's authorization server (consent, tokens, revocation), when it has one. */
  readonly oauth?: OAuthControl;
  /** Seeds an inbox item where the fake's read endpoints serve it; its platform id. */
  inbox?(seed: InboxSeed, fake: FakeContext): { platform_id: string };
  /** What else the fake holds, for GET /__fakes/<platform>/state (beside posts, uploads, comments). */
  state?(): Record<string, unknown>;
  /** Changes the fake's own settings (reset restores them); what they are now. Throws on a bad value. */
  configure?(settings: Record<string, unknown>): Record<string, unknown>;
}

/**
 * Something that comes back to an account (the inbox): a comment on one of its posts (`parent`: the
 * platform id of the post or comment it answers), a mention, or a direct message. The author is
 * someone else (default: a fixed other account of the fake); `created_at` defaults to now.
 */
export interface InboxSeed {
  kind: 'comment' | 'mention' | 'message';
  text: string;
  /** The account the item reaches (a fake user's id or handle, as the fake names its accounts). */
  to?: string;
  parent?: string;
  author?: { handle?: string; name?: string; id?: string };
  created_at?: string;
  /** A message: its conversation (default: one per author). */
  conversation?: string;
}

export interface FakeContext {
  /** This fake's public origin including its prefix, for URLs it hands out (upload URLs, permalinks). */
  base: string;
}

export interface InjectedFailure {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Only requests whose path matches (default: any). */
  path?: RegExp;
  /**
   * Only requests whose body contains this text (default: any): a test's own marker, so that
   * tests running at the same time never meet each other's failures.
   */
  bodyIncludes?: string;
  /** Only requests whose query string contains this text (default: any): a page past the first. */
  queryIncludes?: string;
  /** Only requests with a header value containing this text (default: any): a transfer by `file_url`. */
  headerIncludes?: string;
  /** How many requests to fail (default 1). */
  times?: number;
  /** Delay before answering, to provoke client timeouts. */
  delayMs?: number;
  /**
   * The request is handled as usual (a post is created) and its answer held back this long: the
   * platform did the work and the caller never heard (a crash or timeout in flight). `status` is
   * then ignored.
   */
  holdAnswerMs?: number;
}

export class FakePlatforms {
  private server: Server | undefined;
  private readonly fakes = new Map<string, FakePlatform>();
  private readonly log = new Map<string, FakeRequest[]>();
  private readonly failures = new Map<string, InjectedFailure[]>();
  origin = '';

  /**
   * `keepBodies: false` logs requests without their bodies (the media bench sends a gigabyte through
   * one server; its fakes count and hash what they receive instead).
   */
  constructor(
    fakes: FakePlatform[],
    private readonly opts: { keepBodies?: boolean } = {},
  ) {
    for (const f of fakes) this.fakes.set(f.name, f);
  }

  async start(port = 0): Promise<this> {
    this.server = createServer((req, res) => void this.dispatch(req, res));
    await new Promise<void>((ok) => this.server?.listen(port, '127.0.0.1', () => ok()));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((ok) => {
      this.server?.close(() => ok());
      this.server?.closeAllConnections();
    });
  }

  /** Base URL of one platform's fake. */
  url(platform: string): string {
    return `${this.origin}/${platform}`;
  }

  /** `HERALD_PLATFORM_<NAME>_URL` for every fake. */
  env(): Record<string, string> {
    return Object.fromEntries(
      [...this.fakes.keys()].map((name) => [`HERALD_PLATFORM_${name.toUpperCase()}_URL`, this.url(name)]),
    );
  }

  requests(platform: string): FakeRequest[] {
    return this.log.get(platform) ?? [];
  }

  fake<T extends FakePlatform>(platform: string): T {
    const f = this.fakes.get(platform);
    if (!f) throw new Error(`no fake for ${platform}`);
    return f as T;
  }

  failNext(platform: string, failure: InjectedFailure): void {
    this.failures.set(platform, [...(this.failures.get(platform) ?? []), { times: 1, ...failure }]);
  }

  /** Fails the next matching calls with the platform's documented answer of this kind (documented-errors.ts). */
  failDocumented(platform: string, kind: string, times = 1): void {
    const e = documentedError(platform, kind);
    if (!e) throw new Error(`no documented ${kind} answer for ${platform}`);
    this.failNext(platform, asFailure(e, times));
  }

  reset(): void {
    for (const f of this.fakes.values()) f.reset();
    this.log.clear();
    this.failures.clear();
  }

  /**
   * What a fake holds, for tests in other processes: its `posts` (and `uploads`, and the `comments`
   * made under posts) when it keeps them, and
   * its authorization server's counters (`oauth`: authorizations, denied, codesExchanged, refreshes,
   * revocations, revoked grants) when it has one.
   */
  snapshot(platform: string): unknown {
    const f = this.fakes.get(platform) as
      | (FakePlatform & { posts?: unknown; uploads?: unknown; comments?: unknown })
      | undefined;
    const plain = (v: unknown) =>
      JSON.parse(
        JSON.stringify(v ?? null, (_k, x) =>
          x instanceof Uint8Array || Buffer.isBuffer(x) ? Buffer.from(x).toString('base64') : x,
        ),
      );
    return {
      posts: plain(f?.posts),
      uploads: plain(f?.uploads),
      comments: plain(f?.comments),
      oauth: f?.oauth ? plain(f.oauth.stats()) : null,
      ...(f?.state ? plain(f.state()) : {}),
      requests: this.requests(platform).map((r) => ({
        method: r.method,
        path: r.path,
        query: r.query.toString(),
        headers: r.headers,
        json: r.json,
        at: r.at,
      })),
    };
  }

  /** The control API under `/__fakes`: state, failure injection and reset over HTTP. */
  private async control(
    method: string,
    parts: string[],
    body: Buffer,
  ): Promise<{ status: number; body: unknown }> {
    const [platform, action] = parts;
    if (method === 'POST' && platform === 'reset') {
      this.reset();
      return { status: 204, body: null };
    }
    if (!platform || !this.fakes.has(platform)) return { status: 404, body: { error: 'no such fake' } };
    if (method === 'GET' && action === 'state') return { status: 200, body: this.snapshot(platform) };
    if (method === 'POST' && action === 'revoke') {
      const oauth = this.fakes.get(platform)?.oauth;
      if (!oauth) return { status: 404, body: { error: `the ${platform} fake has no authorization server` } };
      let by: { access_token?: unknown; user?: unknown };
      try {
        by = JSON.parse(body.toString('utf8') || '{}') as typeof by;
      } catch {
        return { status: 400, body: { error: 'body must be JSON' } };
      }
      const n = oauth.revoke({
        ...(typeof by.access_token === 'string' ? { access_token: by.access_token } : {}),
        ...(typeof by.user === 'string' ? { user: by.user } : {}),
      });
      return n === null
        ? { status: 404, body: { error: 'no grant of that access_token or user' } }
        : { status: 200, body: { revoked: n } };
    }
    if (method === 'POST' && action === 'inbox') {
      const fake = this.fakes.get(platform);
      if (!fake?.inbox) return { status: 404, body: { error: `the ${platform} fake has no inbox` } };
      let seed: InboxSeed;
      try {
        seed = JSON.parse(body.toString('utf8') || '{}') as InboxSeed;
      } catch {
        return { status: 400, body: { error: 'body must be JSON' } };
      }
      try {
        return { status: 201, body: fake.inbox(seed, { base: this.url(platform) }) };
      } catch (err) {
        // A seed the fake cannot place (a kind its platform has no API for, an unknown parent).
        return { status: 400, body: { error: (err as Error).message } };
      }
    }
    if (method === 'POST' && action === 'config') {
      const fake = this.fakes.get(platform);
      if (!fake?.configure) return { status: 404, body: { error: `the ${platform} fake has no settings` } };
      try {
        return { status: 200, body: fake.configure(JSON.parse(body.toString('utf8') || '{}')) };
      } catch (err) {
        return { status: 400, body: { error: (err as Error).message } };
      }
    }
    if (method === 'POST' && action === 'fail') {
      const { documented, pathPattern, ...f } = JSON.parse(body.toString('utf8')) as InjectedFailure & {
        pathPattern?: string;
        documented?: string;
      };
      const base = documented ? documentedError(platform, documented) : undefined;
      if (documented && !base)
        return { status: 404, body: { error: `no documented ${documented} answer for ${platform}` } };
      this.failNext(platform, {
        ...(base ? asFailure(base) : {}),
        ...f,
        ...(pathPattern ? { path: new RegExp(pathPattern) } : {}),
      } as InjectedFailure);
      return { status: 204, body: null };
    }
    return { status: 404, body: { error: 'unknown control call' } };
  }

  private async dispatch(req: IncomingMessage, res: import('node:http').ServerResponse) {
    const url = new URL(req.url ?? '/', this.origin);
    const [, name, ...rest] = url.pathname.split('/');
    if (name === '__fakes') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const out = await this.control(req.method ?? 'GET', rest, Buffer.concat(chunks));
      res.writeHead(out.status, { 'content-type': 'application/json' });
      res.end(out.body === null ? '' : JSON.stringify(out.body));
      return;
    }
    const fake = name ? this.fakes.get(name) : undefined;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(',') : v;
    let parsed: unknown;
    if ((headers['content-type'] ?? '').includes('json') && body.length) {
      try {
        parsed = JSON.parse(body.toString('utf8'));
      } catch {
        parsed = undefined;
      }
    }
    const fr: FakeRequest = {
      method: req.method ?? 'GET',
      path: `/${rest.join('/')}`,
      query: url.searchParams,
      headers,
      body,
      json: parsed,
      at: Date.now(),
    };
    let out: FakeResponse;
    if (!fake || !name) {
      out = { status: 404, body: { error: 'no such fake' } };
    } else {
      const logged = this.opts.keepBodies === false ? { ...fr, body: Buffer.alloc(0), json: undefined } : fr;
      this.log.set(name, [...(this.log.get(name) ?? []), logged]);
      const queue = this.failures.get(name) ?? [];
      const failure = queue.find(
        (f) =>
          (!f.path || f.path.test(fr.path)) &&
          (f.bodyIncludes === undefined || fr.body.toString('utf8').includes(f.bodyIncludes)) &&
          (f.queryIncludes === undefined || decodeURIComponent(url.search).includes(f.queryIncludes)) &&
          (f.headerIncludes === undefined ||
            Object.values(fr.headers).some((v) => v.includes(f.headerIncludes as string))),
      );
      if (failure) {
        failure.times = (failure.times ?? 1) - 1;
        if (failure.times <= 0)
          this.failures.set(
            name,
            queue.filter((f) => f !== failure),
          );
        if (failure.holdAnswerMs !== undefined) {
          out = (await fake.handle(fr, { base: this.url(name) })) ?? {
            status: 404,
            body: { error: 'no_route' },
          };
          // Held until the time is up or the caller is gone (no timer outlives the connection).
          await new Promise<void>((r) => {
            const timer = setTimeout(r, failure.holdAnswerMs);
            res.once('close', () => {
              clearTimeout(timer);
              r();
            });
          });
        } else {
          if (failure.delayMs) await new Promise((r) => setTimeout(r, failure.delayMs));
          out = { status: failure.status, body: failure.body, headers: failure.headers };
        }
      } else {
        try {
          out = (await fake.handle(fr, { base: this.url(name) })) ?? {
            status: 404,
            body: { error: 'no_route', message: `The ${name} fake serves no ${fr.method} ${fr.path}.` },
          };
        } catch (err) {
          out = { status: 500, body: { error: (err as Error).message } };
        }
      }
    }
    const isBuffer = Buffer.isBuffer(out.body);
    const payload =
      out.body === undefined
        ? ''
        : isBuffer || typeof out.body === 'string'
          ? out.body
          : JSON.stringify(out.body);
    const type =
      out.body !== undefined && !isBuffer && typeof out.body !== 'string'
        ? { 'content-type': 'application/json' }
        : {};
    res.writeHead(out.status, { ...type, ...out.headers });
    res.end(payload);
  }
}

/** Reads a bearer token, or undefined. */
export function bearer(req: FakeRequest): string | undefined {
  return /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1];
}
