import {
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import { mockClient } from 'aws-sdk-client-mock';
import { parseItem } from 'structured-headers';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clearGateGuesses } from '#adapters/usage';
import type { Org } from '#core/accounts';
import { handler as createPost } from '#handlers/create-post';
import { handler as getPost } from '#handlers/get-post';
import { handler as publishPost } from '#handlers/publish-post';
import { findOperation } from '#lib/operations';
import { problemJson, requestIdHeader } from '#shared/envelope';
import { apiKeyAuth, authorize, type HttpEvent, type HttpResult, rateLimit } from '#shared/http';
import { clearAuthCache } from '#usecases/support/authenticate';
import { requestGate } from '#usecases/support/request-gate';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  type CounterStart,
  channel,
  channelItem,
  fixedId,
  type Item,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  problemOf,
  serveCounters,
  serveItems,
} from '../support/fixtures.ts';

// The burst limit and the api_requests meter in the request pipeline (shared/http.ts rateLimit):
// headers on every API-key response, the order of checks (docs/api/limits.md), and that a refused
// request changes nothing.

const ddb = mockClient(DynamoDBDocumentClient);

/** 42.5 s into a minute, 11 h 59 min 17.5 s before the end of June 2030 (UTC). */
const NOW = '2030-06-30T12:00:42.500Z';
const TO_MINUTE_END = 18;
const TO_MONTH_END = 43_158;
const TEAM = { burst: 120, api_requests: 50_000 };

const READER = apiKey({ scopes: ['posts:read'], n: 1 });
const WRITER = apiKey({ scopes: ['posts:read', 'posts:write'], n: 2 });
const CHANNELS_ONLY = apiKey({ scopes: ['channels:read'], n: 3 });
const POST = post();
const CH1 = channel(1);

const USAGE = `ORG#${ORG_ID} USAGE#2030-06`;
const WINDOW_ID = Math.floor(Date.parse(NOW) / 60_000);
/** The key's entry in the gate item: its burst window, or its revocation. */
const windowOf = (k: typeof READER) =>
  (counters.get(USAGE) as Record<string, unknown> | undefined)?.[k.record.id];

let counters: Map<string, Item>;

/** The table holds `orgRecord`, the keys, CH1 and POST; the counters start at `start`. */
function given(start: CounterStart = {}, orgRecord: Org = org()) {
  serveItems(ddb, [
    ...[READER, WRITER, CHANNELS_ONLY].map(apiKeyItem),
    orgItem(orgRecord),
    channelItem(CH1),
    postItem(POST),
  ]);
  counters = serveCounters(ddb, start);
}

const get = (key = READER, id = POST.id) =>
  getPost(apiEvent('getPost', { headers: bearer(key), pathParameters: { id } }), lambdaContext('getPost'));
const create = (body: string, key = WRITER) =>
  createPost(
    apiEvent('createPost', { body, headers: { ...bearer(key), 'content-type': 'application/json' } }),
    lambdaContext('createPost'),
  );
const SCHEDULED = JSON.stringify({
  variants: [{ channel_id: CH1.id, body: 'Hello' }],
  scheduled_at: '2030-07-02T00:00:00.000Z',
});

/** The parameters of an RFC 9651 Item header. */
const params = (header: string | undefined) => Object.fromEntries(parseItem(header ?? '')[1]);

/** Asserts the burst headers: the plan's limit, `remaining`, and the seconds to the minute's end. */
function expectRateLimitHeaders(headers: Record<string, string> | undefined, remaining: number) {
  expect(parseItem(headers?.['ratelimit-policy'] ?? '')[0]).toBe('per-key-minute');
  expect(params(headers?.['ratelimit-policy'])).toEqual({ q: TEAM.burst, w: 60 });
  expect(params(headers?.ratelimit)).toEqual({ r: remaining, t: TO_MINUTE_END });
  expect(headers).toMatchObject({
    'x-ratelimit-limit': String(TEAM.burst),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(TO_MINUTE_END),
  });
}

