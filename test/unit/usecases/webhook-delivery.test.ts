import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DecryptCommand, type DecryptCommandInput, KMSClient } from '@aws-sdk/client-kms';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  PutCommand,
  type PutCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import type { WebhookJob } from '#core/messages';
import {
  type DeliveryAttempt,
  newSigningSecret,
  type WebhookEndpointRecord,
  type WebhookEvent,
  webhookBody,
} from '#core/webhooks';
import { testWebhookEndpoint } from '#usecases/test-webhook-endpoint';
import { deliverJob } from '#usecases/webhook-delivery';
import { captureLines, emfOf, emfProblems } from '../support/emf.ts';
import { rejectedApiError } from '../support/errors.ts';
import { fixedId, type Item, ORG_ID, webhookEndpoint, webhookEndpointItem } from '../support/fixtures.ts';

// The webhook delivery worker and the test delivery, against mocked DynamoDB, SQS and KMS and a
// real loopback receiver. The address policy is read once per process: loopback is allow-listed
// before anything computes it (as the local stack does for its test receivers); every other
// private address stays forbidden.

vi.hoisted(() => {
  vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '127.0.0.0/8');
  vi.stubEnv('HERALD_TIME_SCALE', undefined);
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', undefined);
  // Above SILENT, as the outcome lines are read.
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
});

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const kms = mockClient(KMSClient);
/** The JSON lines the code under test writes (read by the outcome-line tests; kept out of the output). */
const lines = captureLines();

const ENDPOINT_ID = fixedId('webhook', 1);
const EVENT_ID = fixedId('message', 1);
const QUEUE_URL = process.env.WEBHOOKS_QUEUE_URL;
const KEY_ID = process.env.WEBHOOK_SECRETS_KEY_ID;
const DELIVERY_KEY = keys.webhookDelivery(ORG_ID, ENDPOINT_ID, EVENT_ID);
const ENDPOINT_KEY = keys.webhookEndpoint(ORG_ID, ENDPOINT_ID);

// ---- the loopback receiver ----------------------------------------------------------------------

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

let server: http.Server;
let receiverUrl = '';
let received: Received[] = [];
let answer = 200;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        path: req.url ?? '',
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      });
      res.writeHead(answer, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});

afterAll(async () => {
  vi.unstubAllEnvs();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

// ---- the mocked table, queue and key ---------------------------------------------------------------

/** Sealed secret (base64 ciphertext) → plaintext, as the mocked KMS opens it. */
const sealedSecrets = new Map<string, string>();

/** A fresh ciphertext per call, so the secrets cache never answers for KMS. */
function seal(secret: string): string {
  const sealed = Buffer.from(`sealed:${randomUUID()}`).toString('base64');
  sealedSecrets.set(sealed, secret);
  return sealed;
}

let stored: Item | undefined;
let claimFailure: Error | undefined;
let recordFails = false;

function endpoint(patch: Partial<WebhookEndpointRecord> = {}, secret = newSigningSecret()) {
  const rec = webhookEndpoint({
    id: ENDPOINT_ID,
    url: receiverUrl,
    event_types: ['post.published', 'post.failed'],
    secret: { current: seal(secret) },
    ...patch,
  });
  stored = webhookEndpointItem(rec);
  return { rec, secret };
}

const EVENT: WebhookEvent = {
  id: EVENT_ID,
  type: 'post.published',
  timestamp: '2030-01-01T00:00:00.000Z',
  data: { post_id: fixedId('post', 1), channel_id: fixedId('channel', 1) },
};

const job = (attempt = 1, dueInMs = 0): WebhookJob => ({
  org_id: ORG_ID,
  endpoint_id: ENDPOINT_ID,
  event: EVENT,
  attempt,
  due_at: new Date(Date.now() + dueInMs).toISOString(),
});

/** The condition of recordAttempt (claim and record both ask for the old item on failure). */
const RECORD_CONDITION = 'claim_token = :token AND claim_n = :n';

const conditionFailed = (item?: Record<string, unknown>) =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    // ReturnValuesOnConditionCheckFailure answers in wire format, even through the document client.
    ...(item ? { Item: marshall(item) } : {}),
  });

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  kms.reset();
  received = [];
  answer = 200;
  stored = undefined;
  claimFailure = undefined;
  recordFails = false;
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => ({
    Item: stored && input.Key?.sk === stored.sk ? structuredClone(stored) : undefined,
  }));
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    if (input.ConditionExpression === RECORD_CONDITION) {
      if (recordFails) throw conditionFailed();
      return {};
    }
    if (input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD') {
      if (claimFailure) throw claimFailure;
      return {};
    }
    if (String(input.Key?.sk).startsWith('WHE#')) return { Attributes: structuredClone(stored) };
    return {};
  });
  ddb.on(PutCommand).resolves({});
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  kms.on(DecryptCommand).callsFake((input: DecryptCommandInput) => {
    const plain = sealedSecrets.get(Buffer.from(input.CiphertextBlob ?? []).toString('base64'));
    if (!plain) throw new Error('InvalidCiphertextException');
    return { Plaintext: Buffer.from(plain, 'utf8'), KeyId: KEY_ID };
  });
});

