import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, UpdateCommand, type UpdateCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { parseItem } from 'structured-headers';
import { beforeEach, describe, expect, it } from 'vitest';
import { effectiveLimits, PLANS } from '#core/plans';
import type { AuthContext } from '#shared/auth';
import { admit } from '#usecases/admission';
import { fixedId, ORG_ID } from '../support/fixtures.ts';

// admit(): one authenticated request against the key's burst window and the org's month.

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

const refused = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

/** The burst counter answers `burst` (a count, or refused); api_requests answers `monthly`. */
function counters(burst: number | 'refused', monthly: number | 'refused') {
  ddb.on(UpdateCommand).callsFake(async (input: UpdateCommandInput) => {
    if (String(input.Key?.pk).startsWith('RATE#')) {
      if (burst === 'refused') throw refused();
      return { Attributes: { count: burst } };
    }
    if (input.ConditionExpression === undefined) return {}; // the compensation
    if (monthly === 'refused') throw refused();
    return { Attributes: { api_requests: monthly } };
  });
}

const params = (header: string | undefined) => Object.fromEntries(parseItem(header ?? '')[1]);

beforeEach(() => {
  ddb.reset();
});

describe('admit', () => {
  it('admits a request within both limits: r = burst limit - count, t = seconds to the minute end', async () => {
    // Arrange
    counters(7, 1_234);

    // Act
    const a = await admit(AUTH, NOW);

    // Assert
    expect(a).toEqual({ allowed: true, apiRequests: 1_234, headers: expect.any(Object) });
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
    counters(120, 5);
    const a = await admit(AUTH, NOW);
    expect(a.allowed).toBe(true);
    expect(params(a.headers.ratelimit).r).toBe(0);
  });

  it('refuses a request over the burst with 429 rate_limited, Retry-After to the minute end, r = 0', async () => {
    // Arrange
    counters('refused', 10);

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
    counters(9, 'refused');

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
    // The burst window still counted this request.
    expect(params(a.headers.ratelimit)).toEqual({ r: 111, t: TO_MINUTE_END });
  });

  it('answers rate_limited when both limits refuse', async () => {
    counters('refused', 'refused');
    const a = await admit(AUTH, NOW);
    expect(a.allowed ? null : a.error.code).toBe('rate_limited');
  });

  it("counts against the key's window and the org's month with the effective limits", async () => {
    // Arrange: an operator lowered the burst and raised the month.
    counters(1, 1);
    const auth = { ...AUTH, limits: effectiveLimits('team', { burst: 5, api_requests: 70_000 }) };

    // Act
    const a = await admit(auth, NOW);

    // Assert
    const inputs = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(inputs.map((i) => [i.Key, i.ExpressionAttributeValues?.[':limit']])).toEqual(
      expect.arrayContaining([
        [{ pk: `RATE#${AUTH.keyId}`, sk: `MIN#${Math.floor(NOW / 60_000)}` }, 5],
        [{ pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' }, 70_000],
      ]),
    );
    expect(params(a.headers['ratelimit-policy'])).toEqual({ q: 5, w: 60 });
    expect(params(a.headers.ratelimit).r).toBe(4);
  });

  it('lets a DynamoDB failure through', async () => {
    ddb.on(UpdateCommand).rejects(new Error('InternalServerError'));
    await expect(admit(AUTH, NOW)).rejects.toThrow('InternalServerError');
  });
});