const writes = () => ddb.commandCalls(PutCommand).length + ddb.commandCalls(TransactWriteCommand).length;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date(NOW));
  ddb.reset();
  clearAuthCache();
  clearGateGuesses();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('rate-limit headers on every API-key response', () => {
  it.each([
    ['200', () => get(), 200],
    ['404 resource_not_found', () => get(READER, fixedId('post', 404)), 404],
    ['400 invalid_request', () => create('{'), 400],
    ['400 validation_failed', () => create('{"variants":[],"draft":true,"colour":"red"}'), 400],
    ['403 insufficient_scope', () => get(CHANNELS_ONLY), 403],
  ])('on a %s', async (_what, send, status) => {
    // Arrange: 10 requests already in this minute.
    given({ burst: 10 });

    // Act
    const res = await send();

    // Assert
    expect(res.statusCode).toBe(status);
    expectRateLimitHeaders(res.headers, TEAM.burst - 11);
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('on a 429 rate_limited, with r = 0 and Retry-After to the end of the minute', async () => {
    // Arrange: the window is full.
    given({ burst: TEAM.burst });

    // Act
    const res = await get();

    // Assert
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('rate_limited');
    expectRateLimitHeaders(res.headers, 0);
    expect(res.headers['retry-after']).toBe(String(TO_MINUTE_END));
  });

  it('on a 429 quota_exhausted, with Retry-After to the end of the month', async () => {
    // Arrange: the month is spent; the window is not.
    given({ burst: 10, api_requests: TEAM.api_requests });

    // Act
    const res = await get();

    // Assert: refused, so not counted in the window either.
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('quota_exhausted');
    expectRateLimitHeaders(res.headers, TEAM.burst - 10);
    expect(res.headers['retry-after']).toBe(String(TO_MONTH_END));
  });

  it('not on a 401: an unknown caller has no window and counts nothing', async () => {
    given();
    const res = await getPost(apiEvent('getPost', { pathParameters: { id: POST.id } }), lambdaContext('x'));
    expect(res.statusCode).toBe(401);
    expect(Object.keys(res.headers).filter((h) => h.includes('ratelimit') || h === 'retry-after')).toEqual(
      [],
    );
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('counts down the window request by request and refuses past the burst', async () => {
    // Arrange: an operator lowered this org's burst to 2.
    given({}, { ...org(), limits: { burst: 2 } });

    // Act
    const answers = [await get(), await get(), await get()];

    // Assert
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 429]);
    expect(answers.map((r) => params(r.headers.ratelimit).r)).toEqual([1, 0, 0]);
    expect(answers.map((r) => params(r.headers['ratelimit-policy']).q)).toEqual([2, 2, 2]);
  });
});

describe('order of checks (401 → 403 scope/feature → 429 → 400 → 403 → 404 → 409)', () => {
  it.each([
    ['an invalid body (400)', () => create('{')],
    ['a field failure (400 validation_failed)', () => create('{"variants":[],"draft":true,"x":1}')],
    ['an unknown post (404)', () => get(READER, fixedId('post', 404))],
  ])('answers 429 rather than %s when the burst refuses', async (_what, send) => {
    given({ burst: TEAM.burst });
    const res = await send();
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('rate_limited');
  });

  it('answers 429 rather than 403 dangerous_ops_disabled when the burst refuses', async () => {
    given({ burst: TEAM.burst });
    const res = await publishPost(
      apiEvent('publishPost', { headers: bearer(WRITER), pathParameters: { id: POST.id } }),
      lambdaContext('publishPost'),
    );
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('rate_limited');
  });

  it('answers 429 quota_exhausted rather than 400 when the month refuses', async () => {
    given({ api_requests: TEAM.api_requests });
    const res = await create('{');
    expect(problemOf(res).code).toBe('quota_exhausted');
  });

  it.each([
    ['the burst', { burst: TEAM.burst }],
    ['the month', { api_requests: TEAM.api_requests }],
  ])('answers 403 insufficient_scope rather than 429 when %s refuses', async (_what, start) => {
    // Arrange
    given(start);

    // Act
    const res = await get(CHANNELS_ONLY);

    // Assert
    expect(res.statusCode).toBe(403);
    expect(problemOf(res).code).toBe('insufficient_scope');
    expect(res.headers.ratelimit).toBeDefined();
  });

  it('answers 401 before anything else, the limiter untouched', async () => {
    given({ burst: TEAM.burst });
    const res = await create('{', apiKey({ scopes: ['posts:write'], n: 77 }));
    expect(problemOf(res).code).toBe('invalid_api_key');
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  describe('a plan feature (403 feature_not_enabled)', () => {
    // No operation needs a plan feature yet; the pipeline's own middlewares show where it ranks.
    const op = { ...findOperation('getPost'), feature: 'webhooks' as const };
    const handler = middy<HttpEvent, HttpResult>(async () => ({ statusCode: 200, headers: {}, body: '{}' }))
      .use(requestIdHeader())
      .use(problemJson())
      .use(apiKeyAuth(op, requestGate))
      .use(rateLimit(requestGate))
      .use(authorize(op, requestGate));
    const send = () => handler(apiEvent('getPost', { headers: bearer(READER) }), lambdaContext('webhooks'));

    it('refuses a plan without the feature', async () => {
      given({}, { ...org(), plan: 'free' });
      const res = await send();
      expect(res.statusCode).toBe(403);
      expect(problemOf(res).code).toBe('feature_not_enabled');
    });

    it('outranks 429', async () => {
      given({ burst: TEAM.burst }, { ...org(), plan: 'free' });
      const res = await send();
      expect(problemOf(res).code).toBe('feature_not_enabled');
    });

    it('lets a plan with the feature through', async () => {
      given({}, { ...org(), plan: 'starter' });
      expect((await send()).statusCode).toBe(200);
    });
  });
});

describe('what a request counts', () => {
  it('counts an admitted request once in the window and once in the month, on one item', async () => {
    given({ burst: 3, api_requests: 7 });
    expect((await get()).statusCode).toBe(200);
    expect(windowOf(READER)).toEqual({ w: WINDOW_ID, n: 4 });
    expect(counters.get(USAGE)).toMatchObject({ api_requests: 8 });
  });

  it('counts a request refused by the burst nowhere: the gate item is unchanged', async () => {
    given({ burst: TEAM.burst, api_requests: 7 });
    expect((await get()).statusCode).toBe(429);
    expect(counters.get(USAGE)).toBeUndefined(); // never written
    expect(ddb.commandCalls(UpdateCommand).length).toBeGreaterThan(0);
  });

  it('counts an authenticated request refused for another reason (403 insufficient_scope)', async () => {
    given({ api_requests: 7 });
    expect((await get(CHANNELS_ONLY)).statusCode).toBe(403);
    expect(counters.get(USAGE)).toMatchObject({ api_requests: 8 });
  });

  it('writes nothing for a refused createPost (without Idempotency-Key; every client: refused-requests.test.ts)', async () => {
    // Arrange
    given({ burst: TEAM.burst });
    ddb.on(PutCommand).resolves({});
    ddb.on(TransactWriteCommand).resolves({});

    // Act
    const res = await create(SCHEDULED);

    // Assert
    expect(res.statusCode).toBe(429);
    expect(writes()).toBe(0);
  });

  it('writes nothing for a createPost refused by the month', async () => {
    given({ api_requests: TEAM.api_requests });
    ddb.on(PutCommand).resolves({});
    ddb.on(TransactWriteCommand).resolves({});
    const res = await create(SCHEDULED);
    expect(problemOf(res).code).toBe('quota_exhausted');
    expect(writes()).toBe(0);
  });
});

describe('a key revoked at the gate', () => {
  it('is refused with 401 on a warm container, outranking 403, counting nothing; later requests stay 401', async () => {
    // Arrange: the key was used (its record is cached), then revoked at the gate.
    given({ api_requests: 7 });
    expect((await get()).statusCode).toBe(200);
    counters.set(USAGE, { ...counters.get(USAGE), [READER.record.id]: { r: NOW } });

    // Act
    const refused = await get();
    const scopeless = await get(READER, POST.id);

    // Assert
    for (const res of [refused, scopeless]) {
      expect(res.statusCode).toBe(401);
      expect(problemOf(res).code).toBe('invalid_api_key');
      expect(res.headers.ratelimit).toBeUndefined();
    }
    expect(counters.get(USAGE)).toMatchObject({ api_requests: 8 });
    // The container forgot the key: the second request did not even reach the gate.
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(2);
  });

  it('outranks a 403 insufficient_scope of the same request', async () => {
    given();
    counters.set(USAGE, { [CHANNELS_ONLY.record.id]: { r: NOW } });
    const res = await get(CHANNELS_ONLY);
    expect(problemOf(res).code).toBe('invalid_api_key');
  });

  it('writes nothing for a createPost of a revoked key', async () => {
    given();
    counters.set(USAGE, { [WRITER.record.id]: { r: NOW } });
    ddb.on(PutCommand).resolves({});
    ddb.on(TransactWriteCommand).resolves({});
    const res = await create(SCHEDULED);
    expect(problemOf(res).code).toBe('invalid_api_key');
    expect(writes()).toBe(0);
  });
});

describe('limiter failures', () => {
  it.each([
    ['getPost (admission settled after the read)', () => get()],
    ['createPost (admission awaited before the write)', () => create(SCHEDULED)],
  ])('answer 500 internal_error on %s and write nothing', async (_what, send) => {
    // Arrange
    given();
    ddb
      .on(UpdateCommand)
      .rejects(Object.assign(new Error('InternalServerError: boom'), { name: 'InternalServerError' }));
    ddb.on(PutCommand).resolves({});
    ddb.on(TransactWriteCommand).resolves({});

    // Act
    const res = await send();

    // Assert
    expect(res.statusCode).toBe(500);
    expect(problemOf(res).code).toBe('internal_error');
    expect(res.body).not.toContain('boom');
    expect(writes()).toBe(0);
  });

  it('answers 429 rate_limited with Retry-After: 1 (never a 500) when DynamoDB throttles the gate item', async () => {
    // Arrange: past the item's write rate, after the SDK's own retries.
    given();
    ddb
      .on(UpdateCommand)
      .rejects(
        Object.assign(new Error('Throughput exceeds the item limit'), { name: 'ThrottlingException' }),
      );
    ddb.on(PutCommand).resolves({});
    ddb.on(TransactWriteCommand).resolves({});

    // Act
    const res = await create(SCHEDULED);

    // Assert
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('rate_limited');
    expect(res.headers['retry-after']).toBe('1');
    expect(writes()).toBe(0);
  });
});
