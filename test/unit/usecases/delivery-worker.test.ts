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
import { type DeliveryRecord, type PostRecord, startPublishing } from '#core/posts';
import { LEASE_SECONDS, WATCHDOG_SECONDS } from '#core/timing';
import { deliver, latenessSeconds, RetryLaterError } from '#usecases/delivery-worker';
import { captureLines, emfOf, emfProblems } from '../support/emf.ts';
import { update as applyUpdate, condition } from '../support/expressions.ts';
import {
  channel,
  channelItem,
  fixedId,
  type Item,
  mediaAsset,
  mediaItem,
  ORG_ID,
  post,
  postItem,
  variant,
} from '../support/fixtures.ts';

// The delivery worker's use case against a tiny in-memory table (conditional writes as DynamoDB
// does them), a mocked SQS and a connector the test controls.

// Above SILENT, as the outcome lines are read (WARN: they are written at INFO all the same).
vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
});

const connector = vi.hoisted(() => ({
  publish: vi.fn<Connector['publish']>(),
  reconcile: vi.fn<Connector['reconcile']>(),
}));
vi.mock('#adapters/platforms/index', () => ({ connectorFor: async () => connector }));

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
/** The JSON lines the code under test writes (read by the outcome-line tests; kept out of the output). */
const lines = captureLines();

const NOW = new Date('2030-06-10T09:30:00.000Z');
const clock = () => NOW;
const at = (offsetSeconds: number) => new Date(NOW.getTime() + offsetSeconds * 1000).toISOString();

const CH1 = channel(1, 'bluesky');
const CH2 = channel(2, 'mastodon');
const POST_ID = fixedId('post', 1);
const MSG: DeliveryMessage = { org_id: ORG_ID, post_id: POST_ID, channel_id: CH1.id, round: 1 };
const RESULT = { externalId: 'at://did:plc:acme/app.bsky.feed.post/3k', url: 'https://bsky.app/p/3k' };

// ---- the in-memory table -------------------------------------------------------------------------

const idOf = (k: Record<string, unknown> | undefined) => `${String(k?.pk)}\u0000${String(k?.sk)}`;
/** A stored copy, as DynamoDB keeps it: no shared references, undefined attributes dropped. */
const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const conditionFailed = (current: Item | undefined, returnOld: string | undefined) =>
  Object.assign(
    new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} }),
    {
      ...(returnOld === 'ALL_OLD' && current ? { Item: copy(current) } : {}),
    },
  );

/**
 * GetItem, BatchGetItem, PutItem and UpdateItem over a Map, conditions and update expressions
 * evaluated as DynamoDB does (the unit tests' one evaluator, support/expressions.ts), with
 * ReturnValues and ReturnValuesOnConditionCheckFailure. `beforeWrite` hooks run, one per
 * Put/Update, before its condition is checked (a concurrent writer).
 */
function memoryTable(seed: Item[]) {
  const items = new Map<string, Item>(seed.map((i) => [idOf(i), copy(i)]));
  const beforeWrite: Array<() => void> = [];
  /** The item at `key` when the request's condition holds on it; throws as DynamoDB does otherwise. */
  const checked = (key: Item | undefined, input: PutCommandInput | UpdateCommandInput): Item | undefined => {
    const current = items.get(idOf(key));
    if (
      input.ConditionExpression &&
      !condition(
        input.ConditionExpression,
        input.ExpressionAttributeNames,
        input.ExpressionAttributeValues,
      )(current ?? {})
    )
      throw conditionFailed(current, input.ReturnValuesOnConditionCheckFailure);
    return current;
  };
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    const found = items.get(idOf(input.Key));
    return { Item: found ? copy(found) : undefined };
  });
  ddb.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
    const responses: Record<string, Item[]> = {};
    for (const [table, req] of Object.entries(input.RequestItems ?? {})) {
      responses[table] = (req.Keys ?? []).flatMap((k) => {
        const found = items.get(idOf(k));
        return found ? [copy(found)] : [];
      });
    }
    return { Responses: responses, UnprocessedKeys: {} };
  });
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    beforeWrite.shift()?.();
    const item = input.Item ?? {};
    checked(item, input);
    items.set(idOf(item), copy(item));
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    beforeWrite.shift()?.();
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
    items,
    beforeWrite,
    stored,
    delivery: (channelId = CH1.id) => stored().deliveries[channelId] as DeliveryRecord,
    /**
     * Rewrites the stored post as another writer would: a new version, and a new `rev` on every
     * delivery it changed (adapters/posts.ts).
     */
    change: (fn: (p: PostRecord) => PostRecord) => {
      const p = stored();
      const next = { ...p, ...fn(p), version: p.version + 1 };
      for (const [id, d] of Object.entries(next.deliveries))
        if (JSON.stringify(d) !== JSON.stringify(p.deliveries[id]))
          next.deliveries = { ...next.deliveries, [id]: { ...d, rev: `other-${next.version}` } };
      items.set(idOf(p), copy(next));
    },
  };
}

// ---- fixtures ----------------------------------------------------------------------------------

