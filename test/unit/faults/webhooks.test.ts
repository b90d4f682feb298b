import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DecryptCommand, type DecryptCommandInput, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import type { WebhookJob } from '#core/messages';
import type { WebhookDeliveryRecord, WebhookEndpointRecord, WebhookEvent } from '#core/webhooks';
import { handler as webhookWorker } from '#handlers/webhook-delivery';
import { deliverJob } from '#usecases/webhook-delivery';
import { fixedId, lambdaContext, ORG_ID, webhookEndpoint, webhookEndpointItem } from '../support/fixtures.ts';
import type { Item, RequestView } from './support/dynamo.ts';
import { invoke, visibilityMs } from './support/sqs.ts';
import { advance, drain, otherContainer, T0, useWorld, WEBHOOKS_QUEUE } from './support/world.ts';

// Fault injection on webhook deliveries: duplicated and redelivered jobs, DynamoDB throttling and
// lost answers on the attempt's claim and record, and a next attempt that could not be queued —
// through the real SQS handler, signing, address policy and a loopback receiver. "One POST per
// attempt": a duplicate never makes a second request; only a worker that died between its POST and
// its record re-sends that same attempt (same webhook-id), as docs/architecture/webhooks.md says.

vi.hoisted(() => {
  vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '127.0.0.0/8');
  vi.stubEnv('HERALD_TIME_SCALE', undefined);
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', undefined);
});

const world = useWorld({ platforms: false });
const { table, sqs } = world;
const kms = mockClient(KMSClient);

const ENDPOINT_ID = fixedId('webhook', 1);
const EVENT: WebhookEvent = {
  id: fixedId('message', 7),
  type: 'post.published',
  timestamp: T0.toISOString(),
  data: { post_id: fixedId('post', 1) },
};
const DELIVERY_KEY = keys.webhookDelivery(ORG_ID, ENDPOINT_ID, EVENT.id);

// ---- the receiver ----------------------------------------------------------------------------

interface Received {
  webhookId: string;
  at: number;
}
let server: http.Server;
let url = '';
let received: Received[] = [];
let answers: number[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push({ webhookId: String(req.headers['webhook-id']), at: Date.now() });
      res.writeHead(answers.shift() ?? 200).end('ok');
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
  answers = [];
  kms.reset();
  kms.on(DecryptCommand).callsFake((input: DecryptCommandInput) => ({
    Plaintext: Buffer.from(
      Buffer.from(input.CiphertextBlob ?? [])
        .toString('utf8')
        .replace(/^sealed:/, ''),
    ),
  }));
  table.seed(
    webhookEndpointItem(
      webhookEndpoint({
        id: ENDPOINT_ID,
        url,
        secret: {
          current: Buffer.from(`sealed:whsec_${Buffer.alloc(32, 7).toString('base64')}`).toString('base64'),
        },
        created_at: T0.toISOString(),
        updated_at: T0.toISOString(),
      }),
    ),
  );
});

// ---- helpers -----------------------------------------------------------------------------------

const job = (attempt = 1): WebhookJob => ({
  org_id: ORG_ID,
  endpoint_id: ENDPOINT_ID,
  event: EVENT,
  attempt,
  due_at: new Date().toISOString(),
});

const record = () => table.get<WebhookDeliveryRecord & Item>(DELIVERY_KEY);
const endpointNow = () => table.get<WebhookEndpointRecord & Item>(keys.webhookEndpoint(ORG_ID, ENDPOINT_ID));
const jobsSent = () => sqs.sentTo(WEBHOOKS_QUEUE).map((s) => s.body as WebhookJob);
const attemptsOf = (r: WebhookDeliveryRecord | undefined) =>
  (r?.attempts ?? []).map((a) => [a.attempt, a.status_code]);

const isClaim = (v: RequestView) => /^SET claim_n = :n,/.test(String(v.raw.UpdateExpression));
const isRecord = (v: RequestView) =>
  String(v.raw.ConditionExpression) === 'claim_token = :token AND claim_n = :n';

