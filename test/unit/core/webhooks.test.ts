import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signedHeaders } from '#core/webhook-signing';
import {
  attemptError,
  classify,
  JITTER,
  LADDER,
  ladderDeadlines,
  ladderExecutionName,
  MAX_ATTEMPTS,
  newSigningSecret,
  RETRY_SCHEDULE_SECONDS,
  retryDelayMs,
  toWebhookEndpoint,
} from '#core/webhooks';
import { webhookEndpoint } from '../support/fixtures.ts';

// The pure webhook rules (docs/api/webhooks.md): the retry schedule and its jitter, how a response is
// classified, the ladder's deadlines and execution names, what an endpoint shows of itself, and the
// Standard Webhooks signatures a receiver verifies with the reference library.

const HOUR = 3600;
const MINUTE = 60;

describe('the retry schedule', () => {
  it('is now, +5 s, +5 min, +30 min, +2 h, +5 h, +10 h, +14 h: eight attempts', () => {
    // Assert
    expect([...RETRY_SCHEDULE_SECONDS]).toEqual([
      0,
      5,
      5 * MINUTE,
      30 * MINUTE,
      2 * HOUR,
      5 * HOUR,
      10 * HOUR,
      14 * HOUR,
    ]);
    expect(MAX_ATTEMPTS).toBe(8);
  });

  it('spans 31 h 35 min 5 s from the first attempt to the last', () => {
    // Act
    const total = RETRY_SCHEDULE_SECONDS.reduce<number>((sum, s) => sum + s, 0);

    // Assert
    expect(total).toBe(31 * HOUR + 35 * MINUTE + 5);
  });

  it.each([
    [2, 5_000],
    [3, 300_000],
    [4, 1_800_000],
    [5, 7_200_000],
    [6, 18_000_000],
    [7, 36_000_000],
    [8, 50_400_000],
  ])('waits exactly the schedule before attempt %i when the jitter draws 0', (next, ms) => {
    // Act
    const delay = retryDelayMs(next, 1, 0);

    // Assert
    expect(delay).toBe(ms);
  });

  it.each([2, 3, 4, 5, 6, 7, 8])(
    'jitter only shortens the wait before attempt %i, by at most 10 %%',
    (next) => {
      // Arrange
      const base = (RETRY_SCHEDULE_SECONDS[next - 1] as number) * 1000;

      // Act
      const longest = retryDelayMs(next, 1, 0);
      const shortest = retryDelayMs(next, 1, 0.999_999_9);
      const middle = retryDelayMs(next, 1, 0.5);

      // Assert
      expect(JITTER).toBe(0.1);
      expect(longest).toBe(base);
      expect(shortest).toBeLessThan(base);
      expect(shortest).toBeGreaterThanOrEqual(Math.floor(base * 0.9));
      expect(shortest).toBeLessThanOrEqual(Math.ceil(base * 0.9) + 1);
      expect(middle).toBe(Math.round(base * 0.95));
    },
  );

  it('never lets the jittered schedule exceed the unjittered span', () => {
    // Act
    const jittered = [2, 3, 4, 5, 6, 7, 8].reduce((sum, n) => sum + retryDelayMs(n, 1, Math.random()), 0);

    // Assert
    expect(jittered).toBeLessThanOrEqual((31 * HOUR + 35 * MINUTE + 5) * 1000);
    expect(jittered).toBeGreaterThanOrEqual((31 * HOUR + 35 * MINUTE + 5) * 1000 * 0.9);
  });

  it('multiplies every wait by the time scale', () => {
    // Act
    const fast = retryDelayMs(8, 1 / 3600, 0);
    const fiveSeconds = retryDelayMs(2, 0.01, 0);
    const slower = retryDelayMs(3, 2, 0.5);

    // Assert
    expect(fast).toBe(14_000);
    expect(fiveSeconds).toBe(50);
    expect(slower).toBe(570_000);
  });

  it.each([0, 1, 9, 100])('has no attempt %i to wait for', (next) => {
    // Act / Assert
    expect(() => retryDelayMs(next, 1, 0)).toThrow(RangeError);
    expect(() => retryDelayMs(next, 1, 0)).toThrow(`no attempt ${next}`);
  });
});

describe('classify', () => {
  it.each([200, 201, 202, 204, 299])('counts %i as delivered', (status) => {
    expect(classify(status)).toBe('delivered');
  });

  it.each([300, 301, 302, 303, 304, 307, 308])(
    'counts the redirect %i as failed (never followed)',
    (status) => {
      expect(classify(status)).toBe('failed');
    },
  );

  it('counts 410 Gone as gone', () => {
    expect(classify(410)).toBe('gone');
  });

  it.each([100, 199, 400, 401, 404, 409, 429, 500, 502, 503, 504])('counts %i as failed', (status) => {
    expect(classify(status)).toBe('failed');
  });

  it('counts no response at all (null) as failed', () => {
    expect(classify(null)).toBe('failed');
  });
});

describe('attemptError', () => {
  it.each([
    [200, null, null],
    [204, null, null],
    [null, null, null],
    [301, null, 'redirect (HTTP 301) not followed'],
    [308, null, 'redirect (HTTP 308) not followed'],
    [404, null, 'HTTP 404'],
    [410, null, 'HTTP 410'],
    [500, null, 'HTTP 500'],
    [null, 'timeout: no complete response within 15000 ms', 'timeout: no complete response within 15000 ms'],
    [500, 'forbidden_address: 10.0.0.1', 'forbidden_address: 10.0.0.1'],
  ] as const)('(%s, %s) → %s', (status, reason, expected) => {
    expect(attemptError(status, reason)).toBe(expected);
  });
});