/** A post publishing round 1 to CH1 and CH2, both queued; `patch` adjusts the deliveries. */
function publishing(patch: Partial<Record<string, Partial<DeliveryRecord>>> = {}): PostRecord {
  const started = startPublishing(
    post({
      id: POST_ID,
      variants: [
        { ...variant(CH1.id, 1), body: 'Hello, world', options: { lang: 'en' } },
        variant(CH2.id, 2),
      ],
    }),
    new Date(NOW.getTime() - 5_000),
  );
  const deliveries = { ...started.deliveries };
  for (const [id, p] of Object.entries(patch))
    deliveries[id] = { ...(deliveries[id] as DeliveryRecord), ...p };
  return { ...started, deliveries };
}

const PUBLISHED: Partial<DeliveryRecord> = { stage: 'published', external_id: 'other', attempts: 1 };

function given(p: PostRecord) {
  return memoryTable([
    postItem(p),
    channelItem(CH1),
    channelItem(CH2),
    { ...keys.channelCredentials(ORG_ID, CH1.id), credentials: { token: 'tok-1' } },
  ]);
}

/** Writes of the post: whole-item Puts and one-delivery UpdateItems. */
const postWrites = () =>
  [...ddb.commandCalls(PutCommand), ...ddb.commandCalls(UpdateCommand)].filter(
    (c) =>
      (c.args[0].input as { Key?: Item; Item?: Item }).Key?.sk === keys.post(ORG_ID, POST_ID).sk ||
      (c.args[0].input as { Item?: Item }).Item?.sk === keys.post(ORG_ID, POST_ID).sk,
  ).length;
/** UpdateItems of anything but the post (the channel's health). */
const channelWrites = () =>
  ddb.commandCalls(UpdateCommand).filter((c) => c.args[0].input.Key?.sk !== keys.post(ORG_ID, POST_ID).sk);
const ctxOf = (fn: { mock: { calls: unknown[][] } }, call = 0) => fn.mock.calls[call]?.[0] as PublishContext;

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  sqs.on(SendMessageCommand).resolves({});
  sqs.on(SendMessageBatchCommand).resolves({});
  connector.publish.mockReset();
  connector.reconcile.mockReset();
});

describe('deliver: the primary course', () => {
  it('claims the delivery, publishes once through the connector and records the result', async () => {
    // Arrange
    const table = given(publishing());
    connector.publish.mockResolvedValue(RESULT);

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('published');
    expect(connector.publish).toHaveBeenCalledTimes(1);
    expect(connector.reconcile).not.toHaveBeenCalled();
    expect(ctxOf(connector.publish)).toMatchObject({
      channel: { id: CH1.id, handle: CH1.handle, platform: 'bluesky' },
      credentials: { token: 'tok-1' },
      text: 'Hello, world',
      options: { lang: 'en' },
      media: [],
      idempotencyKey: `${POST_ID}.${CH1.id}`,
      checkpoint: null,
      attemptStartedAt: NOW,
    });
    const d = table.delivery();
    expect(d).toMatchObject({
      stage: 'published',
      external_id: RESULT.externalId,
      url: RESULT.url,
      attempts: 1,
      error: null,
      round: 1,
    });
    expect(d.claim_id).toBeUndefined();
    expect(d.lease_until).toBeUndefined();
    // CH2 is still queued: the post keeps publishing.
    expect(table.stored().status).toBe('publishing');
    expect(postWrites()).toBe(2); // the claim, then the outcome
  });

  it('holds the delivery under a lease while the connector publishes', async () => {
    // Arrange
    const table = given(publishing());
    let during: DeliveryRecord | undefined;
    connector.publish.mockImplementation(async () => {
      during = table.delivery();
      return RESULT;
    });

    // Act
    await deliver(MSG, clock);

    // Assert
    expect(during).toMatchObject({
      stage: 'sending',
      attempts: 1,
      lease_until: at(LEASE_SECONDS),
      attempt_started_at: NOW.toISOString(),
    });
    expect(during?.claim_id).toEqual(expect.any(String));
  });

  it('publishes the post when its last delivery is published, and indexes it for engagement sync', async () => {
    // Arrange: CH2 already published.
    const table = given(publishing({ [CH2.id]: PUBLISHED }));
    connector.publish.mockResolvedValue(RESULT);

    // Act
    await deliver(MSG, clock);

    // Assert
    const stored = table.stored();
    expect(stored).toMatchObject({
      status: 'published',
      published_at: NOW.toISOString(),
      watch_at: null,
      gsi1pk: `ORG#${ORG_ID}#POSTS#published`,
      gsi2pk: `SYNC#${NOW.toISOString().slice(0, 10)}`,
      gsi2sk: `${NOW.toISOString()}#${ORG_ID}#${POST_ID}`,
    });
  });
});