/** Receives what is visible and runs one invocation per message, all at once, each in its own container. */
async function concurrently(n: number) {
  const batch = sqs.receive(WEBHOOKS_QUEUE, n);
  return Promise.all(
    batch.map((m) => invoke(sqs, otherContainer(deliverJob), [m], lambdaContext('webhooks'))),
  );
}

describe('duplicated and redelivered webhook jobs: one POST per attempt', () => {
  it('the same job twice in one batch: one POST, one recorded attempt', async () => {
    sqs.put(WEBHOOKS_QUEUE, job());
    sqs.put(WEBHOOKS_QUEUE, job());

    const rounds = await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(rounds.map((r) => [r.ids.length, r.failed.length])).toEqual([[2, 0]]);
    expect(received).toHaveLength(1);
    expect(received[0]?.webhookId).toBe(EVENT.id);
    expect(record()).toMatchObject({ status: 'delivered', done: 1 });
    expect(attemptsOf(record())).toEqual([[1, 200]]);
  });

  it('the same job in two concurrent invocations, and again later: one POST', async () => {
    sqs.put(WEBHOOKS_QUEUE, job());
    sqs.put(WEBHOOKS_QUEUE, job());

    const failed = await concurrently(2);
    advance(600_000);
    sqs.put(WEBHOOKS_QUEUE, job()); // a late duplicate, after the attempt was recorded
    await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(failed).toEqual([[], []]);
    expect(received).toHaveLength(1);
    expect(attemptsOf(record())).toEqual([[1, 200]]);
    expect(jobsSent().filter((j) => j.attempt > 1)).toEqual([]);
  });

  it('a failing receiver: attempt 1 duplicated → one POST and one attempt 2; attempt 2 duplicated → one POST', async () => {
    // Arrange: the receiver fails the first request, then recovers.
    answers = [500];
    sqs.put(WEBHOOKS_QUEUE, job());
    sqs.put(WEBHOOKS_QUEUE, job());

    // Act 1: both copies of attempt 1.
    await concurrently(2);

    // Assert 1: one POST, one next attempt queued for +5 s (jitter 0).
    expect(received).toHaveLength(1);
    expect(jobsSent().map((j) => j.attempt)).toEqual([1, 1, 2]);
    expect(sqs.sentTo(WEBHOOKS_QUEUE).at(-1)?.delaySeconds).toBe(5);
    expect(record()).toMatchObject({ status: 'pending', done: 1 });
    expect(endpointNow()?.failure).toMatchObject({ consecutive_failures: 1, last_status_code: 500 });

    // Act 2: SQS hands attempt 2 out twice.
    const second = jobsSent().at(-1) as WebhookJob;
    sqs.put(WEBHOOKS_QUEUE, second, 5);
    await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    // Assert 2
    expect(received.map((r) => [r.webhookId, r.at - T0.getTime()])).toEqual([
      [EVENT.id, 0],
      [EVENT.id, 5_000],
    ]);
    expect(record()).toMatchObject({ status: 'delivered', done: 2 });
    expect(attemptsOf(record())).toEqual([
      [1, 500],
      [2, 200],
    ]);
    expect(endpointNow()?.failure).toEqual({ consecutive_failures: 0 });
  });

  it('the next attempt could not be queued: the redelivered job re-sends it once, without a second POST', async () => {
    // Arrange: SQS refuses the attempt-2 job after attempt 1 (a 500) was recorded.
    answers = [500];
    sqs.failSends('reject', 1, (body) => (body as WebhookJob).attempt === 2);
    sqs.put(WEBHOOKS_QUEUE, job());

    // Act
    const rounds = await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    // Assert: returned once, then "resent-next" (attempt 2 was due at +5 s: sent with no delay), one POST.
    expect(rounds.map((r) => r.failed.length)).toEqual([1, 0, 0]);
    expect(rounds.map((r) => r.at - T0.getTime())).toEqual([
      0,
      visibilityMs('webhooks'),
      visibilityMs('webhooks'),
    ]);
    expect(received).toHaveLength(2);
    expect(jobsSent().filter((j) => j.attempt === 2)).toHaveLength(1);
    expect(attemptsOf(record())).toEqual([
      [1, 500],
      [2, 200],
    ]);
  });
});

