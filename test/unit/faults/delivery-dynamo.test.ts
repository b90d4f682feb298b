import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '#core/posts';
import { handler as deadLetters } from '#handlers/delivery-dead-letters';
import { handler as worker } from '#handlers/delivery-worker';
import { sweep } from '#usecases/schedule-sweeper';
import { lambdaContext } from '../support/fixtures.ts';
import { deliveriesWritten, POST_WRITES, type RequestView } from './support/dynamo.ts';
import { invoke, visibilityMs } from './support/sqs.ts';
import {
  advance,
  CREATE_PATH,
  DELIVERY_QUEUE,
  drain,
  platformPosts,
  platformRequests,
  seedDelivery,
  storedPost,
  T0,
  useWorld,
} from './support/world.ts';

// Fault injection, part 1: DynamoDB throttling and transient errors on the delivery worker's own
// writes — the claim, the checkpoint and the outcome record — driven through the real SQS handler,
// the real Bluesky connector and its contract fake. Each test ends with at most one post on the
// platform and the delivery in a final state everyone can see: published — or, after an outage that
// outlasted every receive, failed by the dead-letter consumer.

const world = useWorld();
const { table, sqs } = world;

/** The posts on Bluesky, and its createRecord calls. */
const posts = () => platformPosts(world.fakes, 'bluesky');
const creates = () => platformRequests(world.fakes, 'bluesky', 'POST', CREATE_PATH.bluesky);

/** The one delivery a post write (the whole post, or that delivery) carries. */
const written = (v: RequestView) => deliveriesWritten(v)[0] as DeliveryRecord | undefined;
const stageOf = (v: RequestView) => written(v)?.stage;
const claimWrite = (v: RequestView) => stageOf(v) === 'sending' && written(v)?.checkpoint == null;
const checkpointWrite = (stage: string) => (v: RequestView) =>
  (written(v)?.checkpoint as { stage?: string } | null | undefined)?.stage === stage;
const outcomeWrite = (stage: 'published' | 'retrying') => (v: RequestView) => stageOf(v) === stage;

/** A Bluesky delivery, its message on the queue. */
const given = () => seedDelivery(world, 'bluesky', 'Fault-injected hello');

/** The SDK attempts of one kind of request, as `attempt:outcome`. */
const attempts = (op: 'GetItem' | 'UpdateItem', match: (v: RequestView) => boolean) =>
  table.callsOf(op, (c) => match(c.view)).map((c) => `${c.attempt}:${c.outcome}`);

describe('DynamoDB throttling and transient errors that the SDK retries away', () => {
  it('claim read throttled twice (ProvisionedThroughputExceeded): the SDK retries, one post', async () => {
    // Arrange
    const g = given();
    table.fail({ op: 'GetItem', kind: 'ProvisionedThroughputExceededException', times: 2 });

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert
    expect(attempts('GetItem', () => true).slice(0, 3)).toEqual([
      '1:ProvisionedThroughputExceededException',
      '2:ProvisionedThroughputExceededException',
      '3:ok',
    ]);
    expect(rounds).toHaveLength(1);
    expect(rounds[0]?.failed).toEqual([]);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({
      stage: 'published',
      attempts: 1,
      external_id: posts()[0]?.id,
    });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });

  it('claim write throttled twice (ThrottlingException): the SDK retries, one post', async () => {
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'ThrottlingException', times: 2, match: claimWrite });

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(attempts('UpdateItem', claimWrite).slice(0, 3)).toEqual([
      '1:ThrottlingException',
      '2:ThrottlingException',
      '3:ok',
    ]);
    expect(rounds.map((r) => r.failed)).toEqual([[]]);
    expect(creates()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
  });

  it('outcome record hits InternalServerError twice: the SDK retries, recorded once, one post', async () => {
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'InternalServerError', times: 2, match: outcomeWrite('published') });

    await drain(sqs, DELIVERY_QUEUE, worker);

    expect(attempts('UpdateItem', outcomeWrite('published'))).toEqual([
      '1:InternalServerError',
      '2:InternalServerError',
      '3:ok',
    ]);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', external_id: posts()[0]?.id });
    expect(storedPost(table, g.post.id).status).toBe('published');
  });

  it('connection reset before DynamoDB acted, on the claim and on the record: retried, one post', async () => {
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', match: claimWrite });
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', match: outcomeWrite('published') });

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(attempts('UpdateItem', claimWrite)).toEqual(['1:ECONNRESET', '2:ok']);
    expect(attempts('UpdateItem', outcomeWrite('published'))).toEqual(['1:ECONNRESET', '2:ok']);
    expect(rounds.map((r) => r.failed)).toEqual([[]]);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
  });

  it('a reset after DynamoDB applied the outcome record: the retry meets its own write, one post', async () => {
    // The SDK retries a write that already happened; the version condition refuses it, the worker
    // re-reads, finds its outcome there, and stops.
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', when: 'after', match: outcomeWrite('published') });

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(attempts('UpdateItem', outcomeWrite('published'))).toEqual([
      '1:ECONNRESET',
      '2:ConditionalCheckFailed',
    ]);
    expect(rounds.map((r) => r.failed)).toEqual([[]]);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
  });
});