describe("deliver: a dispatch's snapshot (a one-channel post starting)", () => {
  const DUE = at(-1);
  const scheduledPost = (): PostRecord =>
    post({ id: POST_ID, status: 'scheduled', scheduled_at: DUE, variants: [variant(CH1.id, 1)] });
  const startMsg = (snapshot: PostRecord): DeliveryMessage => ({ ...MSG, start: DUE, snapshot });
  const postReads = () =>
    ddb.commandCalls(GetCommand).filter((c) => c.args[0].input.Key?.sk === keys.post(ORG_ID, POST_ID).sk);

  it('claims and starts the post against the snapshot, and records the outcome, without reading the post', async () => {
    const table = given(scheduledPost());
    connector.publish.mockResolvedValue(RESULT);

    expect(await deliver(startMsg(scheduledPost()), clock)).toBe('published');

    expect(postReads()).toHaveLength(0);
    expect(postWrites()).toBe(2);
    expect(connector.publish).toHaveBeenCalledTimes(1);
    expect(table.stored()).toMatchObject({ status: 'published', round: 1, version: 3 });
  });

  it('a stale snapshot (rescheduled since): the version check fails, the claim decides on the post it returns and skips; nothing is sent', async () => {
    const table = given(scheduledPost());
    table.change((p) => ({ ...p, scheduled_at: at(3600) }));

    expect(await deliver(startMsg(scheduledPost()), clock)).toBe('skipped');

    expect(connector.publish).not.toHaveBeenCalled();
    // The refused write handed back the post as it is (ALL_OLD): no read.
    expect(postReads()).toHaveLength(0);
    expect(table.stored()).toMatchObject({ status: 'scheduled', scheduled_at: at(3600), version: 2 });
  });

  it('a retry is sent without the snapshot (its writes made it stale)', async () => {
    given(scheduledPost());
    connector.publish.mockRejectedValue(new PlatformError('system', 'HTTP 503', { retryable: true }));

    expect(await deliver(startMsg(scheduledPost()), clock)).toBe('retrying');

    const [sent] = sqs.commandCalls(SendMessageCommand);
    const body = JSON.parse(sent?.args[0].input.MessageBody ?? '{}');
    expect(body).toEqual({ ...MSG, start: DUE, due: expect.any(String) });
  });

  it('the same message twice: the second finds the snapshot stale, reads, and sends nothing again', async () => {
    const table = given(scheduledPost());
    connector.publish.mockResolvedValue(RESULT);
    const msg = startMsg(scheduledPost());

    await deliver(msg, clock);
    expect(await deliver(msg, clock)).toBe('skipped');

    expect(connector.publish).toHaveBeenCalledTimes(1);
    expect(table.stored()).toMatchObject({ status: 'published', version: 3 });
  });
});

describe('deliver: duplicated and stale messages', () => {
  it('asks to retry later, without publishing, while another worker holds a live lease', async () => {
    // Arrange
    const table = given(
      publishing({
        [CH1.id]: { stage: 'sending', attempts: 1, claim_id: 'other-worker', lease_until: at(60) },
      }),
    );

    // Act / Assert
    await expect(deliver(MSG, clock)).rejects.toBeInstanceOf(RetryLaterError);
    expect(connector.publish).not.toHaveBeenCalled();
    expect(connector.reconcile).not.toHaveBeenCalled();
    expect(postWrites()).toBe(0);
    expect(table.delivery().claim_id).toBe('other-worker');
  });

  it('skips a delivery that is already published', async () => {
    given(publishing({ [CH1.id]: PUBLISHED }));
    expect(await deliver(MSG, clock)).toBe('skipped');
    expect(connector.publish).not.toHaveBeenCalled();
    expect(postWrites()).toBe(0);
  });

  it('skips a delivery that already failed for good', async () => {
    given(publishing({ [CH1.id]: { stage: 'failed', attempts: MAX_ATTEMPTS } }));
    expect(await deliver(MSG, clock)).toBe('skipped');
    expect(connector.publish).not.toHaveBeenCalled();
  });

  it('skips a message of an earlier round', async () => {
    // Arrange: the post was republished (round 2); the message is of round 1.
    const p = publishing();
    given({
      ...p,
      round: 2,
      deliveries: Object.fromEntries(Object.entries(p.deliveries).map(([k, d]) => [k, { ...d, round: 2 }])),
    });

    // Act / Assert
    expect(await deliver(MSG, clock)).toBe('skipped');
    expect(connector.publish).not.toHaveBeenCalled();
    expect(postWrites()).toBe(0);
  });

  it('skips a message for a post that no longer exists', async () => {
    memoryTable([]);
    expect(await deliver(MSG, clock)).toBe('skipped');
    expect(connector.publish).not.toHaveBeenCalled();
  });

  it('re-queues a retry that is not due yet (a hint longer than the SQS delay cap) instead of sending', async () => {
    // Arrange: the retry is due in 10 minutes; this is its own message (it carries that time).
    const due = at(600);
    given(publishing({ [CH1.id]: { stage: 'retrying', attempts: 1, next_attempt_at: due } }));
    const chain: DeliveryMessage = { ...MSG, due };

    // Act
    const outcome = await deliver(chain, clock);

    // Assert: the delay is measured on the worker's clock.
    expect(outcome).toBe('skipped');
    expect(connector.publish).not.toHaveBeenCalled();
    expect(sqs.commandCalls(SendMessageCommand)[0]?.args[0].input).toEqual({
      QueueUrl: process.env.DELIVERY_QUEUE_URL,
      MessageBody: JSON.stringify(chain),
      DelaySeconds: 600,
    });
  });

  it('drops a stray copy of the message that finds a retry not due yet (the retry has its own)', async () => {
    given(publishing({ [CH1.id]: { stage: 'retrying', attempts: 1, next_attempt_at: at(600) } }));

    expect(await deliver(MSG, clock)).toBe('skipped');
    expect(await deliver({ ...MSG, due: at(300) }, clock)).toBe('skipped');

    expect(connector.publish).not.toHaveBeenCalled();
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });
});

