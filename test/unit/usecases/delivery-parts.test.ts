import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  PutCommand,
  type PutCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { type Connector, PlatformError, type PublishContext } from '#adapters/platforms/types';
import { MAX_ATTEMPTS } from '#core/delivery';
import type { DeliveryMessage } from '#core/messages';
import type { PaceDecision } from '#core/pacing';
import { type DeliveryRecord, type PostRecord, startPublishing } from '#core/posts';
import { LEASE_SECONDS } from '#core/timing';
import { deliver } from '#usecases/delivery-worker';
import { captureLines } from '../support/emf.ts';
import { update as applyUpdate, condition } from '../support/expressions.ts';
import {
  channel,
  channelItem,
  fixedId,
  type Item,
  ORG_ID,
  post,
  postItem,
  variant,
} from '../support/fixtures.ts';

// The parts of a delivery (a thread's items, the first comment) through the delivery worker: in
// order, each recorded before the next starts, each exactly once across retries, crashes and
// publishing again. An in-memory table (conditional writes as DynamoDB does them), a mocked SQS, a
// connector and a pacing decision the test controls.

vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
});

const connector = vi.hoisted(() => ({
  publish: vi.fn<Connector['publish']>(),
  reconcile: vi.fn<Connector['reconcile']>(),
}));
vi.mock('#adapters/platforms/index', () => ({ connectorFor: async () => connector }));
const pace = vi.hoisted(() => ({ fn: vi.fn<(req: { media: number }) => Promise<PaceDecision>>() }));
vi.mock('#adapters/pacing', async (original) => ({
  ...(await original<typeof import('#adapters/pacing')>()),
  paceDelivery: (req: { media: number }) => pace.fn(req),
}));

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
captureLines();

const NOW = new Date('2030-06-10T09:30:00.000Z');
const at = (offsetSeconds: number) => new Date(NOW.getTime() + offsetSeconds * 1000).toISOString();
const clockAt = (offsetSeconds: number) => () => new Date(NOW.getTime() + offsetSeconds * 1000);

const CH1 = channel(1, 'bluesky');
const POST_ID = fixedId('post', 1);
const MSG: DeliveryMessage = { org_id: ORG_ID, post_id: POST_ID, channel_id: CH1.id, round: 1 };
const KEY = `${POST_ID}.${CH1.id}`;

const idOf = (k: Record<string, unknown> | undefined) => `${String(k?.pk)}\u0000${String(k?.sk)}`;
const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** GetItem, BatchGetItem, PutItem and UpdateItem over a Map, conditions evaluated as DynamoDB does. */
function memoryTable(seed: Item[]) {
  const items = new Map<string, Item>(seed.map((i) => [idOf(i), copy(i)]));
  const checked = (key: Item | undefined, input: PutCommandInput | UpdateCommandInput) => {
    const current = items.get(idOf(key));
    if (
      input.ConditionExpression &&
      !condition(
        input.ConditionExpression,
        input.ExpressionAttributeNames,
        input.ExpressionAttributeValues,
      )(current ?? {})
    )
      throw Object.assign(
        new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} }),
        input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && current ? { Item: copy(current) } : {},
      );
    return current;
  };
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    const found = items.get(idOf(input.Key));
    return { Item: found ? copy(found) : undefined };
  });
  ddb.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
    const responses: Record<string, Item[]> = {};
    for (const [table, req] of Object.entries(input.RequestItems ?? {}))
      responses[table] = (req.Keys ?? []).flatMap((k) => {
        const found = items.get(idOf(k));
        return found ? [copy(found)] : [];
      });
    return { Responses: responses, UnprocessedKeys: {} };
  });
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    const item = input.Item ?? {};
    checked(item, input);
    items.set(idOf(item), copy(item));
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const current = checked(input.Key, input);
    const { next } = applyUpdate(
      copy({ ...current, ...input.Key }),
      input.UpdateExpression ?? '',
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    );
    items.set(idOf(input.Key), copy(next));
    if (input.ReturnValues === 'ALL_NEW') return { Attributes: copy(next) };
    if (input.ReturnValues === 'ALL_OLD') return { Attributes: current ? copy(current) : undefined };
    return {};
  });
  const stored = () => items.get(idOf(keys.post(ORG_ID, POST_ID))) as Item & PostRecord;
  return {
    stored,
    delivery: () => stored().deliveries[CH1.id] as DeliveryRecord,
    /** The stored post rewritten as another writer would (a new version). */
    put: (p: PostRecord) => items.set(idOf(keys.post(ORG_ID, POST_ID)), copy(postItem(p))),
  };
}

