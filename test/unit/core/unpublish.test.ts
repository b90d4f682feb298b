import { describe, expect, it } from 'vitest';
import { settledPost } from '#core/delivery';
import { type DeliveryRecord, decideDelete, type PostRecord, startPublishing } from '#core/posts';
import { removalFailed, UNPUBLISH_UNSUPPORTED } from '#core/unpublish';
import { rejectedApiError } from '../support/errors.ts';
import { channel, fixedId, post, variant } from '../support/fixtures.ts';

// What a removed delivery means to the rest of the post's life: a publish round never sends it
// again, a round settles with it, and the post cannot be deleted while a removal runs.

const NOW = new Date('2030-06-01T12:00:00.000Z');
const A = channel(1, 'x');
const B = channel(2, 'mastodon');
const d = (ch: { id: string }, stage: DeliveryRecord['stage'], round = 1): DeliveryRecord => ({
  channel_id: ch.id,
  stage,
  external_id: stage === 'failed' ? null : '1',
  url: null,
  error: null,
  error_category: null,
  attempts: 1,
  updated_at: NOW.toISOString(),
  round,
});
const failedPost = (): PostRecord =>
  post({
    id: fixedId('post', 4),
    status: 'failed',
    round: 1,
    variants: [variant(A.id, 1), variant(B.id, 2)],
    deliveries: { [A.id]: d(A, 'removed'), [B.id]: d(B, 'failed') },
  });

describe('a removed delivery', () => {
  it('is never queued again when its failed post is published again, and the round settles with it', () => {
    const started = startPublishing(failedPost(), NOW);
    expect(started.deliveries[A.id]?.stage).toBe('removed');
    expect(started.deliveries[B.id]).toMatchObject({ stage: 'queued', round: 2 });
    const done = { ...started, deliveries: { ...started.deliveries, [B.id]: d(B, 'published', 2) } };
    expect(settledPost(done, NOW)?.status).toBe('published');
  });

  it('a post with a removal under way cannot be deleted (409); once it ended, it can', async () => {
    const p = { ...failedPost(), deliveries: { [A.id]: d(A, 'removing'), [B.id]: d(B, 'failed') } };
    const settings = { dangerous_ops: true, approval_required: false, landing_origins: [] };
    const err = await rejectedApiError(Promise.resolve().then(() => decideDelete(p, settings)));
    expect(err.code).toBe('resource_conflict');
    expect(() => decideDelete(failedPost(), settings)).not.toThrow();
  });

  it('a removal that fails for good is published again, with why; a retryable one stays removing', () => {
    const removing = { ...d(A, 'removing'), removal_attempts: 0 };
    const retry = removalFailed(removing, { category: 'system', message: 'x: 503', retryable: true }, NOW);
    expect(retry).toMatchObject({ stage: 'removing', removal_attempts: 1, error_category: 'system' });
    const gaveUp = removalFailed(
      removing,
      { category: 'auth_expired', message: 'x: 401', retryable: false },
      NOW,
    );
    expect(gaveUp).toMatchObject({ stage: 'published', error_category: 'auth_expired' });
    expect(gaveUp.error).not.toBe(UNPUBLISH_UNSUPPORTED);
  });
});
