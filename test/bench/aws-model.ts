import type { CostResult } from './cost.ts';
import { MODEL, PRICES } from './cost.ts';
import type { SchedulerResult } from './scheduler.ts';
import { table, today } from './support.ts';

// A model of Herald on AWS at scale (issue 24, part 5): for N posts due in the same minute, the
// DynamoDB units and their cost, Lambda concurrency, SQS requests, the expected lateness, and the
// keys that get hot, each against DynamoDB's per-partition limits. A pure function of its inputs:
// the measured numbers (TODAY_INPUTS until the delivery path is re-measured; the cost part's results
// when it ran in the same `npm run bench`), the stated assumptions, and the event sources' settings
// from lib/operations.ts.

/** Everything the model is computed from. Units: DynamoDB write/read units (WRU/RRU), ms, seconds. */
export interface AwsModelInput {
  /** Where the numbers come from (printed with the section). */
  source: string;
  perPost: {
    /** WRU from "due" to "published" for a one-channel scheduled post: table, indexes, stats. */
    deliveryWriteUnits: number;
    /** RRU on that path. */
    deliveryReadUnits: number;
    /** Version-checked writes on that path (the post's writes and the stats transaction). */
    deliveryWrites: number;
    /** createPost of a scheduled post (the gate's write included). */
    createPostWriteUnits: number;
    createPostReadUnits: number;
    /** The request gate's WRU per admitted request (`ORG#<org>` / `USAGE#<YYYY-MM>`). */
    gateWriteUnitsPerRequest: number;
    /** WRU on the gate item inside createPost's transaction (the posts_per_month count). */
    gateCountWriteUnits: number;
    /** WRU a createPost with an Idempotency-Key writes to its idempotency partition. */
    idempotencyWriteUnits: number;
    /** GSI2 writes (keys only, 1 WRU each) landing in one `DUE#<minute>` bucket while a post is delivered. */
    dueBucketWrites: number;
    /** WRU on the organization's GSI1 `ORG#<org>#POSTS#publishing` partition per post. */
    statusIndexWriteUnits: number;
    /** WRU on each of the stats items (`STATS`, `STATS#DAY#<day>`) per post. */
    statsItemWriteUnits: number;
    /** Bytes of one GSI2 entry (keys only), for the sweeper's read of a bucket. */
    dueEntryBytes: number;
    /** Table stream records per post reaching the stream relay (one per post write). */
    streamRecords: number;
    /** SQS messages per post, per queue. */
    messages: Record<AwsQueue, number>;
    /** SQS send requests per message (0.1 where 10 are sent per SendMessageBatch). */
    sendRequestsPerMessage: Record<AwsQueue, number>;
  };
  timing: {
    dynamoRoundTripMs: number;
    sqsRoundTripMs: number;
    /** One create-post call to a platform, answered. */
    platformLatencyMs: number;
    /** Sequential AWS round trips of one delivery besides the platform call (DynamoDB, KMS). */
    deliveryRoundTrips: number;
    /** Lambda billed ms per delivery (records of a batch run in parallel). */
    lambdaBilledMsPerDelivery: number;
    /** An SQS event source's invoke of a warm function, per batch. */
    invokeOverheadMs: number;
    /** Fixed latency of the path: SQS delay resolution, stream and queue polling. */
    pipelineLatencySeconds: number;
    /** Stream records the relay handles per second, all shards together. */
    relayRecordsPerSecond: number;
    /** Concurrent stream relay invocations (one per shard). */
    relayShards: number;
    /** Whether a post's first delivery waits for the stream relay (it enqueues the delivery messages). */
    relayOnPath: boolean;
  };
  /** Event sources and schedules (lib/operations.ts; the sweeper's own constants in its module). */
  config: {
    delivery: { batchSize: number; maxConcurrency: number; memoryMb: number };
    dispatcher: { batchSize: number; maxConcurrency: number; roundTripsPerPost: number };
    eventsBatchSize: number;
    sweeper: {
      everySeconds: number;
      timeoutSeconds: number;
      lookaheadSeconds: number;
      concurrency: number;
      roundTripsPerEntry: number;
      /** SendMessageBatch requests in flight at once (1: one after another). */
      sendConcurrency?: number;
    };
  };
  limits: {
    /** Per partition (a partition key value, in the table or an index), per second. */
    partitionWriteUnits: number;
    partitionReadUnits: number;
    /** What a new on-demand table serves at once; later up to twice its previous peak. */
    onDemandInitialWriteUnits: number;
  };
  prices: typeof PRICES & { sqsPerMillionRequests: number };
}

