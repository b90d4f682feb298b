import { parseItem, Token } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { ApiError } from '#core/errors';
import {
  billingPeriod,
  burstWindow,
  effectiveLimits,
  PLANS,
  rateLimitHeaders,
  requireFeature,
  WINDOW_SECONDS,
} from '#core/plans';
import { apiErrorOf } from '../support/errors.ts';

// Plans, their allowances (docs/api/limits.md) and the calendar arithmetic of the meters.

const MINUTE = 60_000;
const at = (iso: string) => Date.parse(iso);

describe('PLANS', () => {
  it.each([
    ['free', 1_000, 30, 30, 3, 0],
    ['starter', 10_000, 60, 300, 10, 100],
    ['team', 50_000, 120, 1_500, 25, 1_000],
    ['agency', 250_000, 300, 10_000, 100, 5_000],
  ] as const)(
    '%s has its documented allowances',
    (plan, api_requests, burst, posts_per_month, channels, ai_credits) => {
      expect(PLANS[plan].limits).toEqual({ api_requests, burst, posts_per_month, channels, ai_credits });
    },
  );

  it('gives webhooks, the inbox and ai to every plan but free; analytics and mcp to all', () => {
    expect(PLANS.free.features).toEqual(expect.arrayContaining(['analytics', 'mcp']));
    expect(PLANS.free.features).not.toContain('webhooks');
    expect(PLANS.free.features).not.toContain('inbox');
    expect(PLANS.free.features).not.toContain('ai');
    for (const plan of ['starter', 'team', 'agency'] as const) {
      expect([...PLANS[plan].features].sort()).toEqual(['ai', 'analytics', 'inbox', 'mcp', 'webhooks']);
    }
  });
});

describe('burstWindow', () => {
  it('names the UTC minute and the end of it', () => {
    const now = at('2030-06-01T12:34:10.000Z');
    const w = burstWindow(now);
    expect(w.id).toBe(Math.floor(now / MINUTE));
    expect(w.endsAtSeconds).toBe(at('2030-06-01T12:35:00.000Z') / 1000);
    expect(w.resetSeconds).toBe(50);
  });

  it('starts a new window exactly on the minute, with a full minute to reset', () => {
    const edge = at('2030-06-01T12:35:00.000Z');
    expect(burstWindow(edge - 1).id).toBe(burstWindow(edge).id - 1);
    expect(burstWindow(edge)).toEqual({
      id: edge / MINUTE,
      endsAtSeconds: edge / 1000 + 60,
      resetSeconds: 60,
    });
  });

  it('never answers less than 1 second to reset, even in the last millisecond', () => {
    const edge = at('2030-06-01T12:35:00.000Z');
    expect(burstWindow(edge - 1).resetSeconds).toBe(1);
    expect(burstWindow(edge - 500).resetSeconds).toBe(1);
    expect(burstWindow(edge - 1_001).resetSeconds).toBe(2);
  });

  it('rounds the time to reset up: the window has ended once it elapsed', () => {
    for (let ms = 0; ms < MINUTE; ms += 137) {
      const now = at('2030-06-01T12:35:00.000Z') + ms;
      const w = burstWindow(now);
      const left = w.endsAtSeconds * 1000 - now;
      expect(w.resetSeconds).toBeGreaterThanOrEqual(1);
      expect(w.resetSeconds).toBeLessThanOrEqual(60);
      expect(w.resetSeconds * 1000).toBeGreaterThanOrEqual(left);
      expect(w.resetSeconds * 1000 - left).toBeLessThan(1000);
    }
  });
});

describe('billingPeriod', () => {
  it('is the UTC calendar month', () => {
    expect(billingPeriod(at('2030-06-15T08:00:00.000Z'))).toEqual({
      id: '2030-06',
      startsAt: '2030-06-01T00:00:00.000Z',
      endsAt: '2030-07-01T00:00:00.000Z',
      secondsLeft: 15 * 86_400 + 16 * 3_600,
    });
  });

  it('crosses the year end: December ends on 1 January of the next year', () => {
    expect(billingPeriod(at('2030-12-31T23:59:59.999Z'))).toEqual({
      id: '2030-12',
      startsAt: '2030-12-01T00:00:00.000Z',
      endsAt: '2031-01-01T00:00:00.000Z',
      secondsLeft: 1,
    });
    expect(billingPeriod(at('2031-01-01T00:00:00.000Z'))).toMatchObject({
      id: '2031-01',
      startsAt: '2031-01-01T00:00:00.000Z',
      endsAt: '2031-02-01T00:00:00.000Z',
      secondsLeft: 31 * 86_400,
    });
  });

  it('follows UTC, not the local time zone, at the month boundary', () => {
    expect(billingPeriod(at('2030-06-30T23:30:00.000-02:00')).id).toBe('2030-07');
    expect(billingPeriod(at('2030-07-01T00:30:00.000+02:00')).id).toBe('2030-06');
  });

  it('knows leap years', () => {
    expect(billingPeriod(at('2032-02-29T12:00:00.000Z')).endsAt).toBe('2032-03-01T00:00:00.000Z');
  });

  it('rounds secondsLeft up and never answers less than 1', () => {
    expect(billingPeriod(at('2030-06-30T23:59:58.200Z')).secondsLeft).toBe(2);
    expect(billingPeriod(at('2030-06-30T23:59:59.000Z')).secondsLeft).toBe(1);
  });
});

