import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DecryptCommand, type DecryptCommandInput, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { LIMITS } from '#core/constants';
import { type DeliveryMessage, type HeraldEvent, MAX_MESSAGE_BYTES, type WebhookJob } from '#core/messages';
import { checkVariant } from '#core/platforms';
import { type PostRecord, toPost } from '#core/posts';
import { CreatePostBody } from '#core/requests';
import { LOOKAHEAD_SECONDS } from '#core/timing';
import { handler as dispatcher } from '#handlers/schedule-dispatcher';
import { handler as relay } from '#handlers/stream-relay';
import { handler as webhookWorker } from '#handlers/webhook-delivery';
import { handler as fanout } from '#handlers/webhook-fanout';
import { dynamo } from '#shared/clients';
import { s3 } from '#shared/s3';
import { sweep } from '#usecases/schedule-sweeper';
import { fanOutAll } from '#usecases/webhook-fanout';
import {
  channel,
  fixedId,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  webhookEndpoint,
  webhookEndpointItem,
} from '../support/fixtures.ts';
import { FakeS3 } from './support/s3.ts';
import { BATCH_REQUEST_MAX_BYTES } from './support/sqs.ts';
import {
  advance,
  DELIVERY_QUEUE,
  drain,
  EVENTS_QUEUE,
  pumpStream,
  T0,
  useWorld,
  WEBHOOKS_QUEUE,
} from './support/world.ts';

// SQS's size limits, enforced by FakeSqs as SQS enforces them (10 entries, the queue's
// MaximumMessageSize per message, 1 MiB per batch request), against the producers whose messages
// carry whole posts: the dispatcher's snapshot, the relay's post.* events, the webhook fan-out's
// jobs (one event times its endpoints). Batches split by bytes; a message over the queue's limit
// goes by reference (its body in the upload bucket under queue-bodies/) and is resolved on receipt.
// And one organization's failing watchdog write must not hold back every other's dispatches.

vi.hoisted(() => {
  vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '127.0.0.0/8');
  vi.stubEnv('HERALD_TIME_SCALE', undefined);
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', undefined);
  vi.stubEnv('HERALD_QUEUE_BODY_BUCKET', 'herald-test-uploads');
});

const world = useWorld({ platforms: false });
/** The relay, with the failures it reported per invocation. */
const reported: number[] = [];
const relayed: typeof relay = async (event) => {
  const res = await relay(event);
  reported.push(res.batchItemFailures.length);
  return res;
};
const { table, sqs } = world;
const bucket = new FakeS3();
bucket.install(s3);
const kms = mockClient(KMSClient);
const SCHEDULE_QUEUE = process.env.SCHEDULE_QUEUE_URL as string;
const FB = channel(1, 'facebook');

beforeEach(() => {
  bucket.reset();
  kms.reset();
  kms.on(DecryptCommand).callsFake((input: DecryptCommandInput) => ({
    Plaintext: Buffer.from(
      Buffer.from(input.CiphertextBlob ?? [])
        .toString('utf8')
        .replace(/^sealed:/, ''),
    ),
  }));
});

/** Every send stayed within SQS's limits (FakeSqs refuses the others, so a refusal shows here). */
function expectWithinLimits() {
  for (const c of sqs.sendCalls) {
    expect(c.entries).toBeLessThanOrEqual(10);
    expect(c.bytes).toBeLessThanOrEqual(BATCH_REQUEST_MAX_BYTES);
  }
}

/** A one-channel Facebook post of the longest valid text (≈ 126 KB as JSON), scheduled at `at`. */
function longPost(n: number, at: string, text = 'a'.repeat(LIMITS.variantBody)): PostRecord {
  return post({
    id: fixedId('post', n),
    status: 'scheduled',
    scheduled_at: at,
    body: text,
    variants: [{ id: fixedId('variant', n), channel_id: FB.id, body: text, media: [], options: {} }],
  });
}

describe('the dispatcher: ten long posts due in the same second (dispatch-snapshot-size)', () => {
  it('starts all ten (no batch request over 1 MiB; the snapshot only on small posts)', async () => {
    // Arrange: the request is one a client may send (the API's own checks).
    const at = T0.toISOString();
    const text = 'a'.repeat(LIMITS.variantBody);
    expect(
      CreatePostBody().safeParse({
        body: text,
        variants: [{ channel_id: FB.id, body: text }],
        scheduled_at: at,
      }).success,
    ).toBe(true);
    expect(checkVariant('facebook', { body: text }, '/variants/0')).toEqual([]);
    const posts = Array.from({ length: 10 }, (_, i) => longPost(i + 1, at));
    table.seed(orgItem(org()), ...posts.map(postItem));
    for (const p of posts) sqs.put(SCHEDULE_QUEUE, { org_id: ORG_ID, post_id: p.id, scheduled_at: at });

    // Act: the dispatcher over its queue (a refused batch would come back until the DLQ).
    await drain(sqs, SCHEDULE_QUEUE, dispatcher, { horizonMs: 600_000 });

    // Assert
    const sent = sqs.sentTo(DELIVERY_QUEUE).map((s) => s.body as DeliveryMessage);
    expect(sent.map((m) => m.post_id).sort()).toEqual(posts.map((p) => p.id).sort());
    expect(sent.every((m) => m.snapshot === undefined && m.start === at)).toBe(true);
    expect(sqs.deadLetters).toEqual([]);
    expectWithinLimits();
  });

  it('still attaches the snapshot to a small one-channel post (it saves the claim a read)', async () => {
    const at = T0.toISOString();
    const small = longPost(1, at, 'Launch day!');
    table.seed(orgItem(org()), postItem(small));
    sqs.put(SCHEDULE_QUEUE, { org_id: ORG_ID, post_id: small.id, scheduled_at: at });
    await drain(sqs, SCHEDULE_QUEUE, dispatcher, { horizonMs: 600_000 });
    const [msg] = sqs.sentTo(DELIVERY_QUEUE).map((s) => s.body as DeliveryMessage);
    expect(msg?.snapshot?.id).toBe(small.id);
  });
});

