import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '#core/posts';
import { stuckFindings } from '#core/stuck-posts';
import { fixedId, post, variant } from '../support/fixtures.ts';

// The rule of `herald posts stuck`, one post at a time.

const NOW = new Date('2030-06-10T12:00:00.000Z');
const ago = (minutes: number) => new Date(NOW.getTime() - minutes * 60_000).toISOString();
const HALF_HOUR = 30 * 60_000;
const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);

const d = (channelId: string, extra: Partial<DeliveryRecord>): DeliveryRecord => ({
  channel_id: channelId,
  stage: 'queued',
  external_id: null,
  url: null,
  error: null,
  error_category: null,
  attempts: 0,
  updated_at: ago(60),
  round: 2,
  ...extra,
});

const publishing = (...deliveries: DeliveryRecord[]) =>
  post({
    status: 'publishing',
    round: 2,
    variants: deliveries.map((x, i) => variant(x.channel_id, i + 1)),
    deliveries: Object.fromEntries(deliveries.map((x) => [x.channel_id, x])),
  });

describe('stuckFindings', () => {
  it('a delivery never taken since the round began long ago is queued; a live lease is not stuck', () => {
    const p = publishing(
      d(CH1, { stage: 'queued' }),
      d(CH2, { stage: 'sending', claim_id: 'c', lease_until: ago(-1) }),
    );
    expect(stuckFindings(p, ago(45), NOW, HALF_HOUR).map((f) => [f.channel_id, f.why, f.since])).toEqual([
      [CH1, 'queued', ago(45)],
    ]);
  });

  it('the round began when its dispatch says, not at the (re-filed) index entry', () => {
    const p = {
      ...publishing(d(CH1, { stage: 'retrying', attempts: 2 })),
      dispatched: { for: ago(90), at: ago(89), round: 2 },
    };
    expect(stuckFindings(p, ago(10), NOW, HALF_HOUR)).toEqual([
      expect.objectContaining({ why: 'retrying', since: ago(89), attempts: 2 }),
    ]);
    // A dispatch of an earlier round says nothing about this one.
    const older = { ...p, dispatched: { for: ago(90), at: ago(89), round: 1 } };
    expect(stuckFindings(older, ago(10), NOW, HALF_HOUR)).toEqual([]);
  });

  it('a lease that ran out less than the threshold ago, a recent schedule, and a draft are not stuck', () => {
    const recent = publishing(d(CH1, { stage: 'sending', claim_id: 'c', lease_until: ago(10) }));
    expect(stuckFindings(recent, ago(12), NOW, HALF_HOUR)).toEqual([]);
    expect(stuckFindings(recent, ago(12), NOW, 5 * 60_000)).toEqual([
      expect.objectContaining({ why: 'lease_expired', since: ago(10) }),
    ]);
    expect(
      stuckFindings(post({ status: 'scheduled', scheduled_at: ago(20) }), ago(20), NOW, HALF_HOUR),
    ).toEqual([]);
    expect(stuckFindings(post({ status: 'draft' }), ago(90), NOW, 0)).toEqual([]);
  });

  it('a published post is never stuck, whatever its deliveries say', () => {
    const p = {
      ...publishing(d(CH1, { stage: 'sending', lease_until: ago(90) })),
      status: 'published' as const,
    };
    expect(stuckFindings(p, ago(120), NOW, 0)).toEqual([]);
  });
});
