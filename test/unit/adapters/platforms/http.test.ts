import { describe, expect, it } from 'vitest';
import { expectOk, type HttpResponse, parseJson, request, statusError } from '#adapters/platforms/http';
import { PlatformError } from '#adapters/platforms/types';

// The one HTTP helper every connector goes through: its body handling and the shared status ladder.

const answer = (status: number, headers: Record<string, string> = {}): HttpResponse => ({
  status,
  headers: new Headers(headers),
  body: '',
});

describe('statusError', () => {
  it.each([
    [401, 'auth_expired'],
    [429, 'rate_limited'],
    [503, 'system'],
    [403, 'platform_rejected'],
    [413, 'media_error'],
    [415, 'media_error'],
    [400, 'user_content'],
    [404, 'user_content'],
  ])('%i is %s', (status, category) => {
    expect(statusError(answer(status), 'p: failed').category).toBe(category);
  });

  it('blames the media for a media call, but not for auth, limits, outages or refusals', () => {
    expect(statusError(answer(400), 'p', { media: true }).category).toBe('media_error');
    expect(statusError(answer(401), 'p', { media: true }).category).toBe('auth_expired');
    expect(statusError(answer(403), 'p', { media: true }).category).toBe('platform_rejected');
  });

  it('carries the rate-limit hint it is given, and Retry-After on outages', () => {
    expect(statusError(answer(429), 'p', { retryAfter: 42 }).opts.retryAfterSeconds).toBe(42);
    expect(statusError(answer(503, { 'retry-after': '7' }), 'p').opts.retryAfterSeconds).toBe(7);
  });
});

describe('parseJson', () => {
  it('parses JSON and answers undefined for anything else', () => {
    expect(parseJson('{"a":1}')).toEqual({ a: 1 });
    expect(parseJson('null')).toBeNull();
    expect(parseJson('<html>')).toBeUndefined();
  });
});

describe('request', () => {
  const fakeFetch =
    (seen: RequestInit[], body: string, type = 'application/json'): typeof fetch =>
    async (_url, init) => {
      seen.push(init ?? {});
      return new Response(body, { status: 200, headers: { 'content-type': type } });
    };

  it('sends a json body with its content type and parses a JSON answer (text when it is not JSON)', async () => {
    const seen: RequestInit[] = [];
    const res = await request('p', 'https://p.example/a', {
      method: 'POST',
      json: { a: 1 },
      fetch: fakeFetch(seen, '{"ok":true}'),
    });
    expect(res.body).toEqual({ ok: true });
    expect(seen[0]?.body).toBe('{"a":1}');
    expect(seen[0]?.headers).toMatchObject({ 'content-type': 'application/json' });
    const broken = await request('p', 'https://p.example/a', { fetch: fakeFetch([], '{broken') });
    expect(broken.body).toBe('{broken');
  });

  it('reads every body with the connector parser when it has one', async () => {
    const res = await request('p', 'https://p.example/a', {
      fetch: fakeFetch([], '[1]', 'text/plain'),
      parse: (text) => `parsed ${text}`,
    });
    expect(res.body).toBe('parsed [1]');
  });

  it('a timeout or a dropped connection may have been carried out; a connection never made was not', async () => {
    const failing =
      (err: Error): typeof fetch =>
      async () => {
        throw err;
      };
    const outcome = async (err: Error) => {
      const e = await request('p', 'https://p.example/a', { fetch: failing(err) }).catch((x: unknown) => x);
      if (!(e instanceof PlatformError)) throw new Error('not a PlatformError');
      return { category: e.category, retryable: e.retryable, maybe: e.maybeCarriedOut };
    };
    const timeout = new DOMException('The operation was aborted due to timeout', 'TimeoutError');
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    const refused = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    expect(await outcome(timeout)).toEqual({ category: 'system', retryable: true, maybe: true });
    expect(await outcome(reset)).toEqual({ category: 'system', retryable: true, maybe: true });
    expect(await outcome(refused)).toEqual({ category: 'system', retryable: true, maybe: false });
  });
});

describe('maybeCarriedOut', () => {
  it('a 5xx may have been carried out; a refusal (4xx, 429) was not', () => {
    expect(statusError(answer(504), 'p').maybeCarriedOut).toBe(true);
    expect(statusError(answer(500), 'p').maybeCarriedOut).toBe(true);
    for (const status of [400, 401, 403, 422, 429])
      expect(statusError(answer(status), 'p').maybeCarriedOut).toBe(false);
    expect(new PlatformError('system', 'media still processing').maybeCarriedOut).toBe(false);
  });
});

describe('expectOk', () => {
  it('passes a 2xx answer and names a failure by method and path without the query', () => {
    const ok = answer(204);
    expect(expectOk(ok, 'GET', '/a?b=1', () => new PlatformError('system', 'no'))).toBe(ok);
    expect(() =>
      expectOk(answer(400), 'GET', '/a?b=1', (_res, what) => new PlatformError('user_content', what)),
    ).toThrow(/^GET \/a$/);
  });
});