describe('the stream relay: ten long posts published in one batch (relay-batch-size)', () => {
  it('relays every post.published event, in requests within the limits, without a retry', async () => {
    // Arrange: ten publishing posts, then each written published (one stream batch).
    const posts = Array.from({ length: 10 }, (_, i) => ({
      ...longPost(i + 1, T0.toISOString()),
      status: 'publishing' as const,
      round: 1,
    }));
    table.seed(orgItem(org()), ...posts.map(postItem));
    for (const p of posts) {
      await dynamo.send(
        new (await import('@aws-sdk/lib-dynamodb')).PutCommand({
          TableName: process.env.TABLE_NAME,
          Item: postItem({ ...p, status: 'published', published_at: T0.toISOString(), version: 2 }),
        }),
      );
    }

    // Act
    reported.length = 0;
    const res = await pumpStream(table, relayed, { retries: 3 });

    // Assert
    expect(res.stuck).toEqual([]);
    expect(reported.every((n) => n === 0)).toBe(true);
    const events = sqs.sentTo(EVENTS_QUEUE).map((s) => s.body as HeraldEvent);
    expect(events.filter((e) => e.type === 'post.published')).toHaveLength(10);
    expectWithinLimits();
  });
});

// ---- webhooks: the fan-out, and a message over the queue's size limit end to end -----------------

interface Received {
  webhookId: string;
  body: string;
}
let server: http.Server;
let url = '';
let received: Received[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ webhookId: String(req.headers['webhook-id']), body: Buffer.concat(chunks).toString() });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});
afterAll(async () => {
  vi.unstubAllEnvs();
  server.closeAllConnections();
  await new Promise<void>((ok) => server.close(() => ok()));
});
beforeEach(() => {
  received = [];
});

const endpoints = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    webhookEndpoint({
      id: fixedId('webhook', i + 1),
      url: `${url}/${i + 1}`,
      event_types: ['post.published'],
      secret: {
        current: Buffer.from(`sealed:whsec_${Buffer.alloc(32, 7).toString('base64')}`).toString('base64'),
      },
      created_at: T0.toISOString(),
      updated_at: T0.toISOString(),
    }),
  );

const publishedEvent = (p: PostRecord, n = 1): HeraldEvent => ({
  id: fixedId('message', n),
  type: 'post.published',
  timestamp: T0.toISOString(),
  org_id: ORG_ID,
  data: { post: toPost({ ...p, status: 'published', published_at: T0.toISOString() }) },
});

describe('the webhook fan-out: one long event to nine endpoints', () => {
  it('sends all nine jobs, in requests within the limits', async () => {
    table.seed(...endpoints(9).map(webhookEndpointItem));
    const event = publishedEvent(longPost(1, T0.toISOString()));

    const [result] = await fanOutAll([event]);

    expect(result).toBe(9);
    const jobs = sqs.sentTo(WEBHOOKS_QUEUE).map((s) => s.body as WebhookJob);
    expect(jobs.map((j) => j.endpoint_id).sort()).toEqual(
      endpoints(9)
        .map((e) => e.id)
        .sort(),
    );
    expectWithinLimits();
  });
});

