import { describe, expect, it } from 'vitest';
import {
  claimDelivery,
  deliveryFailed,
  deliverySucceeded,
  MAX_ATTEMPTS,
  nothingPosted,
  retryDelaySeconds,
  withDelivery,
} from '#core/delivery';
import { deferredDelivery } from '#core/pacing';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { LEASE_SECONDS } from '#core/timing';

const NOW = new Date('2027-03-01T12:00:00.000Z');

function delivery(channel: string, patch: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    channel_id: channel,
    stage: 'queued',
    external_id: null,
    url: null,
    error: null,
    error_category: null,
    attempts: 0,
    updated_at: NOW.toISOString(),
    round: 1,
    ...patch,
  };
}

function post(deliveries: DeliveryRecord[], patch: Partial<PostRecord> = {}): PostRecord {
  return {
    id: 'post_01JD0000000000000000000001',
    org_id: 'org_01JD0000000000000000000001',
    status: 'publishing',
    type: 'single',
    title: null,
    body: null,
    scheduled_at: null,
    published_at: null,
    created_at: NOW.toISOString(),
    updated_at: NOW.toISOString(),
    variants: deliveries.map((d, i) => ({
      id: `var_${i}`,
      channel_id: d.channel_id,
      body: 'x',
      media: [],
      options: {},
    })),
    deliveries: Object.fromEntries(deliveries.map((d) => [d.channel_id, d])),
    round: 1,
    version: 3,
    approval: null,
    counted_period: '2027-03',
    ...patch,
  };
}

describe('claimDelivery', () => {
  describe('a dispatch message (start)', () => {
    const due = '2027-03-01T11:59:59.000Z';
    /** A scheduled post with two channels whose round 1 has not started yet. */
    const waiting = () =>
      post([delivery('a'), delivery('b')], {
        status: 'scheduled',
        scheduled_at: due,
        round: 0,
        deliveries: {},
      });

    it('starts the post and claims its own channel in the same change; the index entry stays at the scheduled time', () => {
      const out = claimDelivery(waiting(), 'a', 1, 'c1', NOW, due);
      if (out.kind !== 'claimed') throw new Error(out.kind);
      expect(out.post).toMatchObject({
        status: 'publishing',
        round: 1,
        watch_entry: due,
        dispatched: { for: due, at: NOW.toISOString(), round: 1 },
      });
      expect(out.post.deliveries.a).toMatchObject({
        stage: 'sending',
        claim_id: 'c1',
        attempts: 1,
        round: 1,
      });
      expect(out.post.deliveries.b).toMatchObject({ stage: 'queued', round: 1 });
    });

    it('claims normally once another channel started the post', () => {
      const first = claimDelivery(waiting(), 'a', 1, 'c1', NOW, due);
      if (first.kind !== 'claimed') throw new Error(first.kind);
      const second = claimDelivery(first.post, 'b', 1, 'c2', NOW, due);
      expect(second).toMatchObject({ kind: 'claimed', post: { deliveries: { b: { stage: 'sending' } } } });
    });

    it('skips a post rescheduled to another time, or of another round', () => {
      expect(claimDelivery(waiting(), 'a', 1, 'c1', NOW, '2027-03-01T11:00:00.000Z')).toEqual({
        kind: 'skip',
        reason: 'stale dispatch',
      });
      expect(claimDelivery(waiting(), 'a', 2, 'c1', NOW, due)).toMatchObject({ kind: 'skip' });
    });
  });

  it('takes a queued delivery: sending, one more attempt, a lease', () => {
    const out = claimDelivery(post([delivery('a')]), 'a', 1, 'c1', NOW);
    expect(out.kind).toBe('claimed');
    if (out.kind !== 'claimed') return;
    expect(out.recovering).toBe(false);
    expect(out.post.deliveries.a).toMatchObject({
      stage: 'sending',
      attempts: 1,
      claim_id: 'c1',
      lease_until: new Date(NOW.getTime() + LEASE_SECONDS * 1000).toISOString(),
    });
  });

  it('skips stale rounds, final deliveries and posts no longer publishing', () => {
    expect(claimDelivery(post([delivery('a')]), 'a', 0, 'c', NOW)).toEqual({
      kind: 'skip',
      reason: 'stale message',
    });
    expect(claimDelivery(post([delivery('a', { stage: 'published' })]), 'a', 1, 'c', NOW).kind).toBe('skip');
    expect(claimDelivery(post([delivery('a', { stage: 'failed' })]), 'a', 1, 'c', NOW).kind).toBe('skip');
    expect(claimDelivery(post([delivery('a')], { status: 'failed' }), 'a', 1, 'c', NOW).kind).toBe('skip');
  });

  it('leaves a delivery under a live lease to its worker (a duplicate message)', () => {
    const live = delivery('a', {
      stage: 'sending',
      lease_until: new Date(NOW.getTime() + 10_000).toISOString(),
      claim_id: 'other',
      attempts: 1,
    });
    expect(claimDelivery(post([live]), 'a', 1, 'c', NOW)).toEqual({ kind: 'busy' });
  });

  it('recovers an abandoned send (expired lease) without counting a new attempt; its outcome is unknown from its start', () => {
    const dead = delivery('a', {
      stage: 'sending',
      lease_until: new Date(NOW.getTime() - 1).toISOString(),
      claim_id: 'dead',
      attempts: 1,
      attempt_started_at: '2027-03-01T11:58:00.000Z',
    });
    const out = claimDelivery(post([dead]), 'a', 1, 'c2', NOW);
    expect(out).toMatchObject({ kind: 'claimed', recovering: true, resumed: true });
    if (out.kind === 'claimed')
      expect(out.post.deliveries.a).toMatchObject({
        attempts: 1,
        claim_id: 'c2',
        attempt_started_at: NOW.toISOString(),
        unresolved_since: '2027-03-01T11:58:00.000Z',
      });
  });

  it('while an earlier attempt is unresolved, every claim of it recovers (and counts its attempt)', () => {
    const waited = delivery('a', {
      stage: 'retrying',
      attempts: 2,
      next_attempt_at: NOW.toISOString(),
      unresolved_since: '2027-03-01T09:00:00.000Z',
    });
    const out = claimDelivery(post([waited]), 'a', 1, 'c3', NOW);
    expect(out).toMatchObject({ kind: 'claimed', recovering: true, resumed: false });
    if (out.kind === 'claimed')
      expect(out.post.deliveries.a).toMatchObject({
        attempts: 3,
        attempt_started_at: NOW.toISOString(),
        unresolved_since: '2027-03-01T09:00:00.000Z',
      });
  });

  it('does not take a retry before it is due', () => {
    const later = delivery('a', {
      stage: 'retrying',
      next_attempt_at: new Date(NOW.getTime() + 60_000).toISOString(),
      attempts: 1,
    });
    expect(claimDelivery(post([later]), 'a', 1, 'c', NOW)).toEqual({ kind: 'skip', reason: 'not due yet' });
  });
});

