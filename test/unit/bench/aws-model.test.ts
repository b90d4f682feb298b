import { describe, expect, it } from 'vitest';
import { workers } from '#lib/operations';
import {
  type AwsModelInput,
  awsModel,
  awsModelInputs,
  awsModelSection,
  REWORK_INPUTS,
  TODAY_INPUTS,
} from '../../bench/aws-model.ts';
import type { CostResult } from '../../bench/cost.ts';
import type { SchedulerResult } from '../../bench/scheduler.ts';

// The AWS model's arithmetic (test/bench/aws-model.ts), on round inputs whose results are worked
// out by hand below.

const INPUT: AwsModelInput = {
  ...TODAY_INPUTS,
  source: 'test',
  perPost: {
    ...TODAY_INPUTS.perPost,
    deliveryWriteUnits: 28,
    deliveryReadUnits: 7,
    createPostWriteUnits: 9,
    createPostReadUnits: 2,
    gateWriteUnitsPerRequest: 1,
    gateCountWriteUnits: 2,
    idempotencyWriteUnits: 2,
    dueBucketWrites: 6,
    statusIndexWriteUnits: 4,
    statsItemWriteUnits: 2,
    dueEntryBytes: 128,
    streamRecords: 5,
    messages: { schedule: 1, delivery: 1, events: 1 },
    sendRequestsPerMessage: { schedule: 0.1, delivery: 1, events: 1 },
  },
  timing: {
    dynamoRoundTripMs: 5,
    sqsRoundTripMs: 10,
    platformLatencyMs: 430,
    deliveryRoundTrips: 10,
    lambdaBilledMsPerDelivery: 50,
    invokeOverheadMs: 20,
    pipelineLatencySeconds: 1.5,
    relayRecordsPerSecond: 4_000,
    relayShards: 4,
    relayOnPath: true,
  },
  config: {
    delivery: { batchSize: 10, maxConcurrency: 8, memoryMb: 1024 },
    dispatcher: { batchSize: 10, maxConcurrency: 4, roundTripsPerPost: 2 },
    eventsBatchSize: 10,
    sweeper: {
      everySeconds: 60,
      timeoutSeconds: 50,
      lookaheadSeconds: 120,
      concurrency: 16,
      roundTripsPerEntry: 2,
    },
  },
  prices: {
    ...TODAY_INPUTS.prices,
    dynamoPerMillionWrite: 0.625,
    dynamoPerMillionRead: 0.125,
    lambdaPerGbSecondArm: 0.0000133334,
    lambdaPerMillionRequests: 0.2,
    sqsPerMillionRequests: 0.4,
  },
};