export type AwsQueue = 'schedule' | 'delivery' | 'events';
const QUEUES: readonly AwsQueue[] = ['schedule', 'delivery', 'events'];

/** One burst: `posts` due in the same minute, created over `createdOverSeconds` by one organization. */
export interface AwsScenario {
  posts: number;
  createdOverSeconds: number;
}

export interface HotKey {
  key: string;
  /** Who writes or reads it. */
  by: string;
  /** Units per second at this burst's peak (one organization: the worst case for per-org keys). */
  unitsPerSecond: number;
  kind: 'write' | 'read';
  limit: number;
  /** The rate (posts/s) or size at which it reaches the limit, in words. */
  reachedAt: string;
  /** Partitions needed at this rate (1: no sharding). */
  shardsNeeded: number;
  keepsUnder: string;
}

export interface AwsModelResult {
  scenario: AwsScenario;
  dynamo: {
    writeUnits: number;
    readUnits: number;
    dollars: number;
    /** The table's write units per second while the burst is delivered. */
    peakWriteUnitsPerSecond: number;
  };
  lambda: {
    deliveryMs: number;
    deliveriesPerSecond: number;
    dispatchesPerSecond: number;
    relayPostsPerSecond: number;
    /** The slowest stage after the sweep. */
    bottleneck: 'delivery' | 'dispatcher' | 'stream relay';
    deliveryPeakConcurrency: number;
    deliveriesInFlight: number;
    peakConcurrency: number;
    billedSeconds: number;
    dollars: number;
  };
  sqs: {
    requests: Record<AwsQueue, number>;
    totalRequests: number;
    dollars: number;
    peakSendsPerSecond: number;
  };
  sweep: { seconds: number; leadSeconds: number; fitsTimeout: boolean };
  lateness: { p50: number; p99: number; max: number; bounded: boolean };
  hotKeys: HotKey[];
}

/** The burst sizes of issue 24. */
export const SCENARIOS: readonly AwsScenario[] = [
  { posts: 1_000, createdOverSeconds: 600 },
  { posts: 100_000, createdOverSeconds: 600 },
];

