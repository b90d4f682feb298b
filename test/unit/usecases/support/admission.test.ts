import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseItem } from 'structured-headers';
import { beforeEach, describe, expect, it } from 'vitest';
import { clearGateGuesses } from '#adapters/usage';
import type { AuthContext } from '#core/accounts';
import { effectiveLimits, PLANS } from '#core/plans';
import { admit } from '#usecases/support/admission';
import { fixedId, counters as fixtureCounters, ORG_ID } from '../../support/fixtures.ts';

// admit(): one authenticated request through the request gate (the key's burst window, the org's
// month and the key's revocation on one item).

const ddb = mockClient(DynamoDBDocumentClient);

/** 42.5 s into a minute, 11 h 59 min 17.5 s before the end of June 2030 (UTC). */
const NOW = Date.parse('2030-06-30T12:00:42.500Z');
const TO_MINUTE_END = 18;
const TO_MONTH_END = 43_158;

const AUTH: AuthContext = {
  orgId: ORG_ID,
  keyId: fixedId('key', 1),
  scopes: new Set(['posts:read']),
  plan: 'team',
  limits: PLANS.team.limits,
};

const GATE = `ORG#${ORG_ID} USAGE#2030-06`;
const WINDOW = Math.floor(NOW / 60_000);

/** The gate item before the request: this key's count in the current minute, and api_requests. */
function counters(burst: number, monthly: number, extra: Record<string, unknown> = {}) {
  const c = fixtureCounters();
  c.items.set(GATE, {
    pk: `ORG#${ORG_ID}`,
    sk: 'USAGE#2030-06',
    api_requests: monthly,
    [AUTH.keyId]: { w: WINDOW, n: burst },
    ...extra,
  });
  ddb.on(UpdateCommand).callsFake(c.update);
  return c.items;
}

const params = (header: string | undefined) => Object.fromEntries(parseItem(header ?? '')[1]);

beforeEach(() => {
  ddb.reset();
  clearGateGuesses();
});

describe('admit', () => {
  it('admits a request within both limits: r = burst limit - count, t = seconds to the minute end', async () => {
    // Arrange
    counters(6, 1_233);

    // Act
    const a = await admit(AUTH, NOW);

    // Assert
    expect(a).toEqual({ allowed: true, apiRequests: 1_234, period: '2030-06', headers: expect.any(Object) });
    expect(params(a.headers['ratelimit-policy'])).toEqual({ q: 120, w: 60 });
    expect(params(a.headers.ratelimit)).toEqual({ r: 113, t: TO_MINUTE_END });
    expect(a.headers).toMatchObject({
      'x-ratelimit-limit': '120',
      'x-ratelimit-remaining': '113',
      'x-ratelimit-reset': String(TO_MINUTE_END),
    });
    expect(a.headers['retry-after']).toBeUndefined();
  });

  it('admits the last request of the window with r = 0', async () => {
    counters(119, 5);
    const a = await admit(AUTH, NOW);
    expect(a.allowed).toBe(true);
    expect(params(a.headers.ratelimit).r).toBe(0);
  });

  it('refuses a request over the burst with 429 rate_limited, Retry-After to the minute end, r = 0', async () => {
    // Arrange
    counters(120, 10);

    // Act
    const a = await admit(AUTH, NOW);

    // Assert
    if (a.allowed) throw new Error('expected a refusal');
    expect(a.error).toMatchObject({
      code: 'rate_limited',
      status: 429,
      headers: { 'retry-after': String(TO_MINUTE_END) },
    });
    expect(params(a.headers.ratelimit)).toEqual({ r: 0, t: TO_MINUTE_END });
    expect(a.headers).toMatchObject({ 'retry-after': String(TO_MINUTE_END), 'x-ratelimit-remaining': '0' });
  });

  it('refuses a request over the month with 429 quota_exhausted, Retry-After to the month end', async () => {
    // Arrange
    counters(8, 50_000);

    // Act
    const a = await admit(AUTH, NOW);

    // Assert
    if (a.allowed) throw new Error('expected a refusal');
    expect(a.error).toMatchObject({
      code: 'quota_exhausted',
      status: 429,
      headers: { 'retry-after': String(TO_MONTH_END) },
    });
    expect(a.error.message).toContain('2030-07-01T00:00:00.000Z');
    expect(a.headers['retry-after']).toBe(String(TO_MONTH_END));
    // A refused request is not counted in the burst window either.
    expect(params(a.headers.ratelimit)).toEqual({ r: 112, t: TO_MINUTE_END });
  });

  it('answers rate_limited when both limits refuse', async () => {
    counters(120, 50_000);
    const a = await admit(AUTH, NOW);
    expect(a.allowed ? null : a.error.code).toBe('rate_limited');
  });

  it("counts against the key's window and the org's month with the effective limits", async () => {
    // Arrange: an operator lowered the burst and raised the month.
    counters(0, 60_000);
    const auth = { ...AUTH, limits: effectiveLimits('team', { burst: 5, api_requests: 70_000 }) };

    // Act
    const a = await admit(auth, NOW);

    // Assert
    const inputs = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(inputs.map((i) => i.Key)).toEqual([
      { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' },
      expect.anything(),
    ]);
    // One request: room for one under each limit.
    expect(inputs.at(-1)?.ExpressionAttributeValues).toMatchObject({
      ':n': 1,
      ':burstRoom': 4,
      ':monthRoom': 69_999,
    });
    expect(a).toMatchObject({ allowed: true, apiRequests: 60_001 });
    expect(params(a.headers['ratelimit-policy'])).toEqual({ q: 5, w: 60 });
    expect(params(a.headers.ratelimit).r).toBe(4);
  });

  it('refuses a key revoked at the gate with 401 invalid_api_key and no rate-limit headers', async () => {
    // Arrange
    const items = counters(3, 10, { [AUTH.keyId]: { r: '2030-06-30T12:00:00.000Z' } });

    // Act
    const a = await admit(AUTH, NOW);

    // Assert
    if (a.allowed) throw new Error('expected a refusal');
    expect(a.error).toMatchObject({ code: 'invalid_api_key', status: 401 });
    expect(a.headers).toEqual({});
    expect(items.get(GATE)?.api_requests).toBe(10);
  });

  it('answers 429 rate_limited with Retry-After: 1 when DynamoDB throttles the gate item', async () => {
    ddb.on(UpdateCommand).rejects(Object.assign(new Error('slow down'), { name: 'ThrottlingException' }));
    const a = await admit(AUTH, NOW);
    if (a.allowed) throw new Error('expected a refusal');
    expect(a.error).toMatchObject({ code: 'rate_limited', status: 429, headers: { 'retry-after': '1' } });
    expect(a.headers['retry-after']).toBe('1');
  });

  it('lets any other DynamoDB failure through', async () => {
    ddb.on(UpdateCommand).rejects(new Error('InternalServerError'));
    await expect(admit(AUTH, NOW)).rejects.toThrow('InternalServerError');
  });
});