describe('failures that outlast the SDK retries: the message goes back, the redelivery finishes', () => {
  it('claim write throttled on every SDK attempt: batch item failure, nothing sent; the redelivery publishes once', async () => {
    // Arrange
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'ThrottlingException', times: 3, match: claimWrite });

    // Act
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert: the first receive failed before anything was written or sent.
    expect(rounds).toHaveLength(2);
    expect(rounds[0]?.failed).toEqual(rounds[0]?.ids);
    expect(rounds[1]?.failed).toEqual([]);
    expect(rounds[1]?.at).toBe(T0.getTime() + visibilityMs('delivery')); // the queue's visibility timeout
    expect(attempts('UpdateItem', claimWrite)).toEqual([
      '1:ThrottlingException',
      '2:ThrottlingException',
      '3:ThrottlingException',
      '1:ok',
    ]);
    expect(creates()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
  });

  it('outcome record failing after the platform accepted: leased until it expires, then reconciled, one post', async () => {
    // Arrange: every write after createRecord is refused (InternalServerError) until the 2nd receive.
    const g = given();
    table.fail({
      op: POST_WRITES,
      kind: 'InternalServerError',
      times: Number.POSITIVE_INFINITY,
      match: (v) => outcomeWrite('published')(v) || checkpointWrite('published')(v),
    });
    const [first] = sqs.receive(DELIVERY_QUEUE);
    if (!first) throw new Error('no message');

    // Act 1: the attempt publishes, then cannot record it.
    const failed = await invoke(sqs, worker, [first], lambdaContext('worker'));

    // Assert 1: the platform has the post; our record still says sending, under a lease.
    expect(failed).toEqual([first.id]);
    expect(posts()).toHaveLength(1);
    const leased = g.delivery();
    expect(leased).toMatchObject({ stage: 'sending', attempts: 1, checkpoint: { stage: 'posting' } });

    // Act 2: a duplicate arrives while the lease is live; then the outage ends and SQS redelivers.
    advance(30_000);
    sqs.put(DELIVERY_QUEUE, g.msg);
    const during = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    table.heal();
    const after = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert 2: the duplicate went back unsent; the redelivery found the record and wrote it down.
    expect(during.map((r) => r.failed.length)).toEqual([1]);
    expect(after.at(-1)?.failed).toEqual([]);
    expect(creates()).toHaveLength(1);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({
      stage: 'published',
      attempts: 1,
      external_id: posts()[0]?.id,
    });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });

  it('checkpoint write throttled on every SDK attempt: nothing irreversible was sent; retried with backoff, one post', async () => {
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'ThrottlingException', times: 3, match: checkpointWrite('posting') });

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    // The first attempt stopped before createRecord and was recorded as a retryable system error.
    const retry = sqs.sentTo(DELIVERY_QUEUE).at(-1);
    expect(retry).toMatchObject({ body: g.msg, delaySeconds: 4 }); // 5 s × (0.8 + 0.4 × jitter 0)
    expect(rounds.map((r) => r.at - T0.getTime())).toEqual([0, 4_000]);
    expect(creates()).toHaveLength(1);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2, error: null });
  });

  it('a DynamoDB outage through every receive: the DLQ consumer marks the delivery failed (system), visibly', async () => {
    // Arrange: the claim cannot be written, on any receive (5 × 3 SDK attempts).
    const g = given();
    table.fail({
      op: POST_WRITES,
      kind: 'ProvisionedThroughputExceededException',
      times: Number.POSITIVE_INFINITY,
    });

    // Act: SQS gives up after maxReceiveCount; the outage ends; the DLQ consumer runs.
    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);
    table.heal();
    const [dead] = sqs.deadLetters;
    if (!dead) throw new Error('nothing dead-lettered');
    const failed = await invoke(sqs, deadLetters, [dead], lambdaContext('dlq'));

    // Assert
    expect(rounds).toHaveLength(5);
    expect(rounds.every((r) => r.failed.length === 1)).toBe(true);
    expect(failed).toEqual([]);
    expect(creates()).toHaveLength(0);
    expect(g.delivery()).toMatchObject({ stage: 'failed', error_category: 'system', attempts: 0 });
    expect(storedPost(table, g.post.id).status).toBe('failed');
  });
});