export function awsModel(input: AwsModelInput, scenario: AwsScenario): AwsModelResult {
  const { perPost: p, timing: t, config: c, prices: $ } = input;
  const n = scenario.posts;

  // Stages after the sweep, each a rate in posts per second.
  const deliveryMs = t.platformLatencyMs + t.deliveryRoundTrips * t.dynamoRoundTripMs;
  const deliveriesPerSecond =
    (c.delivery.maxConcurrency * c.delivery.batchSize) / ((deliveryMs + t.invokeOverheadMs) / 1000);
  const dispatchesPerSecond =
    (c.dispatcher.maxConcurrency * c.dispatcher.batchSize) /
    ((c.dispatcher.roundTripsPerPost * t.dynamoRoundTripMs + t.invokeOverheadMs) / 1000);
  const relayPostsPerSecond = t.relayRecordsPerSecond / p.streamRecords;
  const stages: Array<[AwsModelResult['lambda']['bottleneck'], number]> = [
    ['delivery', deliveriesPerSecond],
    ['dispatcher', dispatchesPerSecond],
  ];
  if (t.relayOnPath) stages.push(['stream relay', relayPostsPerSecond]);
  const [bottleneck, rate] = stages.reduce((a, b) => (b[1] < a[1] ? b : a));

  // The sweep does its per-post work (`roundTripsPerEntry`, `concurrency` at a time; none when it
  // writes nothing per post), then sends the dispatches, 10 per request, `sendConcurrency` at once.
  const perEntrySeconds = (c.sweeper.roundTripsPerEntry * t.dynamoRoundTripMs) / 1000;
  const sweepSeconds =
    (n * perEntrySeconds) / c.sweeper.concurrency +
    (Math.ceil(n / 10) * t.sqsRoundTripMs) / 1000 / (c.sweeper.sendConcurrency ?? 1);
  const leadSeconds = c.sweeper.lookaheadSeconds - c.sweeper.everySeconds;
  const fitsTimeout = sweepSeconds <= c.sweeper.timeoutSeconds;
  const start = Math.max(0, sweepSeconds - leadSeconds) + t.pipelineLatencySeconds;
  const lateAt = (share: number) => start + (share * n) / rate;

  const writeUnits = n * (p.deliveryWriteUnits + p.createPostWriteUnits);
  const readUnits = n * (p.deliveryReadUnits + p.createPostReadUnits);
  const billedSeconds = (n * t.lambdaBilledMsPerDelivery) / 1000;
  const invocations = Math.ceil(n / c.delivery.batchSize);

  const batchOf: Record<AwsQueue, number> = {
    schedule: c.dispatcher.batchSize,
    delivery: c.delivery.batchSize,
    events: c.eventsBatchSize,
  };
  // Each message is sent, received and deleted; a receive and a delete serve a full batch at a burst.
  const requests = Object.fromEntries(
    QUEUES.map((q) => [q, n * p.messages[q] * (p.sendRequestsPerMessage[q] + 2 / batchOf[q])]),
  ) as Record<AwsQueue, number>;
  const totalRequests = QUEUES.reduce((s, q) => s + requests[q], 0);

  const deliveryPeakConcurrency = Math.min(c.delivery.maxConcurrency, invocations);
  const created = n / scenario.createdOverSeconds;

  return {
    scenario,
    dynamo: {
      writeUnits,
      readUnits,
      dollars: (writeUnits * $.dynamoPerMillionWrite + readUnits * $.dynamoPerMillionRead) / 1e6,
      peakWriteUnitsPerSecond: rate * p.deliveryWriteUnits,
    },
    lambda: {
      deliveryMs,
      deliveriesPerSecond,
      dispatchesPerSecond,
      relayPostsPerSecond,
      bottleneck,
      deliveryPeakConcurrency,
      deliveriesInFlight: Math.min(n, c.delivery.maxConcurrency * c.delivery.batchSize),
      peakConcurrency:
        deliveryPeakConcurrency +
        Math.min(c.dispatcher.maxConcurrency, Math.ceil(n / c.dispatcher.batchSize)) +
        t.relayShards +
        1,
      billedSeconds,
      dollars:
        billedSeconds * (c.delivery.memoryMb / 1024) * $.lambdaPerGbSecondArm +
        (invocations * $.lambdaPerMillionRequests) / 1e6,
    },
    sqs: {
      requests,
      totalRequests,
      dollars: (totalRequests * $.sqsPerMillionRequests) / 1e6,
      peakSendsPerSecond:
        (t.relayOnPath ? Math.min(dispatchesPerSecond, relayPostsPerSecond) : dispatchesPerSecond) *
        p.messages.delivery,
    },
    sweep: { seconds: sweepSeconds, leadSeconds, fitsTimeout },
    lateness: { p50: lateAt(0.5), p99: lateAt(0.99), max: lateAt(1), bounded: fitsTimeout },
    hotKeys: hotKeys(input, n, rate, created),
  };
}