afterEach(() => {
  vi.restoreAllMocks();
});

// ---- what the worker did ------------------------------------------------------------------------------

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
const claimCall = () => {
  const claims = updates().filter(
    (u) => u.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && u.ConditionExpression !== RECORD_CONDITION,
  );
  expect(claims).toHaveLength(1);
  return claims[0] as UpdateCommandInput;
};
const recordCalls = () => updates().filter((u) => u.ConditionExpression === RECORD_CONDITION);
const recordCall = () => {
  const records = recordCalls();
  expect(records).toHaveLength(1);
  return records[0] as UpdateCommandInput;
};
const recordedAttempt = (): DeliveryAttempt => {
  const values = recordCall().ExpressionAttributeValues ?? {};
  return (values[':a'] as DeliveryAttempt[])[0] as DeliveryAttempt;
};
const endpointUpdates = () => updates().filter((u) => u.Key?.sk === ENDPOINT_KEY.sk);
const skipCalls = () => updates().filter((u) => u.ConditionExpression === 'claim_token = :token');
const sent = () =>
  sqs.commandCalls(SendMessageBatchCommand).flatMap((c) =>
    (c.args[0].input.Entries ?? []).map((e) => ({
      queue: c.args[0].input.QueueUrl,
      job: JSON.parse(e.MessageBody ?? 'null') as WebhookJob,
      delaySeconds: e.DelaySeconds,
    })),
  );

