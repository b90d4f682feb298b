import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type {
  Context,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
  SQSEvent,
  SQSRecord,
} from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, vi } from 'vitest';
import { keys } from '#adapters/keys';
import type { ChannelRecord } from '#core/accounts';
import type { DeliveryMessage } from '#core/messages';
import type { Platform } from '#core/platforms';
import { type DeliveryRecord, type PostRecord, startPublishing } from '#core/posts';
import { dynamo } from '#shared/clients';
import { clearAuthCache } from '#usecases/support/authenticate';
import type { FakeBluesky } from '../../../fakes/bluesky.ts';
import { allFakes } from '../../../fakes/index.ts';
import type { FakeMastodon } from '../../../fakes/mastodon.ts';
import type { FakePlatforms, FakeRequest, FakeResponse } from '../../../fakes/server.ts';
import type { ThreadsFake } from '../../../fakes/threads.ts';
import type { FakeX } from '../../../fakes/x.ts';
import {
  channel,
  channelItem,
  fixedId,
  type Item,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
} from '../../support/fixtures.ts';
import { FakeDynamo } from './dynamo.ts';
import { FakeSqs, invoke, type Message } from './sqs.ts';

// What the fault-injection tests share: a clock the test moves (only Date is faked: sockets, the
// platform fakes and the SDK's own timers stay real), the SDK's retry backoff at zero (its jitter is
// Math.random × base, so the retries still happen, just without real sleeps), the platform contract
// fakes, and helpers that run the real Lambda handlers over the fake queues and table stream.

export const T0 = new Date('2030-06-10T09:30:00.000Z');

export const DELIVERY_QUEUE = process.env.DELIVERY_QUEUE_URL as string;
export const EVENTS_QUEUE = process.env.EVENTS_QUEUE_URL as string;
export const WEBHOOKS_QUEUE = process.env.WEBHOOKS_QUEUE_URL as string;

/** Fake Date only, at T0; Math.random 0 (no SDK backoff sleeps, no jitter). Call in beforeEach. */
function freezeTime(at: Date = T0): void {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(at);
  vi.spyOn(Math, 'random').mockReturnValue(0);
}

function thawTime(): void {
  vi.useRealTimers();
  vi.restoreAllMocks();
}

export const advance = (ms: number) => vi.setSystemTime(Date.now() + ms);
export const iso = (offsetMs = 0) => new Date(Date.now() + offsetMs).toISOString();

/**
 * The SDK's retry quota (500 tokens, spent by retries, refunded by successes) is per client and
 * lives as long as the module: refill it so one test's outage cannot starve the next test's retries.
 */
export async function refillRetryQuota(client: DynamoDBClient | { config: unknown }): Promise<void> {
  const config = client.config as { retryStrategy?: () => Promise<unknown> };
  const strategy = (await config.retryStrategy?.()) as { capacity?: number } | undefined;
  if (strategy && typeof strategy.capacity === 'number') strategy.capacity = 500;
}

/**
 * The table (behind the production DynamoDB client), the queues, and — unless `platforms: false` —
 * every platform's contract fake on a loopback server; all reset before each test, at T0.
 */
export function useWorld(opts: { platforms?: boolean } = {}) {
  const table = new FakeDynamo();
  table.install(dynamo);
  const sqs = new FakeSqs();
  let fakes: FakePlatforms | undefined;
  beforeAll(async () => {
    if (opts.platforms !== false) fakes = await startPlatforms();
  });
  afterAll(async () => {
    if (fakes) await stopPlatforms(fakes);
  });
  beforeEach(async () => {
    freezeTime();
    table.reset();
    sqs.reset();
    fakes?.reset();
    clearAuthCache();
    await refillRetryQuota(dynamo);
  });
  afterEach(() => {
    for (const restore of restorers.splice(0)) restore();
    thawTime();
  });
  return {
    table,
    sqs,
    get fakes(): FakePlatforms {
      if (!fakes) throw new Error('this world has no platform fakes');
      return fakes;
    },
  };
}