function hotKeys(input: AwsModelInput, n: number, rate: number, created: number): HotKey[] {
  const { perPost: p, limits: l } = input;
  const w = l.partitionWriteUnits;
  const shards = (units: number, limit = w) => Math.max(1, Math.ceil(units / limit));
  const perSecond = (units: number) => `${fmt(w / units)} posts/s`;
  const gateUnits = p.gateWriteUnitsPerRequest + p.gateCountWriteUnits;
  const bucketReadUnits = (n * 0.5 * p.dueEntryBytes) / 4096;
  return [
    {
      key: '`ORG#<org>` / `USAGE#<YYYY-MM>` (request gate)',
      by: 'every API request of the org; createPost also counts the post on it',
      kind: 'write',
      unitsPerSecond: created * gateUnits,
      limit: w,
      reachedAt: `one org creating ${perSecond(gateUnits)}`,
      shardsNeeded: 1,
      keepsUnder:
        'the plans’ per-key bursts (agency 300/min: ≈ 67 keys at full burst to reach it); past it 429 rate_limited with Retry-After, never a 500. One item by design (the gate is exact), not sharded',
    },
    {
      key: '`DUE#<minute>` (GSI2), at creation',
      by: 'createPost of a scheduled post (one entry)',
      kind: 'write',
      unitsPerSecond: created,
      limit: w,
      reachedAt: `${perSecond(1)} created for the same minute`,
      shardsNeeded: shards(created),
      keepsUnder: 'creation spread over time; above it, a hash suffix on the bucket key (below)',
    },
    {
      key: '`DUE#<minute>` (GSI2), while delivering',
      by: 'every post write moves its entry (watch time = now + 5 min): the flip, the claim, checkpoints, the outcome',
      kind: 'write',
      unitsPerSecond: rate * p.dueBucketWrites,
      limit: w,
      reachedAt: `delivering ${perSecond(p.dueBucketWrites)}`,
      shardsNeeded: shards(rate * p.dueBucketWrites),
      keepsUnder:
        'fewer index moves (a watch time that is not rewritten on every write, or one item per delivery) or `DUE#<minute>#<hash(post) mod S>` read by the sweeper in S parallel queries',
    },
    {
      key: '`DUE#<minute>` (GSI2), the sweeper’s read',
      by: 'the sweeper (Query of the bucket, eventually consistent)',
      kind: 'read',
      unitsPerSecond: bucketReadUnits,
      limit: l.partitionReadUnits,
      reachedAt: `${fmt((l.partitionReadUnits * 4096) / (0.5 * p.dueEntryBytes))} posts in one bucket read within a second`,
      shardsNeeded: shards(bucketReadUnits, l.partitionReadUnits),
      keepsUnder: 'keys-only entries (≈ 100 B); pages of 1 MB; burst capacity',
    },
    {
      key: '`IDEMPOTENCY#createPost` (before) → `ORG#<org>#IDEMPOTENCY`',
      by: 'createPost with an Idempotency-Key (in progress, then the answer)',
      kind: 'write',
      unitsPerSecond: created * p.idempotencyWriteUnits,
      limit: w,
      reachedAt: `${perSecond(p.idempotencyWriteUnits)}: before for all organizations together, now per organization`,
      shardsNeeded: 1,
      keepsUnder:
        'one partition per organization, under its gate; hashed sort keys let adaptive capacity split it',
    },
    {
      key: '`ORG#<org>` / `STATS` and `STATS#DAY#<day>`',
      by: 'the stream relay, one transaction per counted change',
      kind: 'write',
      unitsPerSecond: rate * p.statsItemWriteUnits,
      limit: w,
      reachedAt: `one org delivering ${perSecond(p.statsItemWriteUnits)} (transactions on one item also conflict and retry)`,
      shardsNeeded: shards(rate * p.statsItemWriteUnits),
      keepsUnder: 'summing a stream batch’s deltas per org into one transaction',
    },
    {
      key: '`ORG#<org>#POSTS#publishing` (GSI1, all attributes)',
      by: 'every write of a publishing post rewrites its copy there',
      kind: 'write',
      unitsPerSecond: rate * p.statusIndexWriteUnits,
      limit: w,
      reachedAt: `one org delivering ${perSecond(p.statusIndexWriteUnits)}`,
      shardsNeeded: shards(rate * p.statusIndexWriteUnits),
      keepsUnder: 'fewer post writes; or a keys-only GSI1 (lists then read the posts by key)',
    },
    {
      key: '`SYNC#<day>` (GSI2)',
      by: 'every published post (engagement sync entry)',
      kind: 'write',
      unitsPerSecond: rate,
      limit: w,
      reachedAt: `${perSecond(1)} published, all organizations`,
      shardsNeeded: shards(rate),
      keepsUnder: 'a hash suffix if publishing ever passes it',
    },
  ];
}

/** 1,234 · 12.3 · 0.12 */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return '∞';
  const a = Math.abs(n);
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : 2;
  return Number(n.toFixed(digits)).toLocaleString('en-US', { maximumFractionDigits: digits });
}

const seconds = (s: number) => (s >= 120 ? `${fmt(s / 60)} min` : `${fmt(s)} s`);
const posts = (r: AwsModelResult) => `${r.scenario.posts.toLocaleString('en-US')} posts`;
/** Posts per second after the sweep: the slowest stage. */
const rateOf = (r: AwsModelResult) =>
  Math.min(r.lambda.deliveriesPerSecond, r.lambda.dispatchesPerSecond, r.lambda.relayPostsPerSecond);

/** The event sources as lib/operations.ts configures them. */
export async function manifestConfig(): Promise<
  Omit<AwsModelInput['config'], 'sweeper'> & {
    sweeper: { everySeconds: number; timeoutSeconds: number };
  }
