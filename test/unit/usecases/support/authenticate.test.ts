import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { PLANS } from '#core/plans';
import { handler as getPost } from '#handlers/get-post';
import {
  authenticate,
  CACHE_TTL_MS,
  clearAuthCache,
  presentedKey,
  requireScope,
} from '#usecases/support/authenticate';
import { rejectedApiError } from '../../support/errors.ts';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  serveCounters,
  serveItems,
} from '../../support/fixtures.ts';

const ddb = mockClient(DynamoDBDocumentClient);

const KEY = apiKey({ scopes: ['posts:read'] });
const UNKNOWN = apiKey({ scopes: ['posts:read'], n: 9 });
const POST = post();
const T0 = 1_900_000_000_000;

const keyReads = () =>
  ddb.commandCalls(GetCommand).filter((c) => String(c.args[0].input.Key?.pk).startsWith('APIKEY#'));

beforeEach(() => {
  ddb.reset();
  clearAuthCache();
  serveItems(ddb, [apiKeyItem(KEY), orgItem(org()), postItem(POST)]);
  serveCounters(ddb);
});

describe('presentedKey', () => {
  it.each<[string, Record<string, string | undefined>, string | undefined]>([
    ['nothing', {}, undefined],
    ['a Bearer token', { authorization: 'Bearer svc_live_abc' }, 'svc_live_abc'],
    ['a bearer token with extra blanks', { authorization: 'bearer \t svc_live_abc ' }, 'svc_live_abc'],
    ['x-api-key', { 'x-api-key': ' svc_live_abc ' }, 'svc_live_abc'],
    ['another scheme: a key that cannot be valid', { authorization: 'Basic Zm9vOmJhcg==' }, ''],
    ['a blank Authorization header: no key', { authorization: '  ' }, undefined],
  ])('reads %s', (_what, headers, expected) => {
    expect(presentedKey(headers)).toBe(expected);
  });
});