// ---- platforms -----------------------------------------------------------------------------

const restorers: Array<() => void> = [];

/**
 * Runs `hook` on every request a platform's fake handled, after it acted and before its answer
 * leaves (a test's view of "the platform accepted it"). Undone after the test.
 */
export function whenPlatformAnswers(
  fakes: FakePlatforms,
  platform: Platform,
  hook: (req: FakeRequest, res: FakeResponse) => void | Promise<void>,
): void {
  const fake = fakes.fake(platform);
  const original = fake.handle;
  fake.handle = async (req, ctx) => {
    const res = await original.call(fake, req, ctx);
    if (res) await hook(req, res);
    return res;
  };
  restorers.push(() => {
    fake.handle = original;
  });
}

/** Requests a platform's fake received, by method and path. */
export const platformRequests = (fakes: FakePlatforms, platform: Platform, method: string, path: RegExp) =>
  fakes.requests(platform).filter((r) => r.method === method && path.test(r.path));

/** The platforms these tests publish to: the ones `credentialsFor` can connect. */
export type TestedPlatform = 'bluesky' | 'mastodon' | 'threads' | 'x';

/** The path of each platform's create call (POST): once it answered 2xx, the post exists there. */
export const CREATE_PATH: Record<TestedPlatform, RegExp> = {
  bluesky: /^\/xrpc\/com\.atproto\.repo\.createRecord$/,
  mastodon: /^\/api\/v1\/statuses$/,
  threads: /\/threads_publish$/,
  x: /^\/2\/tweets$/,
};

/** The posts a platform's fake holds, each by the external id Herald records (Bluesky: its at:// URI). */
export function platformPosts(fakes: FakePlatforms, platform: TestedPlatform): Array<{ id: string }> {
  switch (platform) {
    case 'bluesky':
      return fakes.fake<FakeBluesky>('bluesky').posts.map((p) => ({ id: p.uri }));
    case 'mastodon':
      return fakes.fake<FakeMastodon>('mastodon').posts;
    case 'threads':
      return fakes.fake<ThreadsFake>('threads').posts;
    case 'x':
      return fakes.fake<FakeX>('x').posts;
  }
}

async function startPlatforms(): Promise<FakePlatforms> {
  const fakes = await allFakes().start();
  Object.assign(process.env, fakes.env());
  return fakes;
}

async function stopPlatforms(fakes: FakePlatforms): Promise<void> {
  for (const name of Object.keys(fakes.env())) delete process.env[name];
  await fakes.stop();
}

let accounts = 0;

/** Credentials a platform's contract fake accepts (a fresh Bluesky account each time). */
export function credentialsFor(fakes: FakePlatforms, platform: Platform): Record<string, unknown> {
  switch (platform) {
    case 'bluesky':
      accounts += 1;
      return {
        service: fakes.url('bluesky'),
        identifier: `acme${accounts}.bsky.social`,
        app_password: 'app-password',
      };
    case 'mastodon':
      return { instance: fakes.url('mastodon'), access_token: 'token' };
    case 'threads':
      return { access_token: 'token', account_id: '17841400000000001' };
    case 'x':
      return { access_token: 'token', account_id: '1500000000000000001' };
    default:
      throw new Error(`no credentials for ${platform} in these tests`);
  }
}

/** A connected channel and its credentials, as table items. */
export function connected(n: number, platform: Platform, credentials: Record<string, unknown>) {
  const ch: ChannelRecord = {
    ...channel(n, platform),
    handle: String(credentials.identifier ?? `acme-${n}`),
  };
  const items: Item[] = [
    channelItem(ch),
    { ...keys.channelCredentials(ORG_ID, ch.id), entity: 'channel_credentials', credentials },
  ];
  return { channel: ch, items };
}

