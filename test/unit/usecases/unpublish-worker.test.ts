import { beforeEach, describe, expect, it, vi } from 'vitest';
import { type Connector, PlatformError, type UnpublishContext } from '#adapters/platforms/types';
import type { UnpublishMessage } from '#core/messages';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { MAX_REMOVAL_ATTEMPTS } from '#core/unpublish';
import { removalsToSend, unpublishEvents } from '#usecases/support/relay-post-changes';
import { removeDelivery } from '#usecases/unpublish-worker';
import { CREATED_AT, channel, fixedId, ORG_ID, post, variant } from '../support/fixtures.ts';

// The unpublish worker over an in-memory post (the posts adapter's read and versioned write), a
// connector the test controls and a recorded queue; and the stream relay's side of it (which
// change sends a removal, which ends in post.unpublished).

const state = vi.hoisted(() => ({
  post: null as PostRecord | null,
  writes: 0,
  sent: [] as Array<{ body: unknown; delay: number }>,
  channelStatus: 'live' as string,
}));
const connector = vi.hoisted(() => ({
  unpublish: vi.fn<NonNullable<Connector['unpublish']>>(),
}));
vi.mock('#adapters/platforms/index', () => ({
  connectorFor: async () => ({ publish: vi.fn(), reconcile: vi.fn(), unpublish: connector.unpublish }),
}));
vi.mock('#adapters/channel-credentials', () => ({
  credentialRedactor: () => ({
    remember: (c: unknown) => c,
    redact: (t: string) => t.replaceAll('secret-token', '***'),
  }),
  getChannelWithCredentials: async () => ({
    channel: { ...channel(1, 'x'), status: state.channelStatus },
    credentials: { access_token: 'secret-token', account_id: '1' },
    version: 1,
  }),
}));
vi.mock('#adapters/posts', () => ({
  getPost: async () => (state.post ? structuredClone(state.post) : null),
  mutatePost: async (_o: string, _p: string, change: (p: PostRecord) => PostRecord | null) => {
    if (!state.post) return null;
    const before = structuredClone(state.post);
    const next = change(before);
    if (!next) return { before, after: before };
    state.post = { ...next, version: before.version + 1 };
    state.writes++;
    return { before, after: state.post };
  },
}));
vi.mock('#adapters/queues', () => ({
  sendDelayed: async (_q: string, body: unknown, delay: number) => {
    state.sent.push({ body, delay });
  },
}));

const CH = channel(1, 'x');
const NOW = new Date('2030-06-01T12:00:00.000Z');
const MSG: UnpublishMessage = { org_id: ORG_ID, post_id: fixedId('post', 3), channel_id: CH.id };

function removingPost(over: Partial<DeliveryRecord> = {}): PostRecord {
  const d: DeliveryRecord = {
    channel_id: CH.id,
    stage: 'removing',
    external_id: '100',
    url: 'https://x.com/acme/status/100',
    error: null,
    error_category: null,
    attempts: 1,
    updated_at: CREATED_AT,
    round: 1,
    removal_attempts: 0,
    thread: [
      { stage: 'published', external_id: '101', url: null, error: null },
      { stage: 'published', external_id: '102', url: null, error: null },
    ],
    first_comment: { stage: 'published', external_id: '103', url: null, error: null },
    ...over,
  };
  return post({
    id: MSG.post_id,
    status: 'published',
    round: 1,
    variants: [variant(CH.id)],
    deliveries: { [CH.id]: d },
  });
}
const delivery = () => state.post?.deliveries[CH.id] as DeliveryRecord;

beforeEach(() => {
  state.post = removingPost();
  state.writes = 0;
  state.sent = [];
  state.channelStatus = 'live';
  connector.unpublish.mockReset();
});