> {
  const { workers } = await import('#lib/operations');
  const worker = (id: string) => {
    const w = workers.find((x) => x.id === id);
    if (!w) throw new Error(`aws model: no worker ${id} in lib/operations.ts`);
    return w;
  };
  const queue = (id: string) => {
    const trigger = worker(id).trigger;
    if (trigger.kind !== 'queue') throw new Error(`aws model: ${id} is not a queue consumer`);
    return { batchSize: trigger.batchSize, maxConcurrency: trigger.concurrency };
  };
  const sweeper = worker('scheduleSweeper');
  if (sweeper.trigger.kind !== 'schedule') throw new Error('aws model: the sweeper is not scheduled');
  return {
    delivery: { ...queue('deliveryWorker'), memoryMb: 1024 },
    dispatcher: { ...queue('scheduleDispatcher'), roundTripsPerPost: 2 },
    eventsBatchSize: queue('webhookFanout').batchSize,
    sweeper: { everySeconds: sweeper.trigger.everySeconds, timeoutSeconds: sweeper.timeoutSeconds },
  };
}

/**
 * Today's measured inputs (BENCHMARKS.md, 2026-11-28), which describe the delivery path before issue
 * 24's rework (main at a30acac; the rework, ed3e955, has no sweep write per post, a dispatcher that
 * reads and enqueues, and the relay off the path: `roundTripsPerEntry: 0`, `relayOnPath: false`, and
 * fewer writes once re-measured by the scheduler part): createPost and the
 * gate as the cost part measured them; the delivery path from the scheduler section's 6–8
 * version-checked writes per post, priced per write as the cost part measures a post write
 * (table 1 + GSI1 1 + GSI2 1 WRU for a post under 1 KB; an index entry that moves costs 2).
 */
export const TODAY_INPUTS: Omit<AwsModelInput, 'config'> & {
  config: {
    sweeper: Pick<
      AwsModelInput['config']['sweeper'],
      'lookaheadSeconds' | 'concurrency' | 'roundTripsPerEntry' | 'sendConcurrency'
    >;
  };
} = {
  source:
    'the delivery path as main had it at a30acac, before issue 24’s rework (ed3e955: the first claim starts the post, no sweep write per post, the relay off the path) — re-measure and feed the new numbers. BENCHMARKS.md "Cost per million requests" (createPost 2 RRU / 9 WRU, gate 1 WRU, Idempotency-Key +2 WRU) and "Scheduler lateness" (6–8 version-checked writes per post, due → published), each write priced from the code as the cost part prices a post write: sweep mark 4, flip to publishing 5, claim 4, one checkpoint 4, outcome 5 WRU (table 1, GSI1 1–2, GSI2 1–2), the stats transaction 6',
  perPost: {
    // Sweep mark 4, flip to publishing 5, claim 4, one checkpoint 4, outcome 5 (table 1 + GSI1 1–2
    // + GSI2 1–2 each), and the stats transaction (marker, STATS, STATS#DAY: 3 items × 2).
    deliveryWriteUnits: 28,
    // The post read before each of its 5 writes (strongly consistent, < 4 KB) + channel and credentials.
    deliveryReadUnits: 7,
    deliveryWrites: 6,
    createPostWriteUnits: 9,
    createPostReadUnits: 2,
    gateWriteUnitsPerRequest: 1,
    gateCountWriteUnits: 2,
    idempotencyWriteUnits: 2,
    // Into the bucket of now + 5 min: the flip's put, the claim's and a checkpoint's moves (2 each),
    // the outcome's delete.
    dueBucketWrites: 6,
    // Put by the flip, rewritten by the claim and a checkpoint, deleted by the outcome.
    statusIndexWriteUnits: 4,
    statsItemWriteUnits: 2,
    dueEntryBytes: 120,
    streamRecords: 5,
    messages: { schedule: 1, delivery: 1, events: 1 },
    // The sweeper sends dispatches 10 per request; the relay sends each change's messages on its own.
    sendRequestsPerMessage: { schedule: 0.1, delivery: 1, events: 1 },
  },
  timing: {
    dynamoRoundTripMs: MODEL.msPerRoundTrip,
    sqsRoundTripMs: 10,
    platformLatencyMs: 400,
    // Claim (read, write), channel with credentials, KMS open, checkpoint (read, write), outcome (read, write).
    deliveryRoundTrips: 8,
    // (400 + 8 × 6 ms) for a batch of 10 run in parallel.
    lambdaBilledMsPerDelivery: 45,
    invokeOverheadMs: 20,
    pipelineLatencySeconds: 1.5,
    relayRecordsPerSecond: 4_000,
    relayShards: 4,
    // The relay enqueued a post's delivery messages when the dispatcher flipped it to publishing.
    relayOnPath: true,
  },
  config: { sweeper: { lookaheadSeconds: 120, concurrency: 16, roundTripsPerEntry: 2 } },
  limits: { partitionWriteUnits: 1_000, partitionReadUnits: 3_000, onDemandInitialWriteUnits: 4_000 },
  prices: { ...PRICES, sqsPerMillionRequests: 0.4 },
};