describe('the AWS model', () => {
  it('rates each stage and picks the slowest: delivery 8 × 10 per (430 + 10 × 5 + 20) ms = 160/s', () => {
    const r = awsModel(INPUT, { posts: 1_600, createdOverSeconds: 600 });

    expect(r.lambda.deliveryMs).toBe(480);
    expect(r.lambda.deliveriesPerSecond).toBeCloseTo(160);
    expect(r.lambda.dispatchesPerSecond).toBeCloseTo(40 / 0.03); // 4 × 10 per (2 × 5 + 20) ms
    expect(r.lambda.relayPostsPerSecond).toBe(800); // 4,000 records/s ÷ 5 per post
    expect(r.lambda.bottleneck).toBe('delivery');
    expect(r.lambda.deliveryPeakConcurrency).toBe(8);
    expect(r.lambda.deliveriesInFlight).toBe(80);
    expect(r.lambda.peakConcurrency).toBe(8 + 4 + 4 + 1);
  });

  it('a stage off the path does not bound it: a slow relay binds only while it enqueues the deliveries', () => {
    const slowRelay = { ...INPUT, timing: { ...INPUT.timing, relayRecordsPerSecond: 500 } };

    const on = awsModel(slowRelay, { posts: 1_600, createdOverSeconds: 600 });
    const off = awsModel(
      { ...slowRelay, timing: { ...slowRelay.timing, relayOnPath: false } },
      { posts: 1_600, createdOverSeconds: 600 },
    );

    expect(on.lambda.bottleneck).toBe('stream relay'); // 500 ÷ 5 = 100 posts/s
    expect(on.lateness.max).toBeCloseTo(1.5 + 1_600 / 100);
    expect(off.lambda.bottleneck).toBe('delivery');
    expect(off.lateness.max).toBeCloseTo(1.5 + 1_600 / 160);
  });

  it('a sweep with no write per post takes only its sends: 10 per request, one after another', () => {
    const noWrites = {
      ...INPUT,
      config: { ...INPUT.config, sweeper: { ...INPUT.config.sweeper, roundTripsPerEntry: 0 } },
    };

    const r = awsModel(noWrites, { posts: 4_000, createdOverSeconds: 600 });

    expect(r.sweep.seconds).toBeCloseTo(4); // 400 requests × 10 ms
    expect(awsModel(noWrites, { posts: 60_000, createdOverSeconds: 600 }).sweep.fitsTimeout).toBe(false);
  });

  it('prices DynamoDB, Lambda and SQS for the burst', () => {
    const r = awsModel(INPUT, { posts: 1_600, createdOverSeconds: 600 });

    expect(r.dynamo.writeUnits).toBe(1_600 * 37);
    expect(r.dynamo.readUnits).toBe(1_600 * 9);
    expect(r.dynamo.dollars).toBeCloseTo((59_200 * 0.625 + 14_400 * 0.125) / 1e6, 9);
    expect(r.dynamo.peakWriteUnitsPerSecond).toBeCloseTo(160 * 28);
    // 1,600 × 50 ms = 80 s at 1 GB, and 160 invocations.
    expect(r.lambda.billedSeconds).toBe(80);
    expect(r.lambda.dollars).toBeCloseTo(80 * 0.0000133334 + (160 * 0.2) / 1e6, 9);
    // Per message: its send share + a receive and a delete per batch of 10.
    expect(r.sqs.requests.schedule).toBeCloseTo(1_600 * 0.3);
    expect(r.sqs.requests.delivery).toBeCloseTo(1_600 * 1.2);
    expect(r.sqs.requests.events).toBeCloseTo(1_600 * 1.2);
    expect(r.sqs.dollars).toBeCloseTo((4_320 * 0.4) / 1e6, 12);
  });

  it('lateness: fixed latency + k ÷ the slowest stage while the sweep finishes within its lead', () => {
    const r = awsModel(INPUT, { posts: 1_600, createdOverSeconds: 600 });

    // Sweep: 1,600 ÷ (16 per 10 ms) = 1 s, then 160 batch sends × 10 ms = 1.6 s.
    expect(r.sweep.seconds).toBeCloseTo(2.6);
    expect(r.sweep).toMatchObject({ leadSeconds: 60, fitsTimeout: true });
    expect(r.lateness.p50).toBeCloseTo(1.5 + 800 / 160);
    expect(r.lateness.p99).toBeCloseTo(1.5 + 1_584 / 160);
    expect(r.lateness.max).toBeCloseTo(1.5 + 10);
    expect(r.lateness.bounded).toBe(true);
  });

  it('a sweep longer than its lead delays every post by the overrun; past its timeout the lateness is unbounded', () => {
    const r = awsModel(INPUT, { posts: 100_000, createdOverSeconds: 600 });

    // 62.5 s of marks + 10,000 sends × 10 ms = 162.5 s: 102.5 s past its 60 s lead.
    expect(r.sweep.seconds).toBeCloseTo(162.5);
    expect(r.sweep.fitsTimeout).toBe(false);
    expect(r.lateness.bounded).toBe(false);
    expect(r.lateness.max).toBeCloseTo(102.5 + 1.5 + 100_000 / 160);
  });

  it('hot keys: units per second against the partition limit, and the shards a bucket would need', () => {
    const r = awsModel(INPUT, { posts: 100_000, createdOverSeconds: 500 });
    const key = (prefix: string) => r.hotKeys.find((k) => k.key.startsWith(prefix));

    // 200 posts/s created by one org: gate 1 + count 2 per post.
    expect(key('`ORG#<org>` / `USAGE')?.unitsPerSecond).toBeCloseTo(600);
    expect(key('`DUE#<minute>` (GSI2), at creation')?.unitsPerSecond).toBeCloseTo(200);
    // 160 deliveries/s × 6 index writes = 960: under 1,000, one partition.
    expect(key('`DUE#<minute>` (GSI2), while delivering')).toMatchObject({
      unitsPerSecond: 960,
      shardsNeeded: 1,
    });
    expect(key('`DUE#<minute>` (GSI2), the sweeper')?.unitsPerSecond).toBeCloseTo(
      (100_000 * 0.5 * 128) / 4096,
    );
    expect(key('`IDEMPOTENCY#createPost`')?.unitsPerSecond).toBeCloseTo(400);
    expect(key('`ORG#<org>` / `STATS`')?.unitsPerSecond).toBeCloseTo(320);
    expect(key('`ORG#<org>#POSTS#publishing`')?.unitsPerSecond).toBeCloseTo(640);
    expect(key('`SYNC#<day>`')?.unitsPerSecond).toBeCloseTo(160);

    // One more index write per post: 1,120 WRU/s, two partitions.
    const hotter = awsModel({ ...INPUT, perPost: { ...INPUT.perPost, dueBucketWrites: 7 } }, r.scenario);
    expect(hotter.hotKeys.find((k) => k.key.includes('while delivering'))).toMatchObject({
      unitsPerSecond: 1_120,
      shardsNeeded: 2,
    });
  });

  it("takes the event sources from lib/operations.ts and createPost's units from the cost part when it ran", async () => {
    const cost: CostResult = {
      measured: [
        { op: 'createPost', variant: '', memoryMb: 1024, readUnits: 3, writeUnits: 5 },
        { op: 'createPost', variant: 'Idempotency-Key', memoryMb: 1024, readUnits: 3, writeUnits: 8 },
      ],
      gate: [{ activeKeys: 1, itemBytes: 126, writeUnits: 1 }],
    };

    const burst = (posts: number, total: number): SchedulerResult => ({
      posts,
      createSeconds: 1,
      latenessMs: { p50: 0, p90: 0, p99: 0, max: 0 },
      deliveriesPerSecond: 1,
      writeUnits: { total, table: total / 2, indexes: {} },
    });

    const input = await awsModelInputs(cost, [burst(100, 20), burst(1_000, 16)]);
    const without = await awsModelInputs();

    const delivery = workers.find((w) => w.id === 'deliveryWorker')?.trigger;
    expect(input.config.delivery).toMatchObject({
      batchSize: delivery?.kind === 'queue' ? delivery.batchSize : -1,
      maxConcurrency: delivery?.kind === 'queue' ? delivery.concurrency : -1,
    });
    expect(input.perPost).toMatchObject({
      createPostWriteUnits: 5,
      createPostReadUnits: 3,
      idempotencyWriteUnits: 3,
      deliveryWriteUnits: 16, // the largest burst's
    });
    // Without measurements: the rework's defaults; the "before" inputs on request.
    expect(without.perPost).toMatchObject({
      createPostWriteUnits: REWORK_INPUTS.perPost.createPostWriteUnits,
      deliveryWriteUnits: REWORK_INPUTS.perPost.deliveryWriteUnits,
    });
    const before = await awsModelInputs(undefined, undefined, TODAY_INPUTS);
    expect(before.perPost.deliveryWriteUnits).toBe(TODAY_INPUTS.perPost.deliveryWriteUnits);
    expect(before.config.sweeper.roundTripsPerEntry).toBe(2);
  });

  it('writes the section with both bursts, the hot keys and the sweep that overruns its timeout', () => {
    const text = awsModelSection(INPUT);

    expect(text).toContain('| 1,000 posts | 100,000 posts |');
    expect(text).toContain('`DUE#<minute>` (GSI2), while delivering');
    expect(text).toMatch(/overruns its 50 s timeout/);
  });
});
