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
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { DeliveryMessage, DispatchMessage } from '#core/messages';
import { type DeliveryRecord, type PostRecord, startPublishing } from '#core/posts';
import { LEASE_SECONDS, LOOKAHEAD_SECONDS, REDISPATCH_SECONDS, WATCHDOG_SECONDS } from '#core/timing';
import { dispatchAll } from '#usecases/schedule-dispatcher';
import { sweep } from '#usecases/schedule-sweeper';
import { dispatch } from '../support/dispatch.ts';
import { channel, fixedId, type Item, ORG_ID, post, postItem, variant } from '../support/fixtures.ts';

// The scheduler: the sweeper reads the due-work index (GSI2 minute buckets) past its cursor and
// dispatches; the dispatcher sends a post's delivery messages at its time (the first claim starts it). The table is a tiny in-memory one whose GSI2 answers from the stored
// items' gsi2 keys, so what a write puts into the index is what the next sweep reads.

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);

const NOW = new Date('2030-06-10T09:30:30.000Z');
const at = (offsetSeconds: number, from = NOW) =>
  new Date(from.getTime() + offsetSeconds * 1000).toISOString();
const clockAt = (d: Date) => () => d;

const CH1 = channel(1, 'bluesky');
const CH2 = channel(2, 'mastodon');

// ---- the in-memory table -------------------------------------------------------------------------

const idOf = (k: Record<string, unknown> | undefined) => `${String(k?.pk)}\u0000${String(k?.sk)}`;
const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

let items: Map<string, Item>;

/** GetItem, BatchGetItem, PutItem with `version = :v`, the cursor's UpdateItem, and GSI2 range queries. */
function memoryTable(seed: Item[]) {
  items = new Map(seed.map((i) => [idOf(i), copy(i)]));
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    const found = items.get(idOf(input.Key));
    return { Item: found ? copy(found) : undefined };
  });
  ddb.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
    const [[table, req]] = Object.entries(input.RequestItems ?? {}) as [[string, { Keys: Item[] }]];
    const found = req.Keys.flatMap((k) => (items.has(idOf(k)) ? [copy(items.get(idOf(k)) as Item)] : []));
    return { Responses: { [table]: found } };
  });
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    const item = input.Item ?? {};
    if (input.ConditionExpression !== 'version = :v')
      throw new Error(`memoryTable: unsupported condition ${input.ConditionExpression}`);
    if (items.get(idOf(item))?.version !== input.ExpressionAttributeValues?.[':v']) {
      throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    }
    items.set(idOf(item), copy(item));
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    const key = idOf(input.Key);
    const through = input.ExpressionAttributeValues?.[':t'];
    const stored = items.get(key);
    if (typeof stored?.through === 'number' && stored.through >= through)
      throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    items.set(key, { ...(input.Key as Item), ...stored, through, entity: 'sweep_cursor' });
    return {};
  });
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    if (input.IndexName !== 'gsi2') throw new Error('memoryTable: unsupported query');
    const v = input.ExpressionAttributeValues ?? {};
    const from = v[':from'] as string | undefined;
    const to = v[':to'] as string | undefined;
    return {
      Items: [...items.values()]
        .filter((i) => i.gsi2pk === v[':p'])
        .filter((i) => (!from || String(i.gsi2sk) >= from) && (!to || String(i.gsi2sk) <= to))
        .sort((a, b) => String(a.gsi2sk).localeCompare(String(b.gsi2sk)))
        .map((i) => ({ pk: i.pk, sk: i.sk, gsi2pk: i.gsi2pk, gsi2sk: i.gsi2sk })),
    };
  });
}

const storedItem = (id: string) => items.get(idOf(keys.post(ORG_ID, id))) as Item & PostRecord;
const cursor = () => items.get(idOf(keys.sweepCursor()))?.through;

// ---- fixtures ----------------------------------------------------------------------------------

const variants = [variant(CH1.id, 1), variant(CH2.id, 2)];