/**
 * The delivery path after issue 24 (ed3e955 and what followed): the sweeper reads past a cursor and
 * writes nothing per post, sending 16 batches at once; the dispatcher reads the post and sends its
 * delivery messages (10 per request); the first claim starts the post, its due-work entry stays put
 * while it publishes, no "published" checkpoint; the counters are summed per stream batch and
 * organization (≈ 0.03 WRU per post in a burst). Write units per post are the scheduler part's
 * measurement when it ran; this default is the sum priced from the code.
 */
export const REWORK_INPUTS: typeof TODAY_INPUTS = {
  ...TODAY_INPUTS,
  source:
    'the delivery path after issue 24: no sweep write per post (a cursor), the dispatcher writes nothing, the first claim starts the post (its due-work entry kept), one posting checkpoint (none for a text-only Mastodon status), the outcome — the claim of a one-channel post against the dispatcher’s read, the checkpoint and the outcome against the claim’s write, none of them after a read —, the counters once per stream batch and organization; dispatches and events sent ten per request; write units per post from due to published and createPost as measured by the scheduler and cost parts (defaults: their 2026-11-29 and 2026-11-28 measurements, 13.06 and 4)',
  perPost: {
    ...TODAY_INPUTS.perPost,
    // Measured by the scheduler part on 2026-11-29 (1,000 posts; a run with it feeds its own).
    deliveryWriteUnits: 13.06,
    // Measured by the cost part after the post writes lost their transaction (BENCHMARKS.md).
    createPostWriteUnits: 4,
    // The dispatcher's read (a BatchGetItem per queue batch) and the channel with its credentials;
    // a one-channel post's claim is written against the dispatcher's read, the checkpoint and the
    // outcome against the version the claim wrote.
    deliveryReadUnits: 3,
    deliveryWrites: 3,
    // The entry stays in the scheduled minute's bucket; the outcome takes it out (to SYNC#<day>).
    dueBucketWrites: 1,
    // Put by the claim that starts the post, rewritten by the checkpoint, deleted by the outcome.
    statusIndexWriteUnits: 3,
    statsItemWriteUnits: 0.03,
    streamRecords: 3,
    // The dispatcher sends a queue batch's delivery messages together; the relay a stream batch's events.
    sendRequestsPerMessage: { schedule: 0.1, delivery: 0.1, events: 0.1 },
  },
  timing: { ...TODAY_INPUTS.timing, relayOnPath: false },
  config: { sweeper: { lookaheadSeconds: 120, concurrency: 16, roundTripsPerEntry: 0, sendConcurrency: 16 } },
};

/**
 * The model's input: today's numbers, the manifest's settings, and what the cost and scheduler
 * parts measured if they ran in the same `npm run bench`.
 */
export async function awsModelInputs(
  cost?: CostResult,
  scheduler?: SchedulerResult[],
  base: typeof TODAY_INPUTS = REWORK_INPUTS,
): Promise<AwsModelInput> {
  const config = await manifestConfig();
  const input: AwsModelInput = {
    ...base,
    perPost: { ...base.perPost },
    config: { ...config, sweeper: { ...config.sweeper, ...base.config.sweeper } },
  };
  const create = cost?.measured.find((m) => m.op === 'createPost' && m.variant === '');
  const keyed = cost?.measured.find((m) => m.op === 'createPost' && m.variant === 'Idempotency-Key');
  const gate = cost?.gate[0];
  if (create) {
    input.perPost.createPostWriteUnits = create.writeUnits;
    input.perPost.createPostReadUnits = create.readUnits;
    if (keyed) input.perPost.idempotencyWriteUnits = keyed.writeUnits - create.writeUnits;
  }
  if (gate) input.perPost.gateWriteUnitsPerRequest = gate.writeUnits;
  if (create || gate)
    input.source = `${input.source}; createPost, the gate and the idempotency record as the cost part measured them in this run`;
  // The largest burst's write units per post from due to published (the local stack's own count).
  const burst = scheduler?.filter((r) => r.writeUnits?.total).sort((a, b) => b.posts - a.posts)[0];
  if (burst) {
    input.perPost.deliveryWriteUnits = burst.writeUnits.total;
    input.source = `${input.source}; write units from due to published as the scheduler part measured them in this run (${burst.posts} posts)`;
  }
  return input;
}