const ITEMS = ['two', 'three', 'four', 'five'];
/** A one-channel post publishing round 1: a root, four thread items and a first comment. */
function threadPost(patch: Partial<DeliveryRecord> = {}, comment = true): PostRecord {
  const started = startPublishing(
    post({
      id: POST_ID,
      type: 'thread',
      variants: [
        {
          ...variant(CH1.id, 1),
          body: 'one',
          thread: ITEMS.map((body) => ({ body, media: [] })),
          first_comment: comment ? { body: 'links' } : null,
        },
      ],
    }),
    new Date(NOW.getTime() - 5_000),
  );
  const d = started.deliveries[CH1.id] as DeliveryRecord;
  return { ...started, deliveries: { [CH1.id]: { ...d, ...patch } } };
}

function given(p: PostRecord) {
  return memoryTable([
    postItem(p),
    channelItem(CH1),
    { ...keys.channelCredentials(ORG_ID, CH1.id), credentials: { token: 'tok-1' } },
  ]);
}

/** What the fake platform answers for a part: its text names it (a Bluesky record with a cid). */
const answer = (ctx: PublishContext) => ({
  externalId: `at://did:plc:acme/app.bsky.feed.post/${ctx.text}`,
  url: `https://bsky.app/p/${ctx.text}`,
  ref: { cid: `cid-${ctx.text}` },
});
const ref = (text: string) => ({
  externalId: `at://did:plc:acme/app.bsky.feed.post/${text}`,
  url: `https://bsky.app/p/${text}`,
  ref: { cid: `cid-${text}` },
});
const calls = (fn: { mock: { calls: unknown[][] } }) => fn.mock.calls.map((c) => c[0] as PublishContext);
const published = (text: string) => ({
  stage: 'published',
  ...{ external_id: ref(text).externalId, url: ref(text).url, error: null },
});

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({});
  sqs.on(SendMessageBatchCommand).resolves({});
  connector.publish.mockReset();
  connector.reconcile.mockReset();
  pace.fn.mockReset();
  pace.fn.mockResolvedValue({ go: true });
});