/** A post that just started publishing round 1 to `channels`, each with its own text. */
function publishingPost(channels: ChannelRecord[], text: (ch: ChannelRecord) => string, n = 1): PostRecord {
  return startPublishing(
    post({
      id: fixedId('post', n),
      variants: channels.map((ch, i) => ({
        id: fixedId('variant', n * 10 + i),
        channel_id: ch.id,
        body: text(ch),
        media: [],
        options: {},
      })),
    }),
    new Date(Date.now() - 1000),
  );
}

/** The org, one connected channel per platform, and a post publishing `text` to all of them. */
function seedPublishing(table: FakeDynamo, fakes: FakePlatforms, platforms: Platform[], text: string, n = 1) {
  const chans = platforms.map((p, i) => connected(n * 10 + i, p, credentialsFor(fakes, p)));
  const p = publishingPost(
    chans.map((c) => c.channel),
    () => text,
    n,
  );
  table.seed(orgItem(org()), ...chans.flatMap((c) => c.items), postItem(p));
  return {
    post: p,
    channels: chans.map((c) => c.channel),
    messages: chans.map((c) => messageOf(p, c.channel.id)),
  };
}

const messageOf = (p: PostRecord, channelId: string): DeliveryMessage => ({
  org_id: p.org_id,
  post_id: p.id,
  channel_id: channelId,
  round: p.round,
});

/**
 * One delivery for the worker: the org, a connected channel on `platform`, a post publishing `text`
 * to it, and `copies` of its delivery message on the delivery queue.
 */
export function seedDelivery(
  world: { table: FakeDynamo; sqs: FakeSqs; fakes: FakePlatforms },
  platform: Platform,
  text: string,
  { copies = 1 }: { copies?: number } = {},
) {
  const { table, sqs, fakes } = world;
  const seeded = seedPublishing(table, fakes, [platform], text);
  const [msg] = seeded.messages;
  const [ch] = seeded.channels;
  if (!msg || !ch) throw new Error('unreachable');
  for (let i = 0; i < copies; i++) sqs.put(DELIVERY_QUEUE, msg);
  return {
    post: seeded.post,
    channel: ch,
    msg,
    /** The delivery as the table has it now. */
    delivery: () => deliveryOf(table, seeded.post.id, ch.id),
  };
}

export function storedPost(table: FakeDynamo, postId: string): PostRecord {
  const p = table.get<PostRecord & Item>(keys.post(ORG_ID, postId));
  if (!p) throw new Error(`post ${postId} is not in the table`);
  return p;
}

function deliveryOf(table: FakeDynamo, postId: string, channelId: string): DeliveryRecord {
  return storedPost(table, postId).deliveries[channelId] as DeliveryRecord;
}

// ---- running the handlers ----------------------------------------------------------------------

type SqsHandler = Parameters<typeof invoke>[1];

/**
 * Another Lambda container's copy of an SQS handler. A handler module keeps one BatchProcessor per
 * container (Lambda runs one invocation at a time in it), so invocations that overlap in a test must
 * not share it: this builds the handler as the module does (`processPartialResponse` over the same
 * use case), with a processor of its own.
 */
export function otherContainer(useCase: (body: never) => Promise<unknown>): SqsHandler {
  return (event: SQSEvent, context: Context) =>
    processPartialResponse(
      event,
      async (record: SQSRecord) => {
        await useCase(JSON.parse(record.body) as never);
      },
      new BatchProcessor(EventType.SQS),
      { context, throwOnFullBatchFailure: false },
    );
}

interface Round {
  at: number;
  ids: string[];
  failed: string[];
}

/**
 * Runs the queue's consumer until the queue is empty or the next message would only be visible
 * after `horizonMs` from now: each round receives what is visible, invokes the handler, and when
 * nothing is visible moves the clock to the next message. Returns the rounds.
 */