describe('removeDelivery', () => {
  it('removes the parts last first, then records the delivery and each part removed', async () => {
    connector.unpublish.mockResolvedValue({ alreadyGone: [] });
    expect(await removeDelivery(MSG, () => NOW)).toBe('removed');
    const ctx = connector.unpublish.mock.calls[0]?.[0] as UnpublishContext;
    expect(ctx.parts.map((p) => [p.kind, p.externalId])).toEqual([
      ['comment', '103'],
      ['thread', '102'],
      ['thread', '101'],
      ['root', '100'],
    ]);
    expect(delivery()).toMatchObject({ stage: 'removed', error: null, external_id: '100' });
    expect(delivery().thread?.map((p) => p.stage)).toEqual(['removed', 'removed']);
    expect(delivery().first_comment?.stage).toBe('removed');
    expect(delivery().removal_attempts).toBeUndefined();
  });

  it('a part the platform no longer has counts as removed (a crash after the delete, redelivered)', async () => {
    connector.unpublish.mockResolvedValue({ alreadyGone: ['100', '101', '102', '103'] });
    expect(await removeDelivery(MSG, () => NOW)).toBe('removed');
    expect(delivery().stage).toBe('removed');
  });

  it('a duplicate message after the removal finds nothing to do: no second platform call', async () => {
    connector.unpublish.mockResolvedValue({ alreadyGone: [] });
    await removeDelivery(MSG, () => NOW);
    expect(await removeDelivery(MSG, () => NOW)).toBe('skipped');
    expect(connector.unpublish).toHaveBeenCalledTimes(1);
    expect(state.writes).toBe(1);
  });

  it('a retryable failure is retried by its own delayed message (the hint first); a stale copy is dropped', async () => {
    connector.unpublish.mockRejectedValueOnce(
      new PlatformError('rate_limited', 'x: 429 Too Many Requests secret-token', { retryAfterSeconds: 120 }),
    );
    expect(await removeDelivery(MSG, () => NOW)).toBe('retrying');
    expect(state.sent).toEqual([{ body: { ...MSG, attempt: 1 }, delay: 120 }]);
    expect(delivery()).toMatchObject({
      stage: 'removing',
      removal_attempts: 1,
      error_category: 'rate_limited',
    });
    expect(delivery().error).not.toContain('secret-token');
    // The first message again (SQS redelivered it): stale, nothing called.
    expect(await removeDelivery(MSG, () => NOW)).toBe('skipped');
    connector.unpublish.mockResolvedValue({ alreadyGone: [] });
    expect(await removeDelivery({ ...MSG, attempt: 1 }, () => NOW)).toBe('removed');
    expect(connector.unpublish).toHaveBeenCalledTimes(2);
  });

  it("waits out a platform hint past SQS's 15-minute delay in messages of its own, then retries", async () => {
    connector.unpublish.mockRejectedValueOnce(
      new PlatformError('rate_limited', 'threads: 100 deletes a day', { retryAfterSeconds: 3600 }),
    );
    expect(await removeDelivery(MSG, () => NOW)).toBe('retrying');
    const due = new Date(NOW.getTime() + 3600_000).toISOString();
    expect(state.sent).toEqual([{ body: { ...MSG, attempt: 1, due }, delay: 3600 }]);
    // Arrives after 15 minutes (SQS's cap): sent on for the rest, nothing asked.
    const later = new Date(NOW.getTime() + 900_000);
    expect(await removeDelivery({ ...MSG, attempt: 1, due }, () => later)).toBe('skipped');
    expect(state.sent[1]).toEqual({ body: { ...MSG, attempt: 1, due }, delay: 2700 });
    expect(connector.unpublish).toHaveBeenCalledTimes(1);
    connector.unpublish.mockResolvedValue({ alreadyGone: [] });
    expect(await removeDelivery({ ...MSG, attempt: 1, due }, () => new Date(Date.parse(due)))).toBe(
      'removed',
    );
  });

  it(`gives up after ${MAX_REMOVAL_ATTEMPTS} attempts: the delivery is back to published with the error`, async () => {
    state.post = removingPost({ removal_attempts: MAX_REMOVAL_ATTEMPTS - 1 });
    connector.unpublish.mockRejectedValue(new PlatformError('system', 'x: 503 Service Unavailable'));
    expect(await removeDelivery({ ...MSG, attempt: MAX_REMOVAL_ATTEMPTS - 1 }, () => NOW)).toBe('failed');
    expect(delivery()).toMatchObject({
      stage: 'published',
      error_category: 'system',
      removal_attempts: undefined,
    });
    expect(delivery().error).toMatch(/^Removing it from the platform failed: x: 503/);
    expect(delivery().thread?.map((p) => p.stage)).toEqual(['published', 'published']);
    expect(state.sent).toEqual([]);
  });

  it('a refusal that is not retryable ends at once; a disconnected channel is not asked at all', async () => {
    connector.unpublish.mockRejectedValue(
      new PlatformError('platform_rejected', 'x: 403 Forbidden', { retryable: false }),
    );
    expect(await removeDelivery(MSG, () => NOW)).toBe('failed');
    expect(delivery().stage).toBe('published');
    state.post = removingPost();
    state.channelStatus = 'disconnected';
    expect(await removeDelivery(MSG, () => NOW)).toBe('failed');
    expect(delivery()).toMatchObject({ stage: 'published', error_category: 'auth_expired' });
    expect(connector.unpublish).toHaveBeenCalledTimes(1);
  });

  it('a post deleted meanwhile is skipped', async () => {
    state.post = null;
    expect(await removeDelivery(MSG, () => NOW)).toBe('skipped');
    expect(connector.unpublish).not.toHaveBeenCalled();
  });
});

describe('the stream relay', () => {
  const published = (): PostRecord => {
    const p = removingPost();
    return {
      ...p,
      deliveries: { [CH.id]: { ...(p.deliveries[CH.id] as DeliveryRecord), stage: 'published' } },
    };
  };
  const change = (old: PostRecord | undefined, now: PostRecord) => ({
    eventId: 'e1',
    timeMs: NOW.getTime(),
    old,
    new: now,
  });

  it('a delivery turning removing sends one removal; staying removing (a retry written) sends none', () => {
    expect(removalsToSend(published(), removingPost())).toEqual([MSG]);
    expect(removalsToSend(removingPost(), removingPost({ removal_attempts: 1 }))).toEqual([]);
    expect(removalsToSend(published(), published())).toEqual([]);
  });

  it('post.unpublished comes with the change that ends the last removal, once', () => {
    const removed = removingPost({ stage: 'removed' });
    const [event] = unpublishEvents(change(removingPost(), removed));
    expect(event).toMatchObject({
      type: 'post.unpublished',
      org_id: ORG_ID,
      data: { post: { id: MSG.post_id } },
    });
    expect(unpublishEvents(change(removed, removed))).toEqual([]);
    expect(unpublishEvents(change(published(), removingPost()))).toEqual([]);
    // The same stream record relayed again: the same event id (receivers see one event).
    expect(unpublishEvents(change(removingPost(), removed))[0]?.id).toBe(event?.id);
  });
});