describe('authenticate', () => {
  it('resolves the org, key id, scopes, plan and limits of a valid key', async () => {
    // Act
    const ctx = await authenticate(bearer(KEY), T0);

    // Assert
    expect(ctx).toEqual({
      orgId: ORG_ID,
      keyId: KEY.record.id,
      scopes: new Set(['posts:read']),
      plan: 'team',
      limits: PLANS.team.limits,
    });
  });

  it('reads the key, then its organization, on a cold request', async () => {
    await authenticate(bearer(KEY), T0);
    expect(ddb.commandCalls(GetCommand).map((c) => c.args[0].input.Key)).toEqual([
      { pk: `APIKEY#${KEY.hash}`, sk: 'APIKEY' },
      { pk: `ORG#${ORG_ID}`, sk: 'ORG' },
    ]);
  });

  it("applies the organization's limit overrides on top of its plan", async () => {
    // Arrange
    ddb.reset();
    serveItems(ddb, [apiKeyItem(KEY), orgItem({ ...org(), plan: 'free', limits: { burst: 5 } })]);

    // Act
    const ctx = await authenticate(bearer(KEY), T0);

    // Assert
    expect(ctx.plan).toBe('free');
    expect(ctx.limits).toEqual({ ...PLANS.free.limits, burst: 5 });
  });

  it('answers invalid_api_key when the organization of the key is gone', async () => {
    ddb.reset();
    serveItems(ddb, [apiKeyItem(KEY)]);
    expect((await rejectedApiError(authenticate(bearer(KEY), T0))).code).toBe('invalid_api_key');
  });

  it('picks up a plan change once the cache entry expires', async () => {
    // Arrange
    await authenticate(bearer(KEY), T0);
    ddb.reset();
    serveItems(ddb, [apiKeyItem(KEY), orgItem({ ...org(), plan: 'agency' })]);

    // Act
    const cached = await authenticate(bearer(KEY), T0 + CACHE_TTL_MS - 1);
    const fresh = await authenticate(bearer(KEY), T0 + CACHE_TTL_MS + 1);

    // Assert
    expect(cached.plan).toBe('team');
    expect(fresh).toMatchObject({ plan: 'agency', limits: PLANS.agency.limits });
  });

  it('reads the key from DynamoDB once while cached, again after the TTL', async () => {
    // Act
    await authenticate(bearer(KEY), T0);
    await authenticate(bearer(KEY), T0 + CACHE_TTL_MS - 1);
    const beforeExpiry = keyReads().length;
    await authenticate(bearer(KEY), T0 + CACHE_TTL_MS + 1);

    // Assert
    expect(beforeExpiry).toBe(1);
    expect(keyReads()).toHaveLength(2);
  });

  it('stops accepting a key revoked since, once the cache entry expires', async () => {
    // Arrange: the key is valid, then revoked in the table.
    await authenticate(bearer(KEY), T0);
    ddb.reset();
    serveItems(ddb, [apiKeyItem({ ...KEY, record: { ...KEY.record, revoked_at: '2030-01-02T00:00:00Z' } })]);

    // Act
    const err = await rejectedApiError(authenticate(bearer(KEY), T0 + CACHE_TTL_MS + 1));

    // Assert
    expect(err.code).toBe('invalid_api_key');
  });

  it('does not cache an unknown key: each request with it looks it up again', async () => {
    await rejectedApiError(authenticate(bearer(UNKNOWN), T0));
    const err = await rejectedApiError(authenticate(bearer(UNKNOWN), T0 + 1));
    expect(err.code).toBe('invalid_api_key');
    expect(keyReads()).toHaveLength(2);
  });

  it('accepts a key minted just after a request with it was refused as unknown', async () => {
    // Arrange: the key is used before it exists, then minted.
    const early = await rejectedApiError(authenticate(bearer(UNKNOWN), T0));
    ddb.reset();
    serveItems(ddb, [apiKeyItem(KEY), apiKeyItem(UNKNOWN), orgItem(org())]);

    // Act
    const ctx = await authenticate(bearer(UNKNOWN), T0 + 1);

    // Assert
    expect(early.code).toBe('invalid_api_key');
    expect(ctx).toMatchObject({ orgId: ORG_ID, keyId: UNKNOWN.record.id });
  });

  it('caches the refusal of a revoked key (revocation is for good)', async () => {
    ddb.reset();
    serveItems(ddb, [apiKeyItem({ ...KEY, record: { ...KEY.record, revoked_at: '2030-01-02T00:00:00Z' } })]);
    await rejectedApiError(authenticate(bearer(KEY), T0));
    const err = await rejectedApiError(authenticate(bearer(KEY), T0 + 1));
    expect(err.code).toBe('invalid_api_key');
    expect(keyReads()).toHaveLength(1);
  });

  it('answers authentication_required when no key is sent', async () => {
    expect((await rejectedApiError(authenticate({}, T0))).code).toBe('authentication_required');
  });
});

describe('requireScope', () => {
  it('refuses a scope the key lacks with insufficient_scope', async () => {
    const ctx = await authenticate(bearer(KEY), T0);
    expect(() => requireScope(ctx, 'posts:read')).not.toThrow();
    expect(() => requireScope(ctx, 'posts:write')).toThrow(
      expect.objectContaining({ code: 'insufficient_scope' }),
    );
  });
});

describe('auth cache on the request path', () => {
  it('reads the key once for two requests with the same key', async () => {
    // Arrange
    const event = () => apiEvent('getPost', { headers: bearer(KEY), pathParameters: { id: POST.id } });

    // Act
    const first = await getPost(event(), lambdaContext('getPost'));
    const second = await getPost(event(), lambdaContext('getPost'));

    // Assert
    expect([first.statusCode, second.statusCode]).toEqual([200, 200]);
    expect(keyReads()).toHaveLength(1);
    expect(keyReads()[0]?.args[0].input.Key).toEqual({ pk: `APIKEY#${KEY.hash}`, sk: 'APIKEY' });
  });

  it('reads it again after clearAuthCache (each test starts cold)', async () => {
    const event = apiEvent('getPost', { headers: bearer(KEY), pathParameters: { id: POST.id } });
    await getPost(event, lambdaContext('getPost'));
    clearAuthCache();
    await getPost(event, lambdaContext('getPost'));
    expect(keyReads()).toHaveLength(2);
  });
});