export async function drain(
  sqs: FakeSqs,
  queueUrl: string,
  handler: SqsHandler,
  opts: { horizonMs?: number; context?: Context; batch?: number } = {},
): Promise<Round[]> {
  const until = Date.now() + (opts.horizonMs ?? 3_600_000);
  const context = opts.context ?? lambdaContext('worker');
  const rounds: Round[] = [];
  for (let guard = 0; guard < 200; guard++) {
    const batch: Message[] = sqs.receive(queueUrl, opts.batch ?? 10);
    if (batch.length) {
      const failed = await invoke(sqs, handler, batch, context);
      rounds.push({ at: Date.now(), ids: batch.map((m) => m.id), failed });
      continue;
    }
    const next = sqs.nextVisibleAt(queueUrl);
    if (next === undefined || next > until) return rounds;
    vi.setSystemTime(Math.max(next, Date.now()));
  }
  throw new Error('drain: the queue never settled');
}

type StreamHandler = (event: DynamoDBStreamEvent & { shardId?: string }) => Promise<DynamoDBBatchResponse>;

/** The shard the fake table's stream is one of (a windowed mapping names it in every batch). */
export const SHARD_ID = 'shardId-00000001900000000000-0000fa4e';

/**
 * The table stream into the relay, as Lambda's event source mapping with ReportBatchItemFailures
 * and a tumbling window runs it: batches of one shard that name it (`shardId: null` leaves it out,
 * as a mapping without a window does); on a reported failure the batch is retried from that record
 * (the ones before it are checkpointed), up to `retries` times. Returns how many invocations it
 * took.
 */
export async function pumpStream(
  table: FakeDynamo,
  handler: StreamHandler,
  opts: { retries?: number; records?: DynamoDBRecord[]; shardId?: string | null } = {},
): Promise<{ invocations: number; stuck: DynamoDBRecord[] }> {
  const shard = opts.shardId === null ? {} : { shardId: opts.shardId ?? SHARD_ID };
  let pending = opts.records ?? table.takeStream();
  let invocations = 0;
  let retries = 0;
  while (pending.length) {
    invocations += 1;
    const res = await handler({ Records: pending, ...shard });
    const failed = res.batchItemFailures[0]?.itemIdentifier;
    if (failed === undefined) {
      pending = opts.records ? [] : table.takeStream();
      continue;
    }
    retries += 1;
    const from = pending.findIndex((r) => r.dynamodb?.SequenceNumber === failed);
    pending = pending.slice(Math.max(0, from));
    if (retries > (opts.retries ?? 5)) return { invocations, stuck: pending };
  }
  return { invocations, stuck: [] };
}

/**
 * One thread delivery for the worker: a post whose variant on `platform` has the root `texts[0]`,
 * a follow-up item for each further text and, given, a first comment; its message on the queue.
 */
export function seedThreadDelivery(
  world: { table: FakeDynamo; sqs: FakeSqs; fakes: FakePlatforms },
  platform: Platform,
  texts: string[],
  comment?: string,
) {
  const { table, sqs, fakes } = world;
  const ch = connected(10, platform, credentialsFor(fakes, platform));
  const [root, ...items] = texts;
  const p = startPublishing(
    post({
      id: fixedId('post', 1),
      type: 'thread',
      variants: [
        {
          id: fixedId('variant', 10),
          channel_id: ch.channel.id,
          body: root ?? '',
          media: [],
          options: {},
          thread: items.map((body) => ({ body, media: [] })),
          first_comment: comment ? { body: comment } : null,
        },
      ],
    }),
    new Date(Date.now() - 1000),
  );
  table.seed(orgItem(org()), ...ch.items, postItem(p));
  const msg = messageOf(p, ch.channel.id);
  sqs.put(DELIVERY_QUEUE, msg);
  return {
    post: p,
    channel: ch.channel,
    msg,
    delivery: () => deliveryOf(table, p.id, ch.channel.id),
  };
}
