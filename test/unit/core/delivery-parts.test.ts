import { describe, expect, it } from 'vitest';
import { nextPart, partFailed, partKey, partSucceeded, replyRefs } from '#core/delivery';
import { type DeliveryRecord, type PostRecord, startPublishing } from '#core/posts';
import { fixedId, post, variant } from '../support/fixtures.ts';

// The parts of a delivery, pure: which part is next, what it replies to, and how a part's outcome
// is recorded — and what publishing a failed post again keeps.

const NOW = new Date('2030-06-10T09:30:00.000Z');
const CH = fixedId('channel', 1);

function threaded(): PostRecord {
  return startPublishing(
    post({
      variants: [
        {
          ...variant(CH),
          thread: [
            { body: 'two', media: [] },
            { body: 'three', media: [] },
          ],
          first_comment: { body: 'c' },
        },
      ],
    }),
    NOW,
  );
}
const d0 = () => threaded().deliveries[CH] as DeliveryRecord;
const ok = (id: string) => ({ externalId: id, url: `https://p/${id}`, ref: { cid: `cid-${id}` } });

describe('the parts of a delivery', () => {
  it('go root → each item → the comment, each keyed on its own', () => {
    let d = d0();
    const seen: string[] = [];
    for (let part = nextPart(d); part; part = nextPart(d)) {
      seen.push(partKey('k', part));
      d = partSucceeded(d, part, ok(seen.length.toString()), NOW);
    }
    expect(seen).toEqual(['k', 'k.t0', 'k.t1', 'k.c']);
    expect(d.stage).toBe('published');
    expect(d.ref).toEqual({ cid: 'cid-1' });
  });

  it('an item replies to the one before under the root; the comment to the last item', () => {
    let d = partSucceeded(d0(), { kind: 'root' }, ok('r'), NOW);
    expect(replyRefs(d, { kind: 'thread', index: 0 })).toEqual({ root: ok('r'), parent: ok('r') });
    d = partSucceeded(d, { kind: 'thread', index: 0 }, ok('a'), NOW);
    d = partSucceeded(d, { kind: 'thread', index: 1 }, ok('b'), NOW);
    expect(replyRefs(d, { kind: 'comment' })).toEqual({ root: ok('r'), parent: ok('b') });
  });

  it('a recorded part moves the attempt start, renews the lease and clears what was unresolved', () => {
    const later = new Date(NOW.getTime() + 5000);
    const d = partSucceeded(
      { ...d0(), unresolved_since: '2030-01-01T00:00:00.000Z', checkpoint: { x: 1 } },
      { kind: 'root' },
      ok('r'),
      later,
    );
    expect(d).toMatchObject({ stage: 'queued', attempt_started_at: later.toISOString(), checkpoint: null });
    expect(d.unresolved_since).toBeUndefined();
    expect(Date.parse(d.lease_until as string)).toBeGreaterThan(later.getTime());
  });

  it('publishing a failed post again keeps the root and the published items, and what was left unknown', () => {
    let d = partSucceeded(d0(), { kind: 'root' }, ok('r'), NOW);
    d = partSucceeded(d, { kind: 'thread', index: 0 }, ok('a'), NOW);
    d = partFailed(
      { ...d, attempts: 5 },
      { kind: 'thread', index: 1 },
      { category: 'system', message: 'HTTP 504', retryable: true, maybeSent: true },
      NOW,
    );
    expect(d.stage).toBe('failed');
    const failed: PostRecord = { ...threaded(), status: 'failed', deliveries: { [CH]: d } };
    const again = startPublishing(failed, NOW).deliveries[CH] as DeliveryRecord;
    expect(again).toMatchObject({ stage: 'queued', attempts: 0, external_id: 'r', ref: { cid: 'cid-r' } });
    expect(again.thread?.map((p) => p.stage)).toEqual(['published', 'queued']);
    expect(again.unresolved_since).toBe(d.unresolved_since);
    expect(nextPart(again)).toEqual({ kind: 'thread', index: 1 });
  });
});