function scheduled(n: number, scheduledAt: string, extra: Partial<PostRecord> = {}): PostRecord {
  return post({ id: fixedId('post', n), status: 'scheduled', scheduled_at: scheduledAt, variants, ...extra });
}

/** The item as the index holds it: in the minute bucket of `dueAt`. */
const indexedAt = (p: PostRecord, dueAt: string): Item => ({
  ...postItem(p),
  ...keys.dueWork(dueAt, p.org_id, p.id),
});

const batchesTo = (queue: string | undefined) =>
  sqs
    .commandCalls(SendMessageBatchCommand)
    .map((c) => c.args[0].input)
    .filter((i) => i.QueueUrl === queue);
const entriesTo = (queue: string | undefined) => batchesTo(queue).flatMap((b) => b.Entries ?? []);

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({});
  sqs.on(SendMessageCommand).resolves({});
});

describe('sweep: scheduled posts', () => {
  it('dispatches a post due within the lookahead once, with a delay for the rest of the wait, and writes no post', async () => {
    // Arrange: due in 40.5 s.
    const due = at(40.5);
    memoryTable([indexedAt(scheduled(1, due), due)]);

    // Act
    const result = await sweep(NOW);
    const again = await sweep(new Date(NOW.getTime() + 1000));

    // Assert
    expect(result).toEqual({ dispatched: 1, redriven: 0, watchFailed: 0, refunded: 0 });
    expect(again).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    const entries = entriesTo(process.env.SCHEDULE_QUEUE_URL);
    expect(entries).toHaveLength(1);
    expect(entries[0]?.DelaySeconds).toBe(40);
    expect(JSON.parse(entries[0]?.MessageBody ?? '')).toEqual({
      org_id: ORG_ID,
      post_id: fixedId('post', 1),
      scheduled_at: due,
    } satisfies DispatchMessage);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(storedItem(fixedId('post', 1))).toMatchObject({ status: 'scheduled', version: 1 });
    expect(cursor()).toBe(NOW.getTime() + 1000 + LOOKAHEAD_SECONDS * 1000);
    expect(batchesTo(process.env.DELIVERY_QUEUE_URL)).toHaveLength(0);
  });

  it('reads only the entries past the cursor (a range of the bucket), not the whole bucket', async () => {
    memoryTable([{ ...keys.sweepCursor(), through: NOW.getTime() + 100_000 }]);
    await sweep(NOW);
    const ranges = ddb
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input.ExpressionAttributeValues)
      .filter((v) => v?.[':to'] === `${at(LOOKAHEAD_SECONDS)}#~`);
    expect(ranges).toEqual([
      {
        ':p': 'DUE#2030-06-10T09:32',
        ':from': new Date(NOW.getTime() + 100_001).toISOString(),
        ':to': `${at(LOOKAHEAD_SECONDS)}#~`,
      },
    ]);
  });

  it('leaves alone a post due after the lookahead, even in a bucket the sweep reads', async () => {
    // Arrange: NOW + 120 s is 09:32:30; a post at 09:32:45 sits in the last bucket read.
    const due = at(LOOKAHEAD_SECONDS + 15);
    memoryTable([indexedAt(scheduled(1, due), due)]);

    // Act
    const result = await sweep(NOW);

    // Assert
    expect(result).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    const buckets = ddb
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input.ExpressionAttributeValues?.[':p']);
    expect(buckets).toContain(keys.dueWork(due, ORG_ID, 'x').gsi2pk);
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('after the sweeper stopped for hours, reads on from where it got to and dispatches what fell due meanwhile', async () => {
    // Arrange: the last sweep (of an older Herald: a minute cursor) got to 06:00; a post was due at 07:15.
    const due = at(-135 * 60);
    const minuteOf = (iso: string) => Math.floor(Date.parse(iso) / 60_000);
    memoryTable([
      indexedAt(scheduled(1, due), due),
      { ...keys.sweepCursor(), minute: minuteOf('2030-06-10T06:00:00.000Z') },
    ]);

    // Act
    const result = await sweep(NOW);

    // Assert
    expect(result.dispatched).toBe(1);
    const buckets = ddb
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input.ExpressionAttributeValues?.[':p']);
    expect(buckets[0]).toBe('DUE#2030-06-10T06:00');
    expect(entriesTo(process.env.SCHEDULE_QUEUE_URL)[0]?.DelaySeconds).toBe(0);
    // The cursor's moves (the data model mark is written beside them once per container).
    const moved = ddb
      .commandCalls(UpdateCommand)
      .map((c) => c.args[0].input)
      .filter((u) => u.Key?.pk === keys.sweepCursor().pk);
    expect(moved).toEqual([
      expect.objectContaining({
        Key: keys.sweepCursor(),
        ConditionExpression: 'attribute_not_exists(#through) OR #through < :t',
        // With when this sweep ran: GET /health tells a stopped sweeper by it.
        ExpressionAttributeValues: {
          ':t': NOW.getTime() + LOOKAHEAD_SECONDS * 1000,
          ':e': 'sweep_cursor',
          ':a0': NOW.getTime(),
        },
        ExpressionAttributeNames: { '#through': 'through', '#a0': 'swept_at' },
      }),
    ]);
  });

  it('leaves the cursor where it was when the sweep fails, so the next one reads the same entries', async () => {
    sqs.on(SendMessageBatchCommand).rejects(new Error('SQS down'));
    const due = at(30);
    memoryTable([indexedAt(scheduled(1, due), due)]);
    await expect(sweep(NOW)).rejects.toThrow('SQS down');
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('dispatches again, at most every REDISPATCH_SECONDS, a post still scheduled WATCHDOG_SECONDS after its time', async () => {
    // Arrange: a first sweep dispatches; the dispatch never acts (it went to the DLQ).
    const due = at(40);
    memoryTable([indexedAt(scheduled(1, due), due)]);
    await sweep(NOW);
    sqs.resetHistory();
    const later = (s: number) => new Date(Date.parse(due) + s * 1000);

    // Act
    const early = await sweep(later(WATCHDOG_SECONDS - 5));
    const late = await sweep(later(WATCHDOG_SECONDS + 1));
    const soon = await sweep(later(WATCHDOG_SECONDS + REDISPATCH_SECONDS - 5));
    const again = await sweep(later(WATCHDOG_SECONDS + REDISPATCH_SECONDS + 2));

    // Assert
    expect([early, late, soon, again].map((r) => r.dispatched)).toEqual([0, 1, 0, 1]);
    const entries = entriesTo(process.env.SCHEDULE_QUEUE_URL);
    expect(entries.map((e) => e.DelaySeconds)).toEqual([0, 0]);
    expect(JSON.parse(entries[0]?.MessageBody ?? '')).toMatchObject({ scheduled_at: due });
    expect(storedItem(fixedId('post', 1)).dispatched).toEqual({
      for: due,
      at: later(WATCHDOG_SECONDS + REDISPATCH_SECONDS + 2).toISOString(),
    });
    // The post stays where it is in the index: redispatching moves nothing.
    expect(storedItem(fixedId('post', 1))).toMatchObject(keys.dueWork(due, ORG_ID, fixedId('post', 1)));
  });

  it('skips the watchdog when told to (the handler runs it at most every WATCHDOG_EVERY_SECONDS)', async () => {
    // Arrange: a post whose dispatch was lost, past the watchdog's threshold.
    const due = at(40);
    memoryTable([indexedAt(scheduled(1, due), due)]);
    await sweep(NOW);
    sqs.resetHistory();
    const late = new Date(Date.parse(due) + (WATCHDOG_SECONDS + 1) * 1000);

    // Act
    const skipped = await sweep(late, { watch: false });
    const watched = await sweep(late, { watch: true });

    // Assert: only the sweep that watched re-dispatched it.
    expect([skipped.dispatched, watched.dispatched]).toEqual([0, 1]);
  });

  it('ignores an old index entry of a post rescheduled later (the dispatcher finds it stale)', async () => {
    const old = at(-WATCHDOG_SECONDS - 10);
    memoryTable([indexedAt(scheduled(1, at(3600)), old), { ...keys.sweepCursor(), through: NOW.getTime() }]);
    expect(await sweep(NOW)).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });
});

describe('sweep: the publishing watchdog', () => {
  const delivery = (channelId: string, patch: Partial<DeliveryRecord>): DeliveryRecord => ({
    channel_id: channelId,
    stage: 'queued',
    external_id: null,
    url: null,
    error: null,
    error_category: null,
    attempts: 0,
    updated_at: at(-300),
    round: 1,
    ...patch,
  });

  /** The cursor of a sweeper that already dispatched everything up to now. */
  const swept = { ...keys.sweepCursor(), through: NOW.getTime() };
  /** Where a post that started publishing WATCHDOG_SECONDS + 10 s ago sits in the index. */
  const entry = at(-WATCHDOG_SECONDS - 10);

  function watched(deliveries: DeliveryRecord[], watchAt: string): PostRecord {
    return post({
      id: fixedId('post', 7),
      status: 'publishing',
      round: 1,
      watch_at: watchAt,
      watch_entry: entry,
      variants: deliveries.map((d, i) => variant(d.channel_id, i + 1)),
      deliveries: Object.fromEntries(deliveries.map((d) => [d.channel_id, d])),
    });
  }

  const ch = (n: number) => fixedId('channel', n);

  it('re-sends lost and abandoned deliveries and moves the watchdog on', async () => {
    // Arrange
    const watchAt = at(-10);
    const p = watched(
      [
        delivery(ch(1), { stage: 'queued', updated_at: at(-300) }), // lost
        delivery(ch(2), { stage: 'sending', attempts: 1, lease_until: at(-1) }), // abandoned
        delivery(ch(3), { stage: 'sending', attempts: 1, lease_until: at(LEASE_SECONDS - 10) }), // live
        delivery(ch(4), { stage: 'queued', updated_at: at(-30) }), // recent: its message is in flight
        delivery(ch(5), { stage: 'retrying', attempts: 1, next_attempt_at: at(-120) }), // lost retry
        delivery(ch(6), { stage: 'retrying', attempts: 1, next_attempt_at: at(30) }), // not due
        delivery(ch(7), { stage: 'published', attempts: 1 }),
        delivery(ch(8), { stage: 'queued', round: 0 }), // another round
      ],
      watchAt,
    );
    memoryTable([indexedAt(p, entry), swept]);

    // Act
    const result = await sweep(NOW);

    // Assert
    expect(result).toEqual({ dispatched: 0, redriven: 3, watchFailed: 0, refunded: 0 });
    const sent = entriesTo(process.env.DELIVERY_QUEUE_URL).map((e) => JSON.parse(e.MessageBody ?? ''));
    expect(sent).toEqual(
      [ch(1), ch(2), ch(5)].map(
        (channel_id): DeliveryMessage => ({ org_id: ORG_ID, post_id: p.id, channel_id, round: 1 }),
      ),
    );
    const next = at(WATCHDOG_SECONDS);
    // The watchdog time moves; the index entry stays (no index write) while the sweeper still sees it.
    expect(storedItem(p.id)).toMatchObject({ watch_at: next, ...keys.dueWork(entry, ORG_ID, p.id) });
    expect(storedItem(p.id).deliveries).toEqual(p.deliveries);
  });

  it('leaves a publishing post alone until its watchdog time', async () => {
    // Arrange: the watchdog fires in 30 s (within the lookahead).
    const watchAt = at(30);
    const p = watched([delivery(ch(1), { stage: 'queued', updated_at: at(-600) })], watchAt);
    memoryTable([indexedAt(p, entry), swept]);

    // Act / Assert
    expect(await sweep(NOW)).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it("re-files the index entry when the watchdog time would leave the sweeper's 30-minute sight", async () => {
    const old = at(-24 * 60);
    const p = {
      ...watched([delivery(ch(1), { stage: 'queued', updated_at: at(-20) })], at(-10)),
      watch_entry: old,
    };
    memoryTable([indexedAt(p, old), swept]);
    await sweep(NOW);
    const next = at(WATCHDOG_SECONDS);
    expect(storedItem(p.id)).toMatchObject({ watch_entry: next, ...keys.dueWork(next, ORG_ID, p.id) });
  });

  it('moves the watchdog on without sending when nothing was lost', async () => {
    const watchAt = at(-10);
    const p = watched([delivery(ch(1), { stage: 'queued', updated_at: at(-20) })], watchAt);
    memoryTable([indexedAt(p, entry), swept]);

    expect(await sweep(NOW)).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
    expect(storedItem(p.id).watch_at).toBe(at(WATCHDOG_SECONDS));
  });
});

describe('sweep: credit reservations of AI generations', () => {
  const GEN = fixedId('generation', 1);
  const reservation = (dueAt: string, status = 'open'): Item => ({
    ...keys.generation(ORG_ID, GEN),
    ...(status === 'open' ? keys.dueWork(dueAt, ORG_ID, GEN) : {}),
    entity: 'generation',
    org_id: ORG_ID,
    id: GEN,
    period: '2030-06',
    credits: 7,
    status,
    due_at: dueAt,
  });

  beforeEach(() => {
    ddb.on(TransactWriteCommand).resolves({});
  });

  it('never dispatches a reservation that falls due within the lookahead', async () => {
    memoryTable([reservation(at(30))]);
    expect(await sweep(NOW)).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    expect(entriesTo(process.env.SCHEDULE_QUEUE_URL)).toHaveLength(0);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('refunds a reservation still open past its due time (its function died before settling)', async () => {
    memoryTable([reservation(at(-WATCHDOG_SECONDS - 60))]);

    expect(await sweep(NOW)).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 1 });

    const calls = ddb.commandCalls(TransactWriteCommand);
    expect(calls).toHaveLength(1);
    const [usage, closing] = calls[0]?.args[0].input.TransactItems ?? [];
    expect(usage?.Update).toMatchObject({
      Key: keys.usage(ORG_ID, '2030-06'),
      UpdateExpression: 'ADD ai_credits :n',
      ExpressionAttributeValues: { ':n': -7 },
    });
    expect(closing?.Update).toMatchObject({
      Key: keys.generation(ORG_ID, GEN),
      ConditionExpression: '#s = :open',
      ExpressionAttributeValues: { ':s': 'refunded', ':open': 'open' },
    });
    expect(entriesTo(process.env.SCHEDULE_QUEUE_URL)).toHaveLength(0);
  });

  it('leaves alone a reservation closed since its index entry was read', async () => {
    const due = at(-WATCHDOG_SECONDS - 60);
    memoryTable([{ ...reservation(due, 'settled'), ...keys.dueWork(due, ORG_ID, GEN) }]);
    expect(await sweep(NOW)).toEqual({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });
});

describe('dispatch', () => {
  const P = fixedId('post', 1);
  const message = (scheduledAt: string): DispatchMessage => ({
    org_id: ORG_ID,
    post_id: P,
    scheduled_at: scheduledAt,
  });

  it('sends one delivery message per channel, for the next round and the time it starts, waiting out the last fraction; writes nothing', async () => {
    // Arrange: due in 150 ms; the first channel published in an earlier round.
    const due = at(0.15);
    const p = scheduled(1, due, {
      round: 1,
      deliveries: {
        [CH1.id]: {
          channel_id: CH1.id,
          stage: 'published',
          external_id: 'x1',
          url: null,
          error: null,
          error_category: null,
          attempts: 1,
          updated_at: at(-600),
          round: 1,
        },
      },
    });
    memoryTable([indexedAt(p, due)]);
    const started = Date.now();

    // Act
    const outcome = await dispatch(message(due), clockAt(NOW));

    // Assert
    expect(outcome).toBe('started');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    const sent = entriesTo(process.env.DELIVERY_QUEUE_URL).map((e) => JSON.parse(e.MessageBody ?? ''));
    expect(sent).toEqual([
      {
        org_id: ORG_ID,
        post_id: P,
        channel_id: CH2.id,
        round: 2,
        start: due,
        // One channel to start: the message carries the post as read, for a claim without a read.
        snapshot: JSON.parse(JSON.stringify(p)),
      } satisfies DeliveryMessage,
    ]);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(storedItem(P)).toMatchObject({ status: 'scheduled', version: 1 });
  });

  it('dispatches a post whose time has already passed without waiting', async () => {
    const due = at(-5);
    memoryTable([indexedAt(scheduled(1, due), due)]);
    expect(await dispatch(message(due), clockAt(NOW))).toBe('started');
    expect(entriesTo(process.env.DELIVERY_QUEUE_URL)).toHaveLength(2);
  });

  it('is stale for a post rescheduled to another time, and writes nothing', async () => {
    // Arrange
    const due = at(0);
    memoryTable([indexedAt(scheduled(1, at(600)), at(600))]);

    // Act / Assert
    expect(await dispatch(message(due), clockAt(NOW))).toBe('stale');
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(storedItem(P).status).toBe('scheduled');
  });

  it('is stale for a deleted post', async () => {
    memoryTable([]);
    expect(await dispatch(message(at(0)), clockAt(NOW))).toBe('stale');
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('is stale for a post no longer scheduled (published by hand meanwhile)', async () => {
    const due = at(0);
    const p = startPublishing(scheduled(1, due), new Date(Date.parse(at(-60))));
    memoryTable([postItem(p)]);
    expect(await dispatch(message(due), clockAt(NOW))).toBe('stale');
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('sends a dispatch more than a second early on with the remaining delay', async () => {
    // Arrange
    const due = at(90.4);
    memoryTable([indexedAt(scheduled(1, due), due)]);

    // Act
    const outcome = await dispatch(message(due), clockAt(NOW));

    // Assert
    expect(outcome).toBe('deferred');
    expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input).toEqual({
      QueueUrl: process.env.SCHEDULE_QUEUE_URL,
      MessageBody: JSON.stringify(message(due)),
      DelaySeconds: 91,
    });
    expect(ddb.calls()).toHaveLength(0);
  });

  it('chains a wait longer than the SQS delay cap in steps of at most 900 s', async () => {
    const due = at(3600);
    memoryTable([indexedAt(scheduled(1, due), due)]);
    expect(await dispatch(message(due), clockAt(NOW))).toBe('deferred');
    expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input.DelaySeconds).toBe(900);
  });

  it('dispatches a queue batch with one read and one send: started, stale and deferred in order', async () => {
    // Arrange: two posts due now, one rescheduled away, one message a minute early.
    const due = at(0);
    const p2 = { ...scheduled(1, due), id: fixedId('post', 2) };
    const p3 = { ...scheduled(1, at(600)), id: fixedId('post', 3) };
    memoryTable([indexedAt(scheduled(1, due), due), indexedAt(p2, due), indexedAt(p3, at(600))]);
    const msgs = [
      message(due),
      { ...message(due), post_id: p2.id },
      { ...message(due), post_id: p3.id },
      message(at(60)),
    ];

    // Act
    const outcomes = await dispatchAll(msgs, clockAt(NOW));

    // Assert
    expect(outcomes).toEqual(['started', 'started', 'stale', 'deferred']);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(1);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(0);
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(1);
    const sent = entriesTo(process.env.DELIVERY_QUEUE_URL).map((e) => JSON.parse(e.MessageBody ?? ''));
    expect(sent.map((m: DeliveryMessage) => m.post_id)).toEqual([P, P, p2.id, p2.id]);
  });

  it('fails only the due messages of a batch whose send failed (they return to the queue)', async () => {
    const due = at(0);
    memoryTable([indexedAt(scheduled(1, due), due)]);
    sqs.on(SendMessageBatchCommand).rejects(new Error('SQS down'));
    const outcomes = await dispatchAll([message(due), message(at(60))], clockAt(NOW));
    expect(outcomes[0]).toBeInstanceOf(Error);
    expect(outcomes[1]).toBe('deferred');
  });
});