describe('a message over the queue size limit goes by reference, end to end', () => {
  it('relay → events queue → fan-out → webhooks queue → the receiver gets the whole event', async () => {
    // Arrange: a post whose text JSON-escapes to twice its length (quotes), on three channels:
    // its post.published event is ≈ 380 KB, over the queues' 256 KiB.
    const text = '"'.repeat(LIMITS.variantBody);
    const p: PostRecord = {
      ...longPost(1, T0.toISOString(), text),
      status: 'publishing',
      round: 1,
      variants: [1, 2].map((n) => ({
        id: fixedId('variant', n),
        channel_id: channel(n).id,
        body: text,
        media: [],
        options: {},
      })),
    };
    const [endpoint] = endpoints(1);
    table.seed(orgItem(org()), postItem(p), webhookEndpointItem(endpoint as never));
    const { PutCommand } = await import('@aws-sdk/lib-dynamodb');
    await dynamo.send(
      new PutCommand({
        TableName: process.env.TABLE_NAME,
        Item: postItem({ ...p, status: 'published', published_at: T0.toISOString(), version: 2 }),
      }),
    );

    // Act: the whole way, through the real handlers.
    reported.length = 0;
    expect((await pumpStream(table, relayed, { retries: 3 })).stuck).toEqual([]);
    expect(reported.every((n) => n === 0)).toBe(true);
    await drain(sqs, EVENTS_QUEUE, fanout, { horizonMs: 60_000 });
    await drain(sqs, WEBHOOKS_QUEUE, webhookWorker, { horizonMs: 60_000 });

    // Assert: each queue carried a small pointer; the body went to the bucket once per message.
    for (const q of [EVENTS_QUEUE, WEBHOOKS_QUEUE]) {
      const [only] = sqs.sendCalls.filter((c) => c.queueUrl === q);
      expect(only?.bytes).toBeLessThan(1024);
    }
    const stored = [...bucket.objects.keys()];
    expect(stored).toHaveLength(2);
    expect(stored.every((k) => k.startsWith('herald-test-uploads/queue-bodies/'))).toBe(true);
    expect(received).toHaveLength(1);
    const delivered = JSON.parse(received[0]?.body ?? '{}') as { data: { post: { body: string } } };
    expect(delivered.data.post.body).toBe(text);
    expect(Buffer.byteLength(received[0]?.body ?? '')).toBeGreaterThan(MAX_MESSAGE_BYTES);
    expect(sqs.deadLetters).toEqual([]);
    expectWithinLimits();
  });

  it('refuses a body whose bytes are not the ones referenced (the record returns to the queue)', async () => {
    const [endpoint] = endpoints(1);
    table.seed(webhookEndpointItem(endpoint as never));
    const event = publishedEvent({ ...longPost(1, T0.toISOString(), '"'.repeat(LIMITS.variantBody)) });
    const body = JSON.stringify(event);
    const key = `queue-bodies/${createHash('sha256').update(body).digest('hex')}`;
    bucket.put(
      'herald-test-uploads',
      key,
      Buffer.from(body.replace('published', 'pUblished')),
      'application/json',
    );
    sqs.put(EVENTS_QUEUE, { $queue_body: { key, bytes: Buffer.byteLength(body) } });

    const rounds = await drain(sqs, EVENTS_QUEUE, fanout, { horizonMs: 0 });

    expect(rounds[0]?.failed).toHaveLength(1);
    expect(sqs.sentTo(WEBHOOKS_QUEUE)).toEqual([]);
  });
});

// ---- the sweeper: one organization's failing watchdog write (watchdog-blocks-dispatch) ---------

describe('the sweeper when one watchdog write keeps failing', () => {
  it("dispatches every other organization's posts and moves its cursor; the failure is reported", async () => {
    // Arrange: org A has a post due in 30 s; org B a publishing post whose watchdog time passed and
    // whose every write is throttled.
    const due = new Date(Date.now() + 30_000).toISOString();
    const a = post({ id: fixedId('post', 1), status: 'scheduled', scheduled_at: due });
    const entry = new Date(Date.now() - 310_000).toISOString();
    const b = post({
      id: fixedId('post', 2),
      org_id: OTHER_ORG_ID,
      status: 'publishing',
      round: 1,
      watch_at: new Date(Date.now() - 10_000).toISOString(),
      watch_entry: entry,
      deliveries: {
        [fixedId('channel', 1)]: {
          channel_id: fixedId('channel', 1),
          stage: 'queued',
          external_id: null,
          url: null,
          error: null,
          error_category: null,
          attempts: 0,
          updated_at: entry,
          round: 1,
        },
      },
    });
    table.seed(
      { ...keys.sweepCursor(), entity: 'sweep_cursor', through: Date.now() },
      { ...postItem(a), ...keys.dueWork(due, ORG_ID, a.id) },
      { ...postItem(b), ...keys.dueWork(entry, OTHER_ORG_ID, b.id) },
    );
    table.fail({
      op: 'PutItem',
      kind: 'ProvisionedThroughputExceededException',
      times: Number.POSITIVE_INFINITY,
      match: (v) => v.items[0]?.sk === keys.post(OTHER_ORG_ID, b.id).sk,
    });

    // Act
    const result = await sweep(new Date());

    // Assert: A went out on time, the cursor moved; B's failure is counted (the handler throws on it).
    expect(sqs.sentTo(SCHEDULE_QUEUE).map((s) => (s.body as { post_id: string }).post_id)).toEqual([a.id]);
    expect(table.get(keys.sweepCursor())?.through).toBe(Date.now() + LOOKAHEAD_SECONDS * 1000);
    expect(result).toMatchObject({ dispatched: 1, watchFailed: 1 });

    // And once the table recovers, the next watchdog run deals with B.
    table.heal();
    advance(60_000);
    expect(await sweep(new Date())).toMatchObject({ redriven: 1, watchFailed: 0 });
  });
});