describe('deliver: a thread and its first comment', () => {
  it('publishes the parts in order, each a reply to the one before under the root, each recorded before the next starts', async () => {
    const table = given(threadPost());
    const seen: DeliveryRecord[] = [];
    connector.publish.mockImplementation(async (ctx) => {
      seen.push(table.delivery());
      return answer(ctx);
    });

    expect(await deliver(MSG, clockAt(0))).toBe('published');

    const ctxs = calls(connector.publish);
    expect(ctxs.map((c) => [c.text, c.idempotencyKey, c.part])).toEqual([
      ['one', KEY, undefined],
      ['two', `${KEY}.t0`, { kind: 'thread', index: 0 }],
      ['three', `${KEY}.t1`, { kind: 'thread', index: 1 }],
      ['four', `${KEY}.t2`, { kind: 'thread', index: 2 }],
      ['five', `${KEY}.t3`, { kind: 'thread', index: 3 }],
      ['links', `${KEY}.c`, { kind: 'comment' }],
    ]);
    expect(ctxs[0]?.replyTo).toBeUndefined();
    expect(ctxs.slice(1).map((c) => [c.replyTo?.root.externalId, c.replyTo?.parent.externalId])).toEqual([
      [ref('one').externalId, ref('one').externalId],
      [ref('one').externalId, ref('two').externalId],
      [ref('one').externalId, ref('three').externalId],
      [ref('one').externalId, ref('four').externalId],
      // The comment goes under the thread's last item.
      [ref('one').externalId, ref('five').externalId],
    ]);
    expect(ctxs[2]?.replyTo).toEqual({ root: ref('one'), parent: ref('two') });
    // Before each part, every earlier part is already on the delivery, under the same claim.
    seen.forEach((d, k) => {
      expect(d.stage).toBe('sending');
      expect(d.external_id).toBe(k === 0 ? null : ref('one').externalId);
      expect(d.thread?.filter((p) => p.stage === 'published')).toHaveLength(Math.max(0, Math.min(k - 1, 4)));
    });
    expect(seen[1]?.ref).toEqual({ cid: 'cid-one' });
    expect(pace.fn).toHaveBeenCalledTimes(6); // the root, four items and the reply-comment each a post
    const d = table.delivery();
    expect(d).toMatchObject({
      stage: 'published',
      external_id: ref('one').externalId,
      url: ref('one').url,
      attempts: 1,
      thread: ITEMS.map(published),
      first_comment: published('links'),
    });
    expect(d.thread?.[3]?.ref).toEqual({ cid: 'cid-five' });
    expect(d.claim_id).toBeUndefined();
    expect(table.stored().status).toBe('published');
  });

  it('a retryable failure at item 3 retries later, resuming at item 3: no earlier part is sent again', async () => {
    const table = given(threadPost());
    connector.publish.mockImplementation(async (ctx) => {
      if (ctx.text === 'four' && connector.publish.mock.calls.length === 4)
        throw new PlatformError('system', 'connection refused', { retryable: true });
      return answer(ctx);
    });

    expect(await deliver(MSG, clockAt(0))).toBe('retrying');
    const between = table.delivery();
    expect(between).toMatchObject({ stage: 'retrying', attempts: 1, external_id: ref('one').externalId });
    expect(between.thread?.map((p) => p.stage)).toEqual(['published', 'published', 'queued', 'queued']);
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(1);

    expect(await deliver(MSG, clockAt(3600))).toBe('published');
    expect(calls(connector.publish).map((c) => c.text)).toEqual([
      'one',
      'two',
      'three',
      'four',
      'four',
      'five',
      'links',
    ]);
    expect(connector.reconcile).not.toHaveBeenCalled();
    expect(calls(connector.publish)[4]?.replyTo?.parent).toEqual(ref('three'));
    expect(table.delivery()).toMatchObject({ stage: 'published', attempts: 2, thread: ITEMS.map(published) });
  });

  it('a non-retryable refusal at item 3 fails the delivery with the item failed; publishing again resumes at item 3', async () => {
    const table = given(threadPost());
    connector.publish.mockImplementation(async (ctx) => {
      if (ctx.text === 'four')
        throw new PlatformError('user_content', 'Duplicate content', { retryable: false });
      return answer(ctx);
    });

    expect(await deliver(MSG, clockAt(0))).toBe('failed');
    const failed = table.stored();
    expect(failed.status).toBe('failed');
    expect(table.delivery()).toMatchObject({
      stage: 'failed',
      external_id: ref('one').externalId,
      error: 'Duplicate content',
    });
    expect(table.delivery().thread?.map((p) => [p.stage, p.error])).toEqual([
      ['published', null],
      ['published', null],
      ['failed', 'Duplicate content'],
      ['queued', null],
    ]);

    // Published again: the new round keeps the root and the published items.
    const again = startPublishing(failed, new Date(at(60)));
    expect(again.deliveries[CH1.id]).toMatchObject({
      stage: 'queued',
      attempts: 0,
      round: 2,
      external_id: ref('one').externalId,
      ref: { cid: 'cid-one' },
      thread: [published('two'), published('three'), { stage: 'queued' }, { stage: 'queued' }],
      first_comment: { stage: 'queued' },
    });
    table.put(again);
    connector.publish.mockReset();
    connector.publish.mockImplementation(async (ctx) => answer(ctx));

    expect(await deliver({ ...MSG, round: 2 }, clockAt(60))).toBe('published');
    expect(calls(connector.publish).map((c) => c.text)).toEqual(['four', 'five', 'links']);
    expect(calls(connector.publish)[0]?.replyTo).toEqual({ root: ref('one'), parent: ref('three') });
    expect(table.stored().status).toBe('published');
  });

  it('a first comment refused for good leaves the delivery published, the comment failed with its error', async () => {
    const table = given(threadPost());
    connector.publish.mockImplementation(async (ctx) => {
      if (ctx.part?.kind === 'comment')
        throw new PlatformError('user_content', 'Reply not allowed', { retryable: false });
      return answer(ctx);
    });

    expect(await deliver(MSG, clockAt(0))).toBe('published');
    expect(table.delivery()).toMatchObject({
      stage: 'published',
      error: null,
      thread: ITEMS.map(published),
      first_comment: { stage: 'failed', external_id: null, error: 'Reply not allowed' },
    });
    expect(table.stored().status).toBe('published');
  });

  it('a first comment that keeps failing retries within the attempt budget, then leaves the delivery published', async () => {
    const table = given(threadPost());
    connector.publish.mockImplementation(async (ctx) => {
      if (ctx.part?.kind === 'comment')
        throw new PlatformError('system', 'connection refused', { retryable: true });
      return answer(ctx);
    });
    const outcomes: string[] = [];
    for (let i = 0; i < MAX_ATTEMPTS; i++) outcomes.push(await deliver(MSG, clockAt(i * 3600)));

    expect(outcomes).toEqual([...Array(MAX_ATTEMPTS - 1).fill('retrying'), 'published']);
    expect(calls(connector.publish).filter((c) => c.part?.kind !== 'comment')).toHaveLength(5);
    expect(table.delivery()).toMatchObject({
      stage: 'published',
      attempts: MAX_ATTEMPTS,
      first_comment: { stage: 'failed', error: 'connection refused' },
    });
  });

  it('a paced item defers the delivery without counting an attempt; it resumes at that item', async () => {
    const table = given(threadPost({}, false));
    pace.fn
      .mockResolvedValueOnce({ go: true })
      .mockResolvedValueOnce({ go: true })
      .mockResolvedValueOnce({
        go: false,
        until: new Date(at(900)),
        reason: 'bluesky: 1,666 posts per hour',
        scope: 'channel',
      });
    connector.publish.mockImplementation(async (ctx) => answer(ctx));

    expect(await deliver(MSG, clockAt(0))).toBe('retrying');
    expect(table.delivery()).toMatchObject({ stage: 'retrying', attempts: 0, next_attempt_at: at(900) });
    expect(table.delivery().thread?.map((p) => p.stage)).toEqual(['published', 'queued', 'queued', 'queued']);

    expect(await deliver(MSG, clockAt(900))).toBe('published');
    expect(calls(connector.publish).map((c) => c.text)).toEqual(['one', 'two', 'three', 'four', 'five']);
    expect(table.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
  });
});

describe('deliver: a thread whose worker died between parts', () => {
  // Killed after item 2 (index 1) was accepted by the platform, before it was recorded: the
  // delivery shows the root and item 1 published, its lease run out, its attempt started when
  // item 1 was recorded.
  const died = (): Partial<DeliveryRecord> => ({
    stage: 'sending',
    attempts: 1,
    claim_id: 'dead-worker',
    lease_until: at(-1),
    attempt_started_at: at(-60),
    external_id: ref('one').externalId,
    url: ref('one').url,
    ref: { cid: 'cid-one' },
    thread: [
      { ...published('two'), ref: { cid: 'cid-two' } } as never,
      { stage: 'queued', external_id: null, url: null, error: null },
      { stage: 'queued', external_id: null, url: null, error: null },
      { stage: 'queued', external_id: null, url: null, error: null },
    ],
  });

  it('reconciles only the first unrecorded part, from its own start; found, it is recorded and the rest follow', async () => {
    const table = given(threadPost(died()));
    connector.reconcile.mockImplementation(async (ctx) => answer(ctx));
    connector.publish.mockImplementation(async (ctx) => answer(ctx));

    expect(await deliver(MSG, clockAt(0))).toBe('published');

    expect(connector.reconcile).toHaveBeenCalledTimes(1);
    expect(calls(connector.reconcile)[0]).toMatchObject({
      text: 'three',
      idempotencyKey: `${KEY}.t1`,
      part: { kind: 'thread', index: 1 },
      replyTo: { root: ref('one'), parent: ref('two') },
      attemptStartedAt: new Date(at(-60)),
    });
    // Item 2 is never sent again; the root and item 1 are not touched.
    expect(calls(connector.publish).map((c) => c.text)).toEqual(['four', 'five', 'links']);
    expect(table.delivery()).toMatchObject({ stage: 'published', attempts: 1, thread: ITEMS.map(published) });
    expect(table.delivery().unresolved_since).toBeUndefined();
  });

  it('not found, the part is published once, and the next parts are not reconciled', async () => {
    const table = given(threadPost(died()));
    connector.reconcile.mockResolvedValue(null);
    connector.publish.mockImplementation(async (ctx) => answer(ctx));

    expect(await deliver(MSG, clockAt(0))).toBe('published');
    expect(connector.reconcile).toHaveBeenCalledTimes(1);
    expect(calls(connector.publish).map((c) => c.text)).toEqual(['three', 'four', 'five', 'links']);
    expect(table.delivery()).toMatchObject({ stage: 'published', thread: ITEMS.map(published) });
  });

  it('an answer lost at item 3: the next attempt reconciles item 3 from when item 2 was recorded', async () => {
    const table = given(threadPost());
    let recordedAt: string | undefined;
    connector.publish.mockImplementation(async (ctx) => {
      if (ctx.text === 'four' && !recordedAt) {
        recordedAt = table.delivery().attempt_started_at;
        throw new PlatformError('system', 'HTTP 504', { status: 504 });
      }
      return answer(ctx);
    });
    connector.reconcile.mockImplementation(async (ctx) => answer(ctx));

    expect(await deliver(MSG, clockAt(0))).toBe('retrying');
    expect(table.delivery()).toMatchObject({ stage: 'retrying', unresolved_since: recordedAt });
    expect(await deliver(MSG, clockAt(3600))).toBe('published');
    expect(calls(connector.reconcile).map((c) => [c.text, c.attemptStartedAt.toISOString()])).toEqual([
      ['four', recordedAt],
    ]);
    expect(calls(connector.publish).map((c) => c.text)).toEqual([
      'one',
      'two',
      'three',
      'four',
      'five',
      'links',
    ]);
  });

  it('renews the lease as each part is recorded', async () => {
    const table = given(threadPost({}, false));
    const leases: Array<string | undefined> = [];
    let t = 0;
    connector.publish.mockImplementation(async (ctx) => {
      leases.push(table.delivery().lease_until);
      return answer(ctx);
    });
    await deliver(MSG, () => new Date(NOW.getTime() + 1000 * t++));
    expect(new Set(leases).size).toBe(5);
    expect(Date.parse(leases[4] as string)).toBeGreaterThan(Date.parse(at(LEASE_SECONDS)));
  });
});