describe('effectiveLimits', () => {
  it("is the plan's allowances without overrides", () => {
    expect(effectiveLimits('starter')).toEqual(PLANS.starter.limits);
    expect(effectiveLimits('starter', null)).toEqual(PLANS.starter.limits);
  });

  it('lays the overrides over the plan, key by key, without changing the plan', () => {
    const limits = effectiveLimits('free', { burst: 5, channels: 12, ai_credits: 7 });
    expect(limits).toEqual({
      api_requests: 1_000,
      burst: 5,
      posts_per_month: 30,
      channels: 12,
      ai_credits: 7,
    });
    expect(PLANS.free.limits).toEqual({
      api_requests: 1_000,
      burst: 30,
      posts_per_month: 30,
      channels: 3,
      ai_credits: 0,
    });
  });
});

describe('requireFeature', () => {
  it('refuses webhooks on free with 403 feature_not_enabled', () => {
    const err = apiErrorOf(() => requireFeature('free', 'webhooks'));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'feature_not_enabled', status: 403 });
    expect(err.message).toMatch(/free.*webhooks/);
  });

  it.each(['starter', 'team', 'agency'] as const)('allows webhooks on %s', (plan) => {
    expect(() => requireFeature(plan, 'webhooks')).not.toThrow();
  });

  it('allows analytics and mcp on free', () => {
    expect(() => requireFeature('free', 'analytics')).not.toThrow();
    expect(() => requireFeature('free', 'mcp')).not.toThrow();
  });
});

describe('rateLimitHeaders', () => {
  /** The header as an RFC 9651 Item: its bare value and its parameters. */
  const item = (value: string | undefined) => {
    const [bare, params] = parseItem(value ?? '');
    return { bare, params: Object.fromEntries(params) };
  };

  it('sends RateLimit-Policy as the string "per-key-minute" with integer q and w', () => {
    const { bare, params } = item(rateLimitHeaders(120, 119, 42)['ratelimit-policy']);
    expect(bare).toBe('per-key-minute');
    expect(bare).not.toBeInstanceOf(Token);
    expect(params).toEqual({ q: 120, w: WINDOW_SECONDS });
    expect(Number.isInteger(params.q) && Number.isInteger(params.w)).toBe(true);
  });

  it('sends RateLimit as the string "per-key-minute" with integer r and t', () => {
    const { bare, params } = item(rateLimitHeaders(120, 119, 42).ratelimit);
    expect(bare).toBe('per-key-minute');
    expect(params).toEqual({ r: 119, t: 42 });
    expect(Number.isInteger(params.r) && Number.isInteger(params.t)).toBe(true);
  });

  it('matches the documented example byte for byte', () => {
    const headers = rateLimitHeaders(120, 119, 42);
    expect(headers['ratelimit-policy']).toBe('"per-key-minute";q=120;w=60');
    expect(headers.ratelimit).toBe('"per-key-minute";r=119;t=42');
  });

  it('sends the X-RateLimit-* variants as integers (Reset in delta seconds)', () => {
    const headers = rateLimitHeaders(30, 7, 13);
    expect(headers).toMatchObject({
      'x-ratelimit-limit': '30',
      'x-ratelimit-remaining': '7',
      'x-ratelimit-reset': '13',
    });
    for (const name of ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset']) {
      expect(headers[name]).toMatch(/^(0|[1-9][0-9]*)$/);
    }
  });

  it('never sends a negative remaining', () => {
    const headers = rateLimitHeaders(30, -4, 13);
    expect(item(headers.ratelimit).params.r).toBe(0);
    expect(headers['x-ratelimit-remaining']).toBe('0');
  });

  it('sends exactly these five headers, lower-cased', () => {
    expect(Object.keys(rateLimitHeaders(1, 0, 1)).sort()).toEqual([
      'ratelimit',
      'ratelimit-policy',
      'x-ratelimit-limit',
      'x-ratelimit-remaining',
      'x-ratelimit-reset',
    ]);
  });
});