describe('deliver: recovering an attempt that died mid-send', () => {
  const abandoned: Partial<DeliveryRecord> = {
    stage: 'sending',
    attempts: 2,
    claim_id: 'dead-worker',
    lease_until: at(-1),
    attempt_started_at: at(-120),
  };

  it('reconciles first and does not publish again when the platform already has the post', async () => {
    // Arrange
    const table = given(publishing({ [CH1.id]: abandoned }));
    connector.reconcile.mockResolvedValue(RESULT);

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('published');
    expect(connector.reconcile).toHaveBeenCalledTimes(1);
    expect(connector.publish).not.toHaveBeenCalled();
    expect(ctxOf(connector.reconcile)).toMatchObject({
      idempotencyKey: `${POST_ID}.${CH1.id}`,
      attemptStartedAt: new Date(at(-120)),
    });
    expect(table.delivery()).toMatchObject({
      stage: 'published',
      external_id: RESULT.externalId,
      attempts: 2,
    });
  });

  it('publishes after reconciling when the platform does not have the post', async () => {
    // Arrange
    const table = given(publishing({ [CH1.id]: abandoned }));
    connector.reconcile.mockResolvedValue(null);
    connector.publish.mockResolvedValue(RESULT);

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('published');
    expect(connector.publish).toHaveBeenCalledTimes(1);
    const [reconciled] = connector.reconcile.mock.invocationCallOrder;
    const [published] = connector.publish.mock.invocationCallOrder;
    expect(reconciled).toBeLessThan(published as number);
    expect(table.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
  });

  it('does not reconcile a fresh attempt', async () => {
    given(publishing());
    connector.publish.mockResolvedValue(RESULT);
    await deliver(MSG, clock);
    expect(connector.reconcile).not.toHaveBeenCalled();
  });

  const later = () => new Date(NOW.getTime() + 60_000);

  it('an answer lost after the request left (a 5xx): the next attempt reconciles from this one’s start', async () => {
    // Arrange
    const table = given(publishing());
    connector.publish.mockRejectedValueOnce(new PlatformError('system', 'HTTP 504', { status: 504 }));
    connector.reconcile.mockResolvedValue(RESULT);

    // Act
    await deliver(MSG, clock);
    const between = table.delivery();
    const outcome = await deliver(MSG, later);

    // Assert
    expect(between).toMatchObject({ stage: 'retrying', unresolved_since: NOW.toISOString() });
    expect(outcome).toBe('published');
    expect(connector.publish).toHaveBeenCalledTimes(1);
    expect(ctxOf(connector.reconcile).attemptStartedAt).toEqual(NOW);
    expect(table.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
    expect(table.delivery().unresolved_since).toBeUndefined();
  });

  it('a refusal (429) or a failure before the platform was called: the next attempt does not reconcile', async () => {
    const table = given(publishing());
    connector.publish.mockRejectedValueOnce(new PlatformError('rate_limited', '429', { status: 429 }));
    await deliver(MSG, clock);
    expect(table.delivery().unresolved_since).toBeUndefined();
    connector.publish.mockResolvedValue(RESULT);
    expect(await deliver(MSG, () => new Date(NOW.getTime() + 3_600_000))).toBe('published');
    expect(connector.reconcile).not.toHaveBeenCalled();
  });

  it('a reconcile that finds nothing settles the earlier attempt, even when this one is then held back', async () => {
    // Arrange: unresolved, due now; the reconcile finds nothing; publish meets a 429 (a refusal).
    const table = given(
      publishing({
        [CH1.id]: {
          stage: 'retrying',
          attempts: 1,
          next_attempt_at: NOW.toISOString(),
          unresolved_since: at(-600),
        },
      }),
    );
    connector.reconcile.mockResolvedValue(null);
    connector.publish.mockRejectedValue(new PlatformError('rate_limited', '429', { status: 429 }));

    // Act
    await deliver(MSG, clock);

    // Assert
    expect(ctxOf(connector.reconcile).attemptStartedAt).toEqual(new Date(at(-600)));
    expect(table.delivery()).toMatchObject({ stage: 'retrying', attempts: 2 });
    expect(table.delivery().unresolved_since).toBeUndefined();
  });

  it('a reconcile that cannot tell keeps the delivery unresolved, and publishes nothing', async () => {
    const table = given(
      publishing({
        [CH1.id]: {
          stage: 'retrying',
          attempts: 1,
          next_attempt_at: NOW.toISOString(),
          unresolved_since: at(-600),
        },
      }),
    );
    connector.reconcile.mockRejectedValue(
      new PlatformError('rate_limited', 'x: lookup 429', { status: 429, retryAfterSeconds: 900 }),
    );

    expect(await deliver(MSG, clock)).toBe('retrying');

    expect(connector.publish).not.toHaveBeenCalled();
    expect(table.delivery()).toMatchObject({ stage: 'retrying', unresolved_since: at(-600) });
  });
});

describe('deliver: failed attempts', () => {
  it('retries a rate-limited attempt after the platform hint, through a delayed delivery message', async () => {
    // Arrange
    const table = given(publishing());
    connector.publish.mockRejectedValue(
      new PlatformError('rate_limited', 'slow down', { retryAfterSeconds: 30, status: 429 }),
    );

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('retrying');
    expect(table.delivery()).toMatchObject({
      stage: 'retrying',
      attempts: 1,
      error: 'slow down',
      error_category: 'rate_limited',
      next_attempt_at: at(30),
    });
    expect(table.delivery().claim_id).toBeUndefined();
    // Due again before the watchdog looks (started 5 s ago): the watch time stands, no second write.
    expect(table.stored()).toMatchObject({ status: 'publishing', watch_at: at(-5 + WATCHDOG_SECONDS) });
    const sent = sqs.commandCalls(SendMessageCommand);
    expect(sent).toHaveLength(1);
    expect(sent[0]?.args[0].input).toEqual({
      QueueUrl: process.env.DELIVERY_QUEUE_URL,
      MessageBody: JSON.stringify({ ...MSG, due: at(30) }),
      DelaySeconds: 30,
    });
  });

  it('fails the delivery for good after the last attempt, without another message', async () => {
    // Arrange: attempt MAX_ATTEMPTS is due now; CH2 is published.
    const table = given(
      publishing({
        [CH1.id]: { stage: 'retrying', attempts: MAX_ATTEMPTS - 1, next_attempt_at: NOW.toISOString() },
        [CH2.id]: PUBLISHED,
      }),
    );
    connector.publish.mockRejectedValue(
      new PlatformError('rate_limited', 'slow down', { retryAfterSeconds: 30 }),
    );

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('failed');
    expect(table.delivery()).toMatchObject({
      stage: 'failed',
      attempts: MAX_ATTEMPTS,
      error_category: 'rate_limited',
    });
    expect(table.delivery().next_attempt_at).toBeUndefined();
    expect(table.stored().status).toBe('failed');
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });

  it('fails the delivery and marks the channel reauth_required when the platform refuses the tokens', async () => {
    // Arrange
    const table = given(publishing());
    connector.publish.mockRejectedValue(new PlatformError('auth_expired', 'token revoked', { status: 401 }));

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('failed');
    expect(table.delivery()).toMatchObject({
      stage: 'failed',
      attempts: 1,
      error: 'token revoked',
      error_category: 'auth_expired',
    });
    const updates = channelWrites();
    expect(updates).toHaveLength(1);
    expect(updates[0]?.args[0].input).toMatchObject({ Key: keys.channel(ORG_ID, CH1.id) });
    expect(table.items.get(idOf(keys.channel(ORG_ID, CH1.id)))).toMatchObject({
      status: 'reauth_required',
      last_error: 'token revoked',
      last_sync_at: NOW.toISOString(),
      // Still in the sync index: looked at again in an hour.
      next_sync_at: new Date(NOW.getTime() + 3600_000).toISOString(),
    });
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });

  it('a delivery whose variant is gone fails as a system error and leaves the live channel alone', async () => {
    // Arrange: the post's variant for CH1 was removed (the message outlived it).
    const p = publishing();
    const table = given({ ...p, variants: p.variants.filter((v) => v.channel_id !== CH1.id) });

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('failed');
    expect(table.delivery()).toMatchObject({ stage: 'failed', error_category: 'system' });
    expect(table.items.get(idOf(keys.channel(ORG_ID, CH1.id)))).toMatchObject({ status: 'live' });
    expect(connector.publish).not.toHaveBeenCalled();
  });

  it('fails a content error at once, on the first attempt', async () => {
    // Arrange
    const table = given(publishing());
    connector.publish.mockRejectedValue(new PlatformError('user_content', 'text too long', { status: 400 }));

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('failed');
    expect(table.delivery()).toMatchObject({ stage: 'failed', attempts: 1, error_category: 'user_content' });
    expect(channelWrites()).toHaveLength(0);
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });

  it('treats an unexpected connector error as a retryable system error', async () => {
    // Arrange
    const table = given(publishing());
    connector.publish.mockRejectedValue(new TypeError('socket hang up'));

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('retrying');
    expect(table.delivery()).toMatchObject({
      stage: 'retrying',
      error: 'socket hang up',
      error_category: 'system',
    });
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(1);
  });

  it('fails the delivery when the channel was disconnected, without calling the platform', async () => {
    // Arrange
    const table = given(publishing());
    const ch = idOf(keys.channel(ORG_ID, CH1.id));
    table.items.set(ch, { ...(table.items.get(ch) as Item), status: 'disconnected' });

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).toBe('failed');
    expect(connector.publish).not.toHaveBeenCalled();
    expect(table.delivery()).toMatchObject({ stage: 'failed', error_category: 'auth_expired' });
    expect(String(table.delivery().error)).toMatch(/disconnected/);
  });
});

describe('deliver: checkpoints', () => {
  it('persists a checkpoint on the delivery and hands it to the next attempt', async () => {
    // Arrange: the first attempt saves a checkpoint, then is rate limited.
    const table = given(publishing());
    let savedDuring: DeliveryRecord['checkpoint'];
    connector.publish.mockImplementationOnce(async (ctx) => {
      await ctx.saveCheckpoint({ container: 'c-1' });
      savedDuring = table.delivery().checkpoint;
      throw new PlatformError('rate_limited', 'slow down', { retryAfterSeconds: 30 });
    });
    connector.publish.mockResolvedValueOnce(RESULT);

    // Act
    await deliver(MSG, clock);
    const retryClock = () => new Date(Date.parse(at(31)));
    const second = await deliver(MSG, retryClock);

    // Assert
    expect(savedDuring).toEqual({ container: 'c-1' });
    expect(table.delivery()).toMatchObject({ stage: 'published', attempts: 2, checkpoint: null });
    expect(second).toBe('published');
    expect(ctxOf(connector.publish, 1).checkpoint).toEqual({ container: 'c-1' });
  });

  it('does not write a checkpoint once another attempt has taken the delivery over', async () => {
    // Arrange: while publishing, another worker takes the delivery over (our lease ran out).
    const table = given(publishing());
    let saving: Promise<void> | undefined;
    connector.publish.mockImplementation(async (ctx) => {
      table.change((p) => ({
        ...p,
        deliveries: {
          ...p.deliveries,
          [CH1.id]: { ...(p.deliveries[CH1.id] as DeliveryRecord), claim_id: 'new-owner' },
        },
      }));
      saving = ctx.saveCheckpoint({ container: 'c-1' });
      await saving;
      return RESULT;
    });

    // Act
    await deliver(MSG, clock);

    // Assert: the new owner's delivery is untouched by the old attempt.
    await expect(saving).rejects.toThrow(/taken over/);
    const d = table.delivery();
    expect(d.checkpoint).toBeUndefined();
    expect(d).toMatchObject({ stage: 'sending', claim_id: 'new-owner', external_id: null });
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });

  it('leaves the delivery and its retry message to the new owner when a failed attempt lost its claim', async () => {
    // Arrange: the new owner already scheduled its own retry; then our attempt fails.
    const table = given(publishing());
    connector.publish.mockImplementation(async () => {
      table.change((p) => ({
        ...p,
        deliveries: {
          ...p.deliveries,
          [CH1.id]: {
            ...(p.deliveries[CH1.id] as DeliveryRecord),
            stage: 'retrying',
            claim_id: undefined,
            error: 'theirs',
            next_attempt_at: at(60),
          },
        },
      }));
      throw new PlatformError('rate_limited', 'ours', { retryAfterSeconds: 5 });
    });

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert
    expect(outcome).not.toBe('retrying');
    expect(table.delivery()).toMatchObject({ stage: 'retrying', error: 'theirs', next_attempt_at: at(60) });
    expect(sqs.commandCalls(SendMessageCommand)).toHaveLength(0);
  });
});

describe('deliver: concurrent writers', () => {
  it("a sibling channel's write landing before our claim is no conflict: claimed at once, the other change kept", async () => {
    // Arrange: just before our claim is written, CH2's worker records its publication.
    const table = given(publishing());
    table.beforeWrite.push(() =>
      table.change((p) => ({
        ...p,
        deliveries: {
          ...p.deliveries,
          [CH2.id]: { ...(p.deliveries[CH2.id] as DeliveryRecord), ...PUBLISHED },
        },
      })),
    );
    connector.publish.mockResolvedValue(RESULT);

    // Act
    const outcome = await deliver(MSG, clock);

    // Assert: our outcome saw CH2 published (the claim's ALL_NEW), so it published the post too.
    expect(outcome).toBe('published');
    expect(connector.publish).toHaveBeenCalledTimes(1);
    expect(postWrites()).toBe(2); // the claim, the outcome (with the post's status)
    const stored = table.stored();
    expect(stored.deliveries[CH2.id]).toMatchObject({ stage: 'published', external_id: 'other' });
    expect(stored.deliveries[CH1.id]).toMatchObject({ stage: 'published', external_id: RESULT.externalId });
    expect(stored.status).toBe('published');
    expect(stored.version).toBe(4); // seed 1, the other writer 2, our claim 3, our outcome 4
  });

  it('a claim that lost to a copy of its own message (the same delivery) decides again on the post the refusal returned', async () => {
    // Arrange: just before our claim is written, another worker claims CH1.
    const table = given(publishing());
    table.beforeWrite.push(() =>
      table.change((p) => ({
        ...p,
        deliveries: {
          ...p.deliveries,
          [CH1.id]: {
            ...(p.deliveries[CH1.id] as DeliveryRecord),
            stage: 'sending',
            claim_id: 'other-worker',
            lease_until: at(LEASE_SECONDS),
            attempts: 1,
          },
        },
      })),
    );

    // Act / Assert: busy (the other holds a live lease); nothing sent, its claim untouched.
    await expect(deliver(MSG, clock)).rejects.toBeInstanceOf(RetryLaterError);
    expect(connector.publish).not.toHaveBeenCalled();
    expect(table.delivery()).toMatchObject({ claim_id: 'other-worker', attempts: 1 });
    expect(postWrites()).toBe(1); // our refused claim
  });

  it('the last two deliveries going final at once, each seeing the other pending: the later one settles the post', async () => {
    // Arrange: CH2 is sending (another worker); it records its publication just before our outcome.
    const table = given(publishing({ [CH2.id]: { stage: 'sending', claim_id: 'ch2-worker', attempts: 1 } }));
    connector.publish.mockImplementation(async () => {
      table.beforeWrite.push(() =>
        table.change((p) => ({
          ...p,
          deliveries: {
            ...p.deliveries,
            [CH2.id]: { ...(p.deliveries[CH2.id] as DeliveryRecord), ...PUBLISHED, claim_id: undefined },
          },
        })),
      );
      return RESULT;
    });

    // Act
    expect(await deliver(MSG, clock)).toBe('published');

    // Assert: our outcome's ALL_NEW showed both final, so we published the post (a second write).
    const stored = table.stored();
    expect(stored).toMatchObject({ status: 'published', published_at: NOW.toISOString(), watch_at: null });
    expect(stored.gsi1pk).toBe(`ORG#${ORG_ID}#POSTS#published`);
    expect(postWrites()).toBe(3); // the claim, the outcome, the post's status
  });

  it('a long wait moves the watchdog time past the retry, on the outcome write itself', async () => {
    const table = given(publishing());
    connector.publish.mockRejectedValue(
      new PlatformError('rate_limited', 'slow down', { retryable: true, retryAfterSeconds: 3600 }),
    );

    expect(await deliver(MSG, clock)).toBe('retrying');

    expect(table.stored()).toMatchObject({ status: 'publishing', watch_at: at(3600 + WATCHDOG_SECONDS) });
    expect(postWrites()).toBe(2); // the claim, the outcome (with the watch time)
  });
});

describe('deliver: outcome lines (the log line that is the metric)', () => {
  const ids = { org_id: ORG_ID, post_id: POST_ID, channel_id: CH1.id, platform: 'bluesky' };
  const single = () => {
    const m = lines.metrics();
    expect(m).toHaveLength(1);
    expect(emfProblems(m[0] as Record<string, unknown>)).toEqual([]);
    return m[0] as Record<string, unknown>;
  };

  it('a publication: DeliveryPublished and its lateness from when publishing was asked for, per platform', async () => {
    given(publishing()); // asked for 5 s before NOW
    connector.publish.mockResolvedValue(RESULT);

    expect(await deliver(MSG, clock)).toBe('published');

    const line = single();
    expect(line).toMatchObject({
      ...ids,
      level: 'INFO',
      message: 'delivery published',
      outcome: 'published',
      attempt: 1,
      lateness_seconds: 5,
      DeliveryPublished: 1,
      PublishLateness: 5,
    });
    expect(emfOf(line).dimensions).toEqual([['platform'], []]);
  });

  it("a scheduled post's lateness runs from its scheduled time, not from when the dispatch reached the worker", async () => {
    const due = at(-2);
    const scheduled = post({
      id: POST_ID,
      status: 'scheduled',
      scheduled_at: due,
      variants: [variant(CH1.id, 1)],
    });
    given(scheduled);
    connector.publish.mockResolvedValue(RESULT);

    expect(await deliver({ ...MSG, start: due }, clock)).toBe('published');

    expect(single()).toMatchObject({ ...ids, PublishLateness: 2, lateness_seconds: 2 });
  });

  it('a failed attempt that runs again: DeliveryRetried with its category, the error and when', async () => {
    given(publishing());
    connector.publish.mockRejectedValue(
      new PlatformError('rate_limited', 'slow down', { retryAfterSeconds: 30, status: 429 }),
    );

    expect(await deliver(MSG, clock)).toBe('retrying');

    const line = single();
    expect(line).toMatchObject({
      ...ids,
      level: 'INFO',
      message: 'delivery retrying',
      outcome: 'retrying',
      category: 'rate_limited',
      error: 'slow down',
      attempt: 1,
      next_attempt_at: at(30),
      DeliveryRetried: 1,
    });
    expect(emfOf(line)).toEqual({
      dimensions: [['platform'], []],
      metrics: { DeliveryRetried: { unit: 'Count', value: 1 } },
    });
  });

  it('the last attempt failing: DeliveryFailed per platform and category, at WARN, and no retry counted', async () => {
    given(
      publishing({
        [CH1.id]: { stage: 'retrying', attempts: MAX_ATTEMPTS - 1, next_attempt_at: NOW.toISOString() },
      }),
    );
    connector.publish.mockRejectedValue(
      new PlatformError('rate_limited', 'slow down', { retryAfterSeconds: 30 }),
    );

    expect(await deliver(MSG, clock)).toBe('failed');

    const line = single();
    expect(line).toMatchObject({
      ...ids,
      level: 'WARN',
      message: 'delivery failed',
      outcome: 'failed',
      category: 'rate_limited',
      attempt: MAX_ATTEMPTS,
      DeliveryFailed: 1,
    });
    expect(emfOf(line).dimensions).toEqual([['platform', 'category'], ['platform'], []]);
  });

  it("a disconnected channel's delivery fails under its platform, without a platform call", async () => {
    const table = given(publishing());
    const ch = idOf(keys.channel(ORG_ID, CH1.id));
    table.items.set(ch, { ...(table.items.get(ch) as Item), status: 'disconnected' });

    expect(await deliver(MSG, clock)).toBe('failed');

    expect(single()).toMatchObject({ ...ids, category: 'auth_expired', DeliveryFailed: 1 });
  });

  it('a duplicate that finds nothing to do, or an attempt that lost its claim, counts nothing', async () => {
    given(publishing({ [CH1.id]: PUBLISHED }));
    expect(await deliver(MSG, clock)).toBe('skipped');

    // Our attempt fails after a new owner took the delivery over and scheduled its own retry.
    const taken = given(publishing());
    connector.publish.mockImplementation(async () => {
      taken.change((p) => ({
        ...p,
        deliveries: {
          ...p.deliveries,
          [CH1.id]: { ...(p.deliveries[CH1.id] as DeliveryRecord), stage: 'retrying', claim_id: undefined },
        },
      }));
      throw new PlatformError('rate_limited', 'ours', { retryAfterSeconds: 5 });
    });
    expect(await deliver(MSG, clock)).not.toBe('retrying');

    expect(lines.metrics()).toEqual([]);
  });
});

describe('latenessSeconds', () => {
  const started = publishing(); // started 5 s before NOW
  it('a round its dispatch started runs from the scheduled time; any other from its start', () => {
    const dispatched = { ...started, dispatched: { for: at(-60), at: at(-5), round: 1 } };
    expect(latenessSeconds(dispatched, NOW)).toBe(60);
    // A republished post: the dispatch was an earlier round's.
    expect(latenessSeconds({ ...dispatched, round: 2 }, NOW)).toBe(5);
    expect(latenessSeconds({ ...started, started_at: undefined }, NOW)).toBeNull();
  });
});

describe('deliver: the platform app settings a connector honours', () => {
  const seed = (platform: 'tiktok' | 'bluesky', app: Item | null) =>
    memoryTable([
      postItem(publishing()),
      channelItem(channel(1, platform)),
      channelItem(CH2),
      { ...keys.channelCredentials(ORG_ID, CH1.id), credentials: { token: 'tok-1' } },
      ...(app ? [{ ...keys.platformApp('tiktok'), entity: 'platform_app', platform: 'tiktok', ...app }] : []),
    ]);

  it.each([
    ['an audited TikTok app', { audited: true }, { audited: true }],
    ['a TikTok app not marked audited', {}, { audited: false }],
    ['no TikTok app at all', null, { audited: false }],
  ])('%s → ctx.app %j', async (_name, app, expected) => {
    seed('tiktok', app);
    connector.publish.mockResolvedValue(RESULT);
    expect(await deliver(MSG, clock)).toBe('published');
    expect(ctxOf(connector.publish).app).toEqual(expected);
  });

  it("options.thumbnail_url reaches the root's connector call as the asset, read by its key", async () => {
    const asset = mediaAsset({
      status: 'ready',
      content_type: 'image/jpeg',
      filename: 't.jpg',
      size_bytes: 900,
    });
    const video = mediaAsset({
      id: fixedId('media', 2),
      status: 'ready',
      kind: 'video',
      content_type: 'video/mp4',
      filename: 'v.mp4',
    });
    const p = publishing();
    const withThumb: PostRecord = {
      ...p,
      variants: p.variants.map((v) =>
        v.channel_id === CH1.id
          ? {
              ...v,
              media: [{ url: video.url, type: 'video', alt: '' }],
              options: { thumbnail_url: asset.url },
            }
          : v,
      ),
    };
    memoryTable([
      postItem(withThumb),
      channelItem(channel(1, 'youtube')),
      channelItem(CH2),
      { ...keys.channelCredentials(ORG_ID, CH1.id), credentials: { token: 'tok-1' } },
      mediaItem(asset),
      mediaItem(video),
    ]);
    connector.publish.mockResolvedValue(RESULT);
    await deliver(MSG, clock);
    expect(ctxOf(connector.publish).thumbnail).toMatchObject({
      type: 'image',
      url: asset.url,
      contentType: 'image/jpeg',
      filename: 't.jpg',
      sizeBytes: 900,
    });
    // The thumbnail is not one of the part's media, and both are read in one BatchGet.
    expect(ctxOf(connector.publish).media.map((m) => m.url)).toEqual([video.url]);
    expect(
      ddb.commandCalls(BatchGetCommand).filter((c) => JSON.stringify(c.args[0].input).includes('MEDIA#')),
    ).toHaveLength(1);
  });

  it('no thumbnail_url, no thumbnail', async () => {
    seed('bluesky', null);
    connector.publish.mockResolvedValue(RESULT);
    await deliver(MSG, clock);
    expect(ctxOf(connector.publish)).not.toHaveProperty('thumbnail');
  });

  it('a platform without such settings reads none', async () => {
    seed('bluesky', { audited: true });
    connector.publish.mockResolvedValue(RESULT);
    await deliver(MSG, clock);
    expect(ctxOf(connector.publish).app).toBeUndefined();
    expect(
      ddb.commandCalls(BatchGetCommand).some((c) => JSON.stringify(c.args[0].input).includes('PLATFORMAPP#')),
    ).toBe(false);
  });
});