describe('outcomes and the post status', () => {
  it('the post is published when every delivery is', () => {
    const p = post([
      delivery('a', { stage: 'published', external_id: '1' }),
      delivery('b', { stage: 'sending', claim_id: 'c' }),
    ]);
    const done = withDelivery(
      p,
      deliverySucceeded(p.deliveries.b as DeliveryRecord, { externalId: '2', url: 'https://x/2' }, NOW),
      NOW,
    );
    expect(done).toMatchObject({ status: 'published', published_at: NOW.toISOString(), watch_at: null });
    expect(done.deliveries.b).toMatchObject({
      stage: 'published',
      external_id: '2',
      url: 'https://x/2',
      claim_id: undefined,
    });
  });

  it('the post fails only when every delivery is final and one failed', () => {
    const p = post([delivery('a', { stage: 'sending', attempts: 1 }), delivery('b', { stage: 'queued' })]);
    const fail = deliveryFailed(
      p.deliveries.a as DeliveryRecord,
      { category: 'user_content', message: 'too long', retryable: false },
      NOW,
    );
    const mid = withDelivery(p, fail, NOW);
    expect(mid.status).toBe('publishing');
    const end = withDelivery(
      mid,
      deliverySucceeded(mid.deliveries.b as DeliveryRecord, { externalId: '9', url: null }, NOW),
      NOW,
    );
    expect(end.status).toBe('failed');
  });

  it('a retryable failure retries with backoff until MAX_ATTEMPTS, honouring the platform hint', () => {
    const d = delivery('a', { stage: 'sending', attempts: 1 });
    const r = deliveryFailed(
      d,
      { category: 'rate_limited', message: '429', retryable: true, retryAfterSeconds: 30 },
      NOW,
    );
    expect(r).toMatchObject({
      stage: 'retrying',
      error_category: 'rate_limited',
      next_attempt_at: new Date(NOW.getTime() + 30_000).toISOString(),
    });
    const last = deliveryFailed(
      { ...d, attempts: MAX_ATTEMPTS },
      { category: 'system', message: '503', retryable: true },
      NOW,
    );
    expect(last.stage).toBe('failed');
  });

  it('backoff grows exponentially with jitter, capped at 15 minutes', () => {
    expect(retryDelaySeconds(1, undefined, () => 0.5)).toBe(5);
    expect(retryDelaySeconds(2, undefined, () => 0.5)).toBe(15);
    expect(retryDelaySeconds(3, undefined, () => 0.5)).toBe(45);
    expect(retryDelaySeconds(9, undefined, () => 0.5)).toBe(900);
    expect(retryDelaySeconds(1, 5000)).toBe(5000);
    expect(retryDelaySeconds(1, 200_000)).toBe(24 * 3600);
    const jittered = retryDelaySeconds(2, undefined, () => 0);
    expect(jittered).toBe(12);
  });

  it('a publishing post keeps a watchdog time after its latest pending retry', () => {
    const p = post([delivery('a', { stage: 'sending', attempts: 1 })]);
    const r = withDelivery(
      p,
      deliveryFailed(
        p.deliveries.a as DeliveryRecord,
        { category: 'system', message: 'x', retryable: true, retryAfterSeconds: 60 },
        NOW,
      ),
      NOW,
    );
    expect(Date.parse(r.watch_at as string)).toBe(NOW.getTime() + 60_000 + 300_000);
  });
});