describe('the failure ladder', () => {
  it('warns 24 h and disables 72 h after the streak began', () => {
    // Act
    const d = ladderDeadlines('2030-01-01T06:30:00.000Z', 1);

    // Assert
    expect(LADDER).toEqual({ warnAfterMs: 24 * HOUR * 1000, disableAfterMs: 72 * HOUR * 1000 });
    expect(d).toEqual({ warn_at: '2030-01-02T06:30:00.000Z', disable_at: '2030-01-04T06:30:00.000Z' });
  });

  it('scales both deadlines with the time scale', () => {
    // Act
    const d = ladderDeadlines('2030-01-01T06:30:00.000Z', 1 / 3600);

    // Assert
    expect(d).toEqual({ warn_at: '2030-01-01T06:30:24.000Z', disable_at: '2030-01-01T06:31:12.000Z' });
  });

  it('names one execution per streak: ≤ 80 characters of [A-Za-z0-9-_]', () => {
    // Arrange
    const endpointId = 'whe_01JD0000000000000000000001';

    // Act
    const name = ladderExecutionName(endpointId, '2030-01-01T06:30:00.123Z');
    const longest = ladderExecutionName(endpointId, '+275760-09-13T00:00:00.000Z');
    const other = ladderExecutionName(endpointId, '2030-01-01T06:30:00.124Z');

    // Assert
    expect(name).toBe(`${endpointId}-${Date.parse('2030-01-01T06:30:00.123Z')}`);
    for (const n of [name, longest]) {
      expect(n.length).toBeLessThanOrEqual(80);
      expect(n).toMatch(/^[A-Za-z0-9_-]+$/);
    }
    expect(other).not.toBe(name);
  });
});

describe('toWebhookEndpoint', () => {
  const rec = webhookEndpoint({
    description: 'prod',
    state: 'warning',
    failure: { consecutive_failures: 3, failing_since: '2030-01-01T00:00:00.000Z', last_status_code: 500 },
    secret: {
      current: 'Q1VSUkVOVC1DSVBIRVJURVhU',
      previous: 'UFJFVklPVVMtQ0lQSEVSVEVYVA==',
      previous_until: '2030-01-02T00:00:00.000Z',
    },
    created_at: '2029-12-01T00:00:00.000Z',
    version: 7,
  });

  it('shows the configuration and failure state, with absent failure fields as null', () => {
    // Act
    const out = toWebhookEndpoint(rec);

    // Assert
    expect(out).toEqual({
      id: rec.id,
      url: rec.url,
      description: 'prod',
      event_types: ['post.published'],
      enabled: true,
      state: 'warning',
      failure: {
        consecutive_failures: 3,
        failing_since: '2030-01-01T00:00:00.000Z',
        last_failure_at: null,
        last_status_code: 500,
        last_error: null,
        warned_at: null,
        disabled_at: null,
      },
      created_at: rec.created_at,
      updated_at: rec.updated_at,
    });
  });

  it('never shows the secret, sealed or not, nor the internal bookkeeping', () => {
    // Act
    const text = JSON.stringify(toWebhookEndpoint(rec));

    // Assert
    expect(Object.keys(toWebhookEndpoint(rec))).not.toContain('secret');
    expect(text).not.toContain('secret');
    expect(text).not.toContain(rec.secret.current);
    expect(text).not.toContain(rec.secret.previous);
    expect(text).not.toContain('org_id');
    expect(text).not.toContain('"version"');
  });
});

describe('signing secrets and signatures', () => {
  it('makes secrets of whsec_ + base64 of 32 random bytes', () => {
    // Act
    const a = newSigningSecret();
    const b = newSigningSecret();

    // Assert
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(a.slice('whsec_'.length), 'base64')).toHaveLength(32);
    expect(b).not.toBe(a);
    expect(() => new Webhook(a)).not.toThrow();
  });

  const body = JSON.stringify({ type: 'post.published', timestamp: '2030-01-01T00:00:00.000Z', data: {} });
  const msgId = 'msg_01JD0000000000000000000001';

  it('sets the Standard Webhooks headers, verified by the reference library', () => {
    // Arrange
    const secret = newSigningSecret();
    const at = new Date();

    // Act
    const headers = signedHeaders([secret], msgId, at, body);

    // Assert
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'Herald-Webhooks/1.0',
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    });
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('signs with both secrets during a rotation: either verifies, an unrelated one does not', () => {
    // Arrange
    const current = newSigningSecret();
    const previous = newSigningSecret();
    const unrelated = newSigningSecret();

    // Act
    const headers = signedHeaders([current, previous], msgId, new Date(), body);

    // Assert
    expect(headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(unrelated).verify(body, headers)).toThrow(WebhookVerificationError);
  });

  it('binds the signature to the body and the message id', () => {
    // Arrange
    const secret = newSigningSecret();
    const headers = signedHeaders([secret], msgId, new Date(), body);

    // Act / Assert
    expect(() => new Webhook(secret).verify(body.replace('post.published', 'post.failed'), headers)).toThrow(
      WebhookVerificationError,
    );
    expect(() =>
      new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_01JD0000000000000000000002' }),
    ).toThrow(WebhookVerificationError);
  });
});