describe('writes DynamoDB applied but whose answer was lost (a reset after the commit)', () => {
  it('the claim: published once, after at most one redelivery', async () => {
    // Regression: the SDK's retry of the applied claim is refused (the version moved), and the
    // worker must take that claim for its own. Guards: one post, at most one redelivery, and the
    // lost claim counted as the only attempt.
    const g = given();
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', when: 'after', match: claimWrite });

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(attempts('UpdateItem', claimWrite)[0]).toBe('1:ECONNRESET');
    expect(rounds.length).toBeLessThanOrEqual(2);
    expect(rounds.at(-1)?.failed).toEqual([]);
    expect(creates()).toHaveLength(1);
    expect(posts()).toHaveLength(1);
    // The lost claim counted as the first attempt; the recovery re-used it (no second increment).
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 1 });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });

  /** A 429 with Retry-After 30 on createRecord, and the "retrying" record applied but its answer lost. */
  function rateLimitedWithLostRecord() {
    const g = given();
    world.fakes.failNext('bluesky', {
      status: 429,
      path: /createRecord/,
      headers: { 'retry-after': '30' },
      body: { error: 'RateLimitExceeded', message: 'Rate Limit Exceeded' },
    });
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', when: 'after', match: outcomeWrite('retrying') });
    return g;
  }

  it('a retry record (429, Retry-After 30): not lost — published once, at the latest by the watchdog', async () => {
    // Arrange
    const g = rateLimitedWithLostRecord();

    // Act: the worker, then every minute the sweeper (its watchdog re-sends lost deliveries) and the worker.
    await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    expect(g.delivery()).toMatchObject({
      stage: 'retrying',
      error_category: 'rate_limited',
      next_attempt_at: new Date(T0.getTime() + 30_000).toISOString(),
    });
    let redriven = 0;
    for (let minute = 1; minute <= 8 && g.delivery().stage !== 'published'; minute++) {
      advance(60_000);
      redriven += (await sweep(new Date())).redriven;
      await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });
    }

    // Assert: retried once (by its delayed message, the watchdog at the latest) and published once.
    expect(redriven).toBeLessThanOrEqual(1);
    expect(posts()).toHaveLength(1);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
  });

  // Regression: the worker must recognise its own applied "retrying" record (not take it for a lost
  // claim) and send the delayed message, so the retry comes at the hint, not by the watchdog.
  it('a retry record (429, Retry-After 30) whose answer was lost is still retried at the hinted time', async () => {
    const g = rateLimitedWithLostRecord();

    const rounds = await drain(sqs, DELIVERY_QUEUE, worker);

    expect(sqs.sentTo(DELIVERY_QUEUE).map((s) => s.delaySeconds)).toEqual([0, 30]);
    expect(rounds.map((r) => r.at - T0.getTime())).toEqual([0, 30_000]);
    expect(g.delivery()).toMatchObject({ stage: 'published', attempts: 2 });
  });
});