describe('an attempt whose outcome is unknown (unresolved_since)', () => {
  const started = '2027-03-01T11:59:00.000Z';
  const sending = (patch: Partial<DeliveryRecord> = {}) =>
    delivery('a', { stage: 'sending', attempts: 1, claim_id: 'c', attempt_started_at: started, ...patch });
  const failure = (patch: { maybeSent?: boolean; retryable?: boolean; message?: string } = {}) => ({
    category: 'system' as const,
    message: 'x: POST /2/tweets 503',
    retryable: true,
    ...patch,
  });

  it('begins with an attempt that failed after its request may have been carried out', () => {
    expect(deliveryFailed(sending(), failure({ maybeSent: true }), NOW, () => 0.5)).toMatchObject({
      stage: 'retrying',
      unresolved_since: started,
    });
  });

  it('does not begin with a refusal (nothing was carried out)', () => {
    const refused = deliveryFailed(
      sending(),
      { category: 'rate_limited', message: '429', retryable: true, maybeSent: false },
      NOW,
    );
    expect(refused.unresolved_since).toBeUndefined();
  });

  it('keeps the earliest start through later failures and waits', () => {
    const earlier = sending({ unresolved_since: '2027-03-01T08:00:00.000Z' });
    const failed = deliveryFailed(earlier, failure({ maybeSent: true }), NOW, () => 0.5);
    expect(failed.unresolved_since).toBe('2027-03-01T08:00:00.000Z');
    const waiting = deferredDelivery(
      earlier,
      { until: new Date(NOW.getTime() + 7_200_000), reason: 'paused' },
      NOW,
      {
        undoClaim: true,
      },
    );
    expect(waiting).toMatchObject({ stage: 'retrying', unresolved_since: '2027-03-01T08:00:00.000Z' });
  });

  it('ends with a success, or with a reconcile that found nothing posted', () => {
    const open = sending({ unresolved_since: '2027-03-01T08:00:00.000Z' });
    expect(deliverySucceeded(open, { externalId: '1', url: null }, NOW).unresolved_since).toBeUndefined();
    expect(nothingPosted(open).unresolved_since).toBeUndefined();
    // A reconcile that found nothing, then an attempt that may have sent: unknown from this attempt on.
    const again = deliveryFailed(nothingPosted(open), failure({ maybeSent: true }), NOW, () => 0.5);
    expect(again.unresolved_since).toBe(started);
  });

  it('a delivery that ends while it is unresolved says the outcome is unknown', () => {
    const last = sending({ attempts: MAX_ATTEMPTS, unresolved_since: started });
    const rateLimited = deliveryFailed(
      last,
      { category: 'rate_limited', message: 'x: GET /2/users/:id/tweets 429', retryable: true },
      NOW,
    );
    expect(rateLimited).toMatchObject({ stage: 'failed', error_category: 'rate_limited' });
    expect(rateLimited.error).toMatch(/^Outcome unknown: .*\(x: GET \/2\/users\/:id\/tweets 429\)$/);
    const said = deliveryFailed(
      last,
      failure({ retryable: false, message: 'x: outcome unknown: gone' }),
      NOW,
    );
    expect(said.error).toBe('x: outcome unknown: gone');
    const resolved = deliveryFailed(sending({ attempts: MAX_ATTEMPTS }), failure(), NOW);
    expect(resolved.error).toBe('x: POST /2/tweets 503');
  });
});