describe('DynamoDB faults on the attempt claim and record', () => {
  it('claim throttled twice: the SDK retries, one POST', async () => {
    table.fail({ op: 'UpdateItem', kind: 'ThrottlingException', times: 2, match: isClaim });
    sqs.put(WEBHOOKS_QUEUE, job());

    const rounds = await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(table.callsOf('UpdateItem', (c) => isClaim(c.view)).map((c) => c.outcome)).toEqual([
      'ThrottlingException',
      'ThrottlingException',
      'ok',
    ]);
    expect(rounds.map((r) => r.failed.length)).toEqual([0]);
    expect(received).toHaveLength(1);
  });

  it('claim throttled on every SDK attempt: batch item failure, no POST; the redelivery POSTs once', async () => {
    table.fail({
      op: 'UpdateItem',
      kind: 'ProvisionedThroughputExceededException',
      times: 3,
      match: isClaim,
    });
    sqs.put(WEBHOOKS_QUEUE, job());

    const rounds = await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(rounds.map((r) => [r.at - T0.getTime(), r.failed.length])).toEqual([
      [0, 1],
      [visibilityMs('webhooks'), 0],
    ]);
    expect(received.map((r) => r.at - T0.getTime())).toEqual([visibilityMs('webhooks')]);
    expect(attemptsOf(record())).toEqual([[1, 200]]);
  });

  it('record refused after the POST (the worker as good as died): the same attempt is re-sent once, same webhook-id', async () => {
    // The at-least-once case of docs/architecture/webhooks.md: the lease expires, the redelivered job takes the attempt over.
    table.fail({ op: 'UpdateItem', kind: 'InternalServerError', times: 3, match: isRecord });
    sqs.put(WEBHOOKS_QUEUE, job());

    const rounds = await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(rounds.map((r) => r.failed.length)).toEqual([1, 0]);
    expect(received.map((r) => r.webhookId)).toEqual([EVENT.id, EVENT.id]);
    expect(record()).toMatchObject({ status: 'delivered', done: 1 });
    expect(attemptsOf(record())).toEqual([[1, 200]]);
  });

  // Regression: the SDK retries a claim DynamoDB applied but whose answer was lost; the worker must
  // recognise the refused retry as its own claim, not another worker's, and still deliver.
  it('a claim applied but whose answer was lost is still delivered', async () => {
    table.fail({ op: 'UpdateItem', kind: 'ECONNRESET', when: 'after', match: isClaim });
    sqs.put(WEBHOOKS_QUEUE, job());

    await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);
    advance(24 * 3_600_000);
    await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(received).toHaveLength(1);
    expect(record()).toMatchObject({ status: 'delivered' });
  });

  // Regression: the same for the record of a failed attempt — the worker must recognise its own
  // applied record (not a lost claim), keep the failure bookkeeping and queue attempt 2.
  it('a failed attempt whose record answer was lost still gets its next attempt', async () => {
    answers = [500];
    table.fail({ op: 'UpdateItem', kind: 'ECONNRESET', when: 'after', match: isRecord });
    sqs.put(WEBHOOKS_QUEUE, job());

    await drain(sqs, WEBHOOKS_QUEUE, webhookWorker);

    expect(jobsSent().filter((j) => j.attempt === 2)).toHaveLength(1);
    expect(received).toHaveLength(2);
    expect(record()).toMatchObject({ status: 'delivered', done: 2 });
  });
});