export function awsModelSection(input: AwsModelInput, scenarios: readonly AwsScenario[] = SCENARIOS): string {
  const results = scenarios.map((s) => awsModel(input, s));
  const { perPost: p, timing: t, config: c, limits: l } = input;
  const col = (f: (r: AwsModelResult) => string) => results.map(f);
  const head = ['', ...results.map((r) => `${r.scenario.posts.toLocaleString('en-US')} posts`)];
  const align: Array<'l' | 'r'> = ['l', ...results.map(() => 'r' as const)];
  const usd = (n: number) => `$${n < 1 ? n.toFixed(3) : n.toFixed(2)}`;
  const late = (r: AwsModelResult, v: number) => (r.lateness.bounded ? seconds(v) : `> ${seconds(v)}`);

  const outcome = table(head, align, [
    ['DynamoDB WRU (create + deliver)', ...col((r) => fmt(r.dynamo.writeUnits))],
    ['DynamoDB RRU', ...col((r) => fmt(r.dynamo.readUnits))],
    ['DynamoDB $ (on demand)', ...col((r) => usd(r.dynamo.dollars))],
    [
      `table WRU/s while delivering (a new on-demand table: ${fmt(l.onDemandInitialWriteUnits)})`,
      ...col(
        (r) =>
          `${fmt(r.dynamo.peakWriteUnitsPerSecond)}${r.dynamo.peakWriteUnitsPerSecond > l.onDemandInitialWriteUnits ? ' ❌' : ''}`,
      ),
    ],
    [
      'sweep (mark + send dispatches)',
      ...col((r) => `${seconds(r.sweep.seconds)}${r.sweep.fitsTimeout ? '' : ' ❌ timeout'}`),
    ],
    [
      'deliveries/s (bottleneck)',
      ...col(
        (r) =>
          `${fmt(Math.min(r.lambda.deliveriesPerSecond, r.lambda.dispatchesPerSecond, r.lambda.relayPostsPerSecond))} (${r.lambda.bottleneck})`,
      ),
    ],
    [
      'delivery Lambdas at once / deliveries in flight',
      ...col((r) => `${r.lambda.deliveryPeakConcurrency} / ${r.lambda.deliveriesInFlight}`),
    ],
    [
      'all Lambdas at once (delivery, dispatch, relay, sweep)',
      ...col((r) => String(r.lambda.peakConcurrency)),
    ],
    ['Lambda $ (delivery worker)', ...col((r) => usd(r.lambda.dollars))],
    [
      'SQS requests (schedule / delivery / events)',
      ...col((r) => QUEUES.map((q) => fmt(r.sqs.requests[q])).join(' / ')),
    ],
    ['SQS $', ...col((r) => usd(r.sqs.dollars))],
    ['delivery queue sends/s at peak', ...col((r) => fmt(r.sqs.peakSendsPerSecond))],
    [
      'lateness p50 / p99 / last',
      ...col((r) => `${late(r, r.lateness.p50)} / ${late(r, r.lateness.p99)} / ${late(r, r.lateness.max)}`),
    ],
  ]);

  const worst = results.at(-1) as AwsModelResult;
  const hot = table(
    [
      'Key',
      'Written / read by',
      ...results.map((r) => `units/s at ${r.scenario.posts.toLocaleString('en-US')}`),
      'Limit',
      'Reaches it at',
      'Shards needed',
      'What keeps it under',
    ],
    ['l', 'l', ...results.map(() => 'r' as const), 'r', 'l', 'r', 'l'],
    worst.hotKeys.map((k, i) => [
      k.key,
      k.by,
      ...results.map((r) => {
        const u = (r.hotKeys[i] as HotKey).unitsPerSecond;
        return `${fmt(u)}${u > k.limit ? ' ❌' : ''}`;
      }),
      `${fmt(k.limit)} ${k.kind === 'write' ? 'WRU' : 'RRU'}/s`,
      k.reachedAt,
      String(worst.hotKeys[i]?.shardsNeeded ?? 1),
      k.keepsUnder,
    ]),
  );

  const over = worst.hotKeys.filter((k) => k.unitsPerSecond > k.limit).map((k) => k.key);
  return `Computed ${today()} by \`npm run bench\` (\`BENCH_ONLY=awsmodel\`, test/bench/aws-model.ts) from its
inputs: a model, not a measurement on AWS.

- **Inputs**: ${input.source}. Per post: ${p.deliveryWrites} writes, ${p.deliveryWriteUnits} WRU and ${p.deliveryReadUnits} RRU from due to
  published; createPost ${p.createPostWriteUnits} WRU / ${p.createPostReadUnits} RRU; the gate ${p.gateWriteUnitsPerRequest} WRU per request.
- **Settings** (lib/operations.ts; the sweeper’s own constants, functions/core/timing.ts and its module):
  delivery worker ${c.delivery.maxConcurrency} batches of ${c.delivery.batchSize} at once (the event source's maximum concurrency),
  dispatcher ${c.dispatcher.maxConcurrency} × ${c.dispatcher.batchSize}; sweeper every ${c.sweeper.everySeconds} s, ${c.sweeper.timeoutSeconds} s timeout, ${c.sweeper.lookaheadSeconds} s lookahead,
  ${
    c.sweeper.roundTripsPerEntry
      ? `${c.sweeper.roundTripsPerEntry} round trips per post, ${c.sweeper.concurrency} posts at a time, then`
      : 'no write per post, then'
  } the dispatches sent 10 per request, ${
    (c.sweeper.sendConcurrency ?? 1) > 1
      ? `${c.sweeper.sendConcurrency} requests at once`
      : 'one request after another'
  }.
- **Assumptions**: a DynamoDB round trip ${t.dynamoRoundTripMs} ms, an SQS one ${t.sqsRoundTripMs} ms; a platform's create call
  ${t.platformLatencyMs} ms, so a delivery (${t.deliveryRoundTrips} AWS round trips + the call) holds its Lambda ≈ ${fmt(worst.lambda.deliveryMs)} ms; the
  records of a batch run in parallel (${t.lambdaBilledMsPerDelivery} billed ms per delivery, ${c.delivery.memoryMb} MB arm64); ${t.invokeOverheadMs} ms per
  batch for the event source's invoke; ${t.pipelineLatencySeconds} s fixed latency (SQS delay resolution, stream and queue
  polling); the stream relay ${fmt(t.relayRecordsPerSecond)} records/s over ${t.relayShards} shards (${p.streamRecords} per post)${
    t.relayOnPath ? ', on the path to the first delivery' : ', off the path to the first delivery'
  }. One channel per post,
  all posts of one organization created over ${scenarios[0]?.createdOverSeconds ?? 0} s (the worst case for its keys), no platform rate limits.
- **Lateness** of the k-th post = the sweep's overrun of its ${worst.sweep.leadSeconds} s lead + the fixed latency + k ÷ the
  slowest stage (${t.relayOnPath ? 'dispatcher, stream relay, delivery' : 'dispatcher, delivery'}).
- **Limits**: ${fmt(l.partitionWriteUnits)} WRU/s and ${fmt(l.partitionReadUnits)} RRU/s per partition key, table or index (adaptive
  capacity can split a hot key's items by sort key after minutes of heat, never a single item, and
  not within a one-minute burst); a new on-demand table serves ${fmt(l.onDemandInitialWriteUnits)} WRU/s at once, then up to
  twice its previous peak.

${outcome}

Hot keys (per-organization keys: all posts in one organization):

${hot}

${over.length ? `Over a partition's limit at ${posts(worst)}: ${over.join('; ')}.` : `No key reaches its partition's limit at ${posts(worst)}.`}${
  worst.sweep.fitsTimeout
    ? ''
    : ` The sweep of ${posts(worst)} (${seconds(worst.sweep.seconds)}) overruns its ${c.sweeper.timeoutSeconds} s timeout: the dispatches it had not sent when it was stopped wait for a later sweep, which meets the same backlog, so their lateness is beyond this model.`
} After the sweep the slowest stage (${worst.lambda.bottleneck}) moves ${fmt(rateOf(worst))} posts/s, and the \`DUE#<minute>\` bucket the deliveries write into takes ${p.dueBucketWrites} writes per post: ${fmt(rateOf(worst) * p.dueBucketWrites)} WRU/s from the first post of a burst for as long as it lasts (${results.map((r) => `${posts(r)}: ${seconds(r.scenario.posts / rateOf(r))}`).join(', ')}); a minute bucket holding more than ≈ ${fmt(rateOf(worst) * 60)} posts keeps it there for over a minute.`;
}