describe('deliverJob: the attempt is due', () => {
  it('claims, POSTs a signed body the receiver verifies, records delivered and touches no endpoint', async () => {
    // Arrange
    const { secret } = endpoint();
    const j = job(1);
    // The same spy proves "no connection" in the forbidden-address cases below.
    const httpRequest = vi.spyOn(http, 'request');

    // Act
    const outcome = await deliverJob(j);

    // Assert
    expect(outcome).toBe('delivered');
    expect(httpRequest).toHaveBeenCalledTimes(1);
    expect(received).toHaveLength(1);
    const req = received[0] as Received;
    expect(req.path).toBe('/hooks');
    expect(req.body).toBe(webhookBody(EVENT));
    expect(req.headers['webhook-id']).toBe(EVENT_ID);
    expect(req.headers['content-type']).toBe('application/json');
    expect(new Webhook(secret).verify(req.body, req.headers)).toEqual({
      type: 'post.published',
      timestamp: EVENT.timestamp,
      data: EVENT.data,
    });

    const claim = claimCall();
    expect(claim.Key).toEqual(DELIVERY_KEY);
    expect(claim.ConditionExpression).toContain('attribute_not_exists(pk)');
    expect(claim.ExpressionAttributeValues).toMatchObject({
      ':n': 1,
      ':type': 'post.published',
      ':org': ORG_ID,
      ':whe': ENDPOINT_ID,
      ':evt': EVENT_ID,
    });
    const v = claim.ExpressionAttributeValues as Record<string, number>;
    expect((v[':until'] as number) - (v[':now'] as number)).toBe(90_000);

    const record = recordCall();
    expect(record.Key).toEqual(DELIVERY_KEY);
    expect(record.ExpressionAttributeValues).toMatchObject({
      ':n': 1,
      ':s': 'delivered',
      ':token': claim.ExpressionAttributeValues?.[':token'],
      ':g1': `ORG#${ORG_ID}#WHE#${ENDPOINT_ID}#LOG`,
    });
    expect(record.ExpressionAttributeValues).not.toHaveProperty(':next');
    expect(record.UpdateExpression).toContain('REMOVE claim_n, claim_token, claim_until, next_attempt_at');
    expect(recordedAttempt()).toMatchObject({ attempt: 1, status_code: 200, error: null });

    expect(endpointUpdates()).toEqual([]);
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
    const decrypt = kms.commandCalls(DecryptCommand)[0]?.args[0].input;
    expect(decrypt?.KeyId).toBe(KEY_ID);
    expect(decrypt?.EncryptionContext).toEqual({ org_id: ORG_ID, endpoint_id: ENDPOINT_ID });
  });

  it('ends a failure streak on success: failure state cleared, back to active', async () => {
    // Arrange
    endpoint({
      state: 'warning',
      failure: { consecutive_failures: 4, failing_since: '2030-01-01T00:00:00.000Z' },
    });

    // Act
    const outcome = await deliverJob(job(5));

    // Assert
    expect(outcome).toBe('delivered');
    const [success, ...rest] = endpointUpdates();
    expect(rest).toEqual([]);
    expect(success?.UpdateExpression).toBe('SET failure = :fresh, #state = :active');
    expect(success?.ConditionExpression).toBe('attribute_exists(pk) AND #state IN (:active, :warning)');
    expect(success?.ExpressionAttributeValues).toMatchObject({
      ':fresh': { consecutive_failures: 0 },
      ':active': 'active',
    });
  });

  it('signs with the previous secret too while the rotation overlap lasts, and only then', async () => {
    // Arrange
    const previous = newSigningSecret();
    const { secret } = endpoint();
    const current = (stored as WebhookEndpointRecord & Item).secret.current;
    stored = {
      ...stored,
      secret: {
        current,
        previous: seal(previous),
        previous_until: new Date(Date.now() + 60_000).toISOString(),
      },
    };

    // Act
    await deliverJob(job(1));
    stored = {
      ...stored,
      secret: { current, previous: seal(previous), previous_until: new Date(Date.now() - 1).toISOString() },
    };
    await deliverJob(job(1));

    // Assert
    const [overlap, after] = received as [Received, Received];
    expect(overlap.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(overlap.body, overlap.headers)).toBeTruthy();
    expect(new Webhook(previous).verify(overlap.body, overlap.headers)).toBeTruthy();
    expect(after.headers['webhook-signature']?.split(' ')).toHaveLength(1);
    expect(new Webhook(secret).verify(after.body, after.headers)).toBeTruthy();
    expect(() => new Webhook(previous).verify(after.body, after.headers)).toThrow();
  });

  it('on a 500 records the failure on the endpoint and sends attempt 2, due in 5 s less jitter', async () => {
    // Arrange
    endpoint();
    answer = 500;
    const j = job(1);
    const before = Date.now();

    // Act
    const outcome = await deliverJob(j);
    const after = Date.now();

    // Assert
    expect(outcome).toBe('pending');
    expect(received).toHaveLength(1);
    const attempt = recordedAttempt();
    expect(attempt).toMatchObject({ attempt: 1, status_code: 500, error: 'HTTP 500' });
    const record = recordCall();
    expect(record.ExpressionAttributeValues?.[':s']).toBe('pending');
    const next = record.ExpressionAttributeValues?.[':next'] as string;
    expect(Date.parse(next)).toBeGreaterThanOrEqual(before + 4_500);
    expect(Date.parse(next)).toBeLessThanOrEqual(after + 5_000);
    expect(record.UpdateExpression).toContain('next_attempt_at = :next');

    const [failure, ...rest] = endpointUpdates();
    expect(rest).toEqual([]);
    expect(failure?.ConditionExpression).toBe('attribute_exists(pk) AND #state IN (:active, :warning)');
    expect(failure?.UpdateExpression).toContain(
      'failure.failing_since = if_not_exists(failure.failing_since, :at)',
    );
    expect(failure?.UpdateExpression).toContain(
      'failure.consecutive_failures = failure.consecutive_failures + :one',
    );
    expect(failure?.ExpressionAttributeValues).toMatchObject({
      ':at': attempt.attempted_at,
      ':code': 500,
      ':err': 'HTTP 500',
    });

    const jobs = sent();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.queue).toBe(QUEUE_URL);
    expect(jobs[0]?.job).toEqual({ ...j, attempt: 2, due_at: next });
    expect(jobs[0]?.delaySeconds).toBeGreaterThanOrEqual(3);
    expect(jobs[0]?.delaySeconds).toBeLessThanOrEqual(5);
  });

  it('gives up after the 8th attempt fails: status failed, no further job', async () => {
    // Arrange
    endpoint({ failure: { consecutive_failures: 7, failing_since: '2030-01-01T00:00:00.000Z' } });
    answer = 503;

    // Act
    const outcome = await deliverJob(job(8));

    // Assert
    expect(outcome).toBe('failed');
    const claim = claimCall();
    expect(claim.ConditionExpression).toContain('done = :prev AND #status = :pending');
    expect(claim.ExpressionAttributeValues).toMatchObject({ ':n': 8, ':prev': 7 });
    const record = recordCall();
    expect(record.ExpressionAttributeValues).toMatchObject({ ':n': 8, ':s': 'failed' });
    expect(record.ExpressionAttributeValues).not.toHaveProperty(':next');
    expect(record.UpdateExpression).toContain('REMOVE claim_n, claim_token, claim_until, next_attempt_at');
    expect(recordedAttempt()).toMatchObject({ attempt: 8, status_code: 503, error: 'HTTP 503' });
    expect(endpointUpdates()).toHaveLength(1);
    expect(endpointUpdates()[0]?.ExpressionAttributeValues).toMatchObject({ ':code': 503 });
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('on 410 Gone auto-disables the endpoint at once and never retries', async () => {
    // Arrange
    endpoint();
    answer = 410;

    // Act
    const outcome = await deliverJob(job(2));

    // Assert
    expect(outcome).toBe('failed');
    expect(recordedAttempt()).toMatchObject({ attempt: 2, status_code: 410, error: 'HTTP 410' });
    expect(recordCall().ExpressionAttributeValues).not.toHaveProperty(':next');
    const [gone, ...rest] = endpointUpdates();
    expect(rest).toEqual([]);
    expect(gone?.Key).toEqual(ENDPOINT_KEY);
    expect(gone?.UpdateExpression).toContain('SET #state = :disabled, enabled = :false');
    expect(gone?.UpdateExpression).toContain('failure.disabled_at = :at');
    expect(gone?.ConditionExpression).toBe('attribute_exists(pk) AND #state IN (:active, :warning)');
    expect(gone?.ExpressionAttributeValues).toMatchObject({
      ':disabled': 'auto_disabled',
      ':false': false,
      ':gone': 410,
      ':at': recordedAttempt()?.attempted_at,
    });
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('answers a lost claim (outcome recorded by another worker meanwhile) without follow-ups', async () => {
    // Arrange
    endpoint();
    answer = 500;
    recordFails = true;

    // Act
    const outcome = await deliverJob(job(1));

    // Assert
    expect(outcome).toBe('lost-claim');
    expect(endpointUpdates()).toEqual([]);
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });
});

describe('deliverJob: its outcome line (WebhookDelivery by outcome)', () => {
  const outcomes = () => lines.metrics('WebhookDelivery');

  it.each([
    ['delivered', 200, 1, 'INFO'],
    ['retried', 500, 1, 'INFO'],
    ['failed', 503, 8, 'WARN'],
    ['failed', 410, 2, 'WARN'],
  ] as const)('%s (HTTP %i, attempt %i): one %s line counting it', async (outcome, code, n, level) => {
    endpoint();
    answer = code;

    await deliverJob(job(n));

    const [line, ...more] = outcomes();
    expect(more).toEqual([]);
    expect(emfProblems(line as Record<string, unknown>)).toEqual([]);
    expect(line).toMatchObject({
      level,
      message: `webhook ${outcome}`,
      outcome,
      org_id: ORG_ID,
      endpoint_id: ENDPOINT_ID,
      event_id: EVENT_ID,
      event_type: EVENT.type,
      attempt: n,
      status_code: code,
      WebhookDelivery: 1,
    });
    expect(emfOf(line as Record<string, unknown>).dimensions).toEqual([['outcome'], []]);
  });

  it('an attempt whose record lost its claim, a duplicate or a skipped endpoint counts nothing', async () => {
    endpoint();
    answer = 500;
    recordFails = true;
    expect(await deliverJob(job(1))).toBe('lost-claim');

    stored = undefined;
    recordFails = false;
    expect(await deliverJob(job(1))).toBe('skipped');

    expect(outcomes()).toEqual([]);
  });
});

describe('deliverJob: not due, duplicates and stopped endpoints', () => {
  it('re-sends a job due in 2 h with the longest SQS delay, without a POST or any table access', async () => {
    // Arrange
    endpoint();
    const j = job(5, 2 * 3600_000);

    // Act
    const outcome = await deliverJob(j);

    // Assert
    expect(outcome).toBe('deferred');
    expect(sent()).toEqual([{ queue: QUEUE_URL, job: j, delaySeconds: 900 }]);
    expect(received).toEqual([]);
    expect(ddb.calls()).toHaveLength(0);
    expect(kms.calls()).toHaveLength(0);
  });

  it('waits for a job due within the second and POSTs no earlier than due', async () => {
    // Arrange
    endpoint();
    const j = job(1, 300);

    // Act
    const outcome = await deliverJob(j);

    // Assert
    expect(outcome).toBe('delivered');
    expect(received).toHaveLength(1);
    expect(received[0]?.at).toBeGreaterThanOrEqual(Date.parse(j.due_at));
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('catches up a recorded attempt whose successor was never sent: re-sends attempt n+1, no POST', async () => {
    // Arrange
    endpoint();
    const nextAt = new Date(Date.now() + 10 * 60_000).toISOString();
    claimFailure = conditionFailed({
      ...DELIVERY_KEY,
      entity: 'webhook_delivery',
      status: 'pending',
      done: 3,
      attempts: [],
      next_attempt_at: nextAt,
    });
    const j = job(3);

    // Act
    const outcome = await deliverJob(j);

    // Assert
    expect(outcome).toBe('resent-next');
    const jobs = sent();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.job).toEqual({ ...j, attempt: 4, due_at: nextAt });
    expect(jobs[0]?.delaySeconds).toBeGreaterThanOrEqual(598);
    expect(jobs[0]?.delaySeconds).toBeLessThanOrEqual(600);
    expect(received).toEqual([]);
    expect(recordCalls()).toEqual([]);
    expect(endpointUpdates()).toEqual([]);
  });

  it.each([
    ['a live claim of another worker', { status: 'pending', done: 2, claim_n: 3, claim_token: 'other' }],
    ['an attempt already delivered', { status: 'delivered', done: 3 }],
    [
      'a later attempt already recorded',
      { status: 'pending', done: 4, next_attempt_at: '2030-01-01T00:00:00Z' },
    ],
  ])('stops at %s: nothing sent, no POST', async (_, current) => {
    // Arrange
    endpoint();
    claimFailure = conditionFailed({
      ...DELIVERY_KEY,
      attempts: [],
      claim_until: Date.now() + 60_000,
      ...current,
    });

    // Act
    const outcome = await deliverJob(job(3));

    // Assert
    expect(outcome).toBe('duplicate');
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
    expect(received).toEqual([]);
    expect(recordCalls()).toEqual([]);
  });

  it.each<[string, Partial<WebhookEndpointRecord>, string]>([
    ['disabled', { state: 'disabled', enabled: false }, 'endpoint disabled'],
    ['auto_disabled', { state: 'auto_disabled', enabled: false }, 'endpoint auto_disabled'],
    ['unsubscribed', { event_types: ['post.failed'] }, 'no longer subscribed'],
  ])('skips a %s endpoint: marked skipped, no POST, no retry', async (_, patch, reason) => {
    // Arrange
    endpoint(patch);

    // Act
    const outcome = await deliverJob(job(2));

    // Assert
    expect(outcome).toBe('skipped');
    const claim = claimCall();
    const [skip, ...rest] = skipCalls();
    expect(rest).toEqual([]);
    expect(skip?.Key).toEqual(DELIVERY_KEY);
    expect(skip?.UpdateExpression).toContain('SET #status = :skipped');
    expect(skip?.ExpressionAttributeValues).toMatchObject({
      ':skipped': 'skipped',
      ':r': reason,
      ':token': claim.ExpressionAttributeValues?.[':token'],
      // In the delivery log, at the time it was skipped.
      ':g1': keys.webhookDeliveriesOf(ORG_ID, ENDPOINT_ID).gsi1pk,
      ':g2': expect.stringMatching(/^\d{4}-.+Z#msg_/),
    });
    expect(received).toEqual([]);
    expect(recordCalls()).toEqual([]);
    expect(kms.calls()).toHaveLength(0);
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });

  it('skips a deleted endpoint', async () => {
    // Arrange: no endpoint stored

    // Act
    const outcome = await deliverJob(job(1));

    // Assert
    expect(outcome).toBe('skipped');
    expect(skipCalls()[0]?.ExpressionAttributeValues).toMatchObject({ ':r': 'endpoint deleted' });
    expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(0);
  });
});

describe('deliverJob: forbidden destinations', () => {
  it.each([
    ['RFC 1918', 'http://10.0.0.1/hooks', 'forbidden_address: 10.0.0.1'],
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data/', 'forbidden_address: 169.254.169.254'],
    ['IPv4-mapped metadata', 'http://[::ffff:169.254.169.254]/', 'forbidden_address: [::ffff:a9fe:a9fe]'],
    ['private over https', 'https://192.168.1.1/hooks', 'forbidden_address: 192.168.1.1'],
  ])(
    'never connects to %s (not allow-listed) and records a forbidden_address failure',
    async (_, url, error) => {
      // Arrange
      endpoint({ url });
      const httpRequest = vi.spyOn(http, 'request');
      const httpsRequest = vi.spyOn(https, 'request');

      // Act
      const outcome = await deliverJob(job(1));

      // Assert
      expect(httpRequest).not.toHaveBeenCalled();
      expect(httpsRequest).not.toHaveBeenCalled();
      expect(outcome).toBe('pending');
      const attempt = recordedAttempt();
      expect(attempt?.status_code).toBeNull();
      expect(attempt?.error).toBe(error);
      expect(attempt?.error?.startsWith('forbidden_address')).toBe(true);
      const [failure] = endpointUpdates();
      expect(failure?.UpdateExpression).toContain('REMOVE failure.last_status_code');
      expect(failure?.ExpressionAttributeValues).not.toHaveProperty(':code');
      expect(failure?.ExpressionAttributeValues).toMatchObject({ ':err': error });
      expect(sent()[0]?.job.attempt).toBe(2);
    },
  );
});

describe('testWebhookEndpoint', () => {
  const admitted = () => vi.fn(async () => undefined);

  it('sends one signed webhook.test whatever the subscription or state, logs it and never queues a job', async () => {
    // Arrange
    const { secret } = endpoint({ state: 'auto_disabled', enabled: false, event_types: ['post.failed'] });
    answer = 204;
    const ok = admitted();

    // Act
    const out = await testWebhookEndpoint(ORG_ID, ENDPOINT_ID, ok);

    // Assert
    expect(Object.keys(out).sort()).toEqual(['delivered', 'duration_ms', 'error', 'event_id', 'status_code']);
    expect(out).toMatchObject({ delivered: true, status_code: 204, error: null });
    expect(out.event_id).toMatch(/^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(out.duration_ms).toBeGreaterThanOrEqual(0);
    expect(out.duration_ms).toBeLessThan(5_000);
    expect(ok).toHaveBeenCalledTimes(1);

    expect(received).toHaveLength(1);
    const req = received[0] as Received;
    expect(req.headers['webhook-id']).toBe(out.event_id);
    expect(new Webhook(secret).verify(req.body, req.headers)).toMatchObject({
      type: 'webhook.test',
      data: { endpoint_id: ENDPOINT_ID },
    });

    const puts = ddb.commandCalls(PutCommand).map((c) => c.args[0].input as PutCommandInput);
    expect(puts).toHaveLength(1);
    expect(puts[0]?.Item).toMatchObject({
      ...keys.webhookDelivery(ORG_ID, ENDPOINT_ID, out.event_id),
      gsi1pk: `ORG#${ORG_ID}#WHE#${ENDPOINT_ID}#LOG`,
      entity: 'webhook_delivery',
      event_type: 'webhook.test',
      status: 'delivered',
      done: 1,
      attempts: [{ attempt: 1, status_code: 204, error: null }],
    });
    expect(sqs.calls()).toHaveLength(0);
    expect(updates()).toEqual([]);
  });

  it('reports a failing receiver without retrying it or touching the endpoint', async () => {
    // Arrange
    endpoint();
    answer = 503;

    // Act
    const out = await testWebhookEndpoint(ORG_ID, ENDPOINT_ID, admitted());

    // Assert
    expect(out).toMatchObject({ delivered: false, status_code: 503, error: 'HTTP 503' });
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input.Item).toMatchObject({
      status: 'failed',
      attempts: [{ attempt: 1, status_code: 503, error: 'HTTP 503' }],
    });
    expect(sqs.calls()).toHaveLength(0);
    expect(updates()).toEqual([]);
  });

  it('reports a forbidden destination without connecting', async () => {
    // Arrange
    endpoint({ url: 'http://10.1.2.3/hooks' });
    const httpRequest = vi.spyOn(http, 'request');

    // Act
    const out = await testWebhookEndpoint(ORG_ID, ENDPOINT_ID, admitted());

    // Assert
    expect(httpRequest).not.toHaveBeenCalled();
    expect(out).toMatchObject({ delivered: false, status_code: null, error: 'forbidden_address: 10.1.2.3' });
    expect(sqs.calls()).toHaveLength(0);
  });

  it('answers 404 for an unknown endpoint', async () => {
    // Act
    const err = await rejectedApiError(testWebhookEndpoint(ORG_ID, ENDPOINT_ID, admitted()));

    // Assert
    expect(err.status).toBe(404);
    expect(err.code).toBe('resource_not_found');
    expect(received).toEqual([]);
  });

  it.each(['nope', fixedId('post', 1), `${ENDPOINT_ID}x`])(
    'answers 404 for the malformed id %s without any AWS call',
    async (id) => {
      // Arrange
      const ok = admitted();

      // Act
      const err = await rejectedApiError(testWebhookEndpoint(ORG_ID, id, ok));

      // Assert
      expect(err.status).toBe(404);
      expect(ddb.calls()).toHaveLength(0);
      expect(kms.calls()).toHaveLength(0);
      expect(sqs.calls()).toHaveLength(0);
      expect(ok).not.toHaveBeenCalled();
    },
  );
});
