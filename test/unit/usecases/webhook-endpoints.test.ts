import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import {
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  QueryCommand,
  type QueryCommandInput,
  TransactWriteCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { encodeCursor } from '#core/cursor';
import { isId } from '#core/ids';
import type { WebhookEndpointRecord } from '#core/webhooks';
import { createWebhookEndpoint } from '#usecases/create-webhook-endpoint';
import { deleteWebhookEndpoint } from '#usecases/delete-webhook-endpoint';
import { listWebhookDeliveries } from '#usecases/list-webhook-deliveries';
import { listWebhookEndpoints } from '#usecases/list-webhook-endpoints';
import { rotateWebhookSecret } from '#usecases/rotate-webhook-secret';
import { updateWebhookEndpoint } from '#usecases/update-webhook-endpoint';
import { rejectedApiError } from '../support/errors.ts';
import { fixedId, type Item, ORG_ID, webhookEndpoint } from '../support/fixtures.ts';

// Webhook endpoint management: create (secret sealed by KMS, count-guarded), update (address checks,
// state changes conditional on the state read), rotate-secret and the delivery log. The address
// policy is computed once per process, here without any allow list, so loopback is forbidden too.

vi.hoisted(() => {
  vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '');
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', undefined);
});
afterAll(() => {
  vi.unstubAllEnvs();
});

const ddb = mockClient(DynamoDBDocumentClient);
const kms = mockClient(KMSClient);

const NOW = '2030-06-10T09:30:00.000Z';
const CURSOR_SECRET = 'unit-cursor-secret';
const ENDPOINT_ID = fixedId('webhook', 1);
const ENDPOINT_KEY = keys.webhookEndpoint(ORG_ID, ENDPOINT_ID);
const KEY_ID = process.env.WEBHOOK_SECRETS_KEY_ID;
const CIPHERTEXT = Buffer.from('new-ciphertext-bytes');
const SEALED = CIPHERTEXT.toString('base64');

const conditionFailed = () =>
  new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });

const record = (patch: Partial<WebhookEndpointRecord> = {}) =>
  webhookEndpoint({
    id: ENDPOINT_ID,
    url: 'https://93.184.216.34/hooks',
    secret: { current: 'T0xELUNJUEhFUlRFWFQ=' },
    version: 3,
    ...patch,
  });

/** The endpoint as each GetItem answers it, one per call (the last one repeats); none when empty. */
let reads: Array<WebhookEndpointRecord | undefined> = [];

beforeEach(() => {
  ddb.reset();
  kms.reset();
  reads = [];
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    const rec = reads.length > 1 ? reads.shift() : reads[0];
    return { Item: rec && input.Key?.sk === ENDPOINT_KEY.sk ? { ...ENDPOINT_KEY, ...rec } : undefined };
  });
  ddb.on(TransactWriteCommand).resolves({});
  kms.on(EncryptCommand).resolves({ CiphertextBlob: CIPHERTEXT, KeyId: KEY_ID });
});

const admittedFn = () => vi.fn(async () => undefined);

// ---- reading the UpdateItem the use case built ----------------------------------------------------

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);

/** `SET a = :s0, b.c = :s1 ADD version :one` → { a: …, 'b.c': … }. */
function setOf(input: UpdateCommandInput | undefined): Record<string, unknown> {
  const names = input?.ExpressionAttributeNames ?? {};
  const values = input?.ExpressionAttributeValues ?? {};
  const m = /^SET (.+) ADD version :one$/.exec(input?.UpdateExpression ?? '');
  if (!m?.[1]) throw new Error(`unexpected UpdateExpression ${input?.UpdateExpression}`);
  return Object.fromEntries(
    m[1].split(', ').map((part) => {
      const [path = '', value = ''] = part.split(' = ');
      return [
        path
          .split('.')
          .map((n) => names[n])
          .join('.'),
        values[value],
      ];
    }),
  );
}

/** `attribute_exists(pk) AND a = :e0 AND …` → { a: … }, asserting the existence guard. */
function expectOf(input: UpdateCommandInput | undefined): Record<string, unknown> {
  const names = input?.ExpressionAttributeNames ?? {};
  const values = input?.ExpressionAttributeValues ?? {};
  const [guard, ...rest] = (input?.ConditionExpression ?? '').split(' AND ');
  expect(guard).toBe('attribute_exists(pk)');
  return Object.fromEntries(
    rest.map((part) => {
      const [path = '', value = ''] = part.split(' = ');
      return [
        path
          .split('.')
          .map((n) => names[n])
          .join('.'),
        values[value],
      ];
    }),
  );
}

/** Answers each UpdateItem with the read record plus what it set (nested paths not needed here). */
function applyUpdates() {
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => ({
    Attributes: { ...ENDPOINT_KEY, ...reads[0], ...setOf(input) },
  }));
}

// ---- forbidden and malformed URLs ---------------------------------------------------------------------

const FORBIDDEN = [
  ['RFC 1918', 'http://10.0.0.1/'],
  ['RFC 1918 over https', 'https://10.20.30.40/hooks'],
  ['loopback (not allow-listed here)', 'http://127.0.0.1:8080/hooks'],
  ['decimal IPv4 loopback', 'http://2130706433/'],
  ['hex short-form IPv4 loopback', 'http://0x7f.1/'],
  ['octal IPv4 loopback', 'http://0177.0.0.1/'],
  ['IPv4-mapped RFC 1918', 'http://[::ffff:10.0.0.1]/'],
  ['IPv6 loopback', 'http://[::1]:9000/'],
  ['cloud metadata', 'http://169.254.169.254/latest/meta-data/'],
  ['a name resolving to loopback', 'http://localhost:3000/hooks'],
] as const;

const validationOf = async (promise: Promise<unknown>) => {
  const err = await rejectedApiError(promise);
  expect(err.status).toBe(400);
  expect(err.code).toBe('validation_failed');
  return err.errors;
};

describe('createWebhookEndpoint', () => {
  it('seals the secret under the endpoint context, answers it once and stores only the ciphertext', async () => {
    // Arrange
    const admitted = admittedFn();

    // Act
    const out = await createWebhookEndpoint(
      ORG_ID,
      {
        url: 'https://93.184.216.34/hooks?x=1',
        event_types: ['post.published', 'post.failed', 'post.published'],
        description: 'prod',
      },
      NOW,
      admitted,
    );

    // Assert
    expect(isId('webhook', out.id)).toBe(true);
    expect(out.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(out).toMatchObject({
      url: 'https://93.184.216.34/hooks?x=1',
      description: 'prod',
      event_types: ['post.published', 'post.failed'],
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0, failing_since: null },
      created_at: NOW,
      updated_at: NOW,
    });
    expect(admitted).toHaveBeenCalledTimes(1);

    const encrypt = kms.commandCalls(EncryptCommand);
    expect(encrypt).toHaveLength(1);
    const enc = encrypt[0]?.args[0].input;
    expect(enc?.KeyId).toBe(KEY_ID);
    expect(enc?.EncryptionContext).toEqual({ org_id: ORG_ID, endpoint_id: out.id });
    expect(Buffer.from(enc?.Plaintext ?? []).toString('utf8')).toBe(out.secret);

    const tx = ddb.commandCalls(TransactWriteCommand);
    expect(tx).toHaveLength(1);
    const [count, put] = tx[0]?.args[0].input.TransactItems ?? [];
    expect(count?.Update).toMatchObject({
      Key: { pk: `ORG#${ORG_ID}`, sk: 'WEBHOOKS' },
      UpdateExpression: 'ADD endpoints :one',
      ConditionExpression: 'attribute_not_exists(endpoints) OR endpoints < :max',
      ExpressionAttributeValues: { ':one': 1, ':max': 20 },
    });
    expect(put?.Put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    const item = put?.Put?.Item as Item;
    expect(item).toMatchObject({
      ...keys.webhookEndpoint(ORG_ID, out.id),
      entity: 'webhook_endpoint',
      id: out.id,
      org_id: ORG_ID,
      state: 'active',
      enabled: true,
      failure: { consecutive_failures: 0 },
      version: 1,
    });
    expect(item.secret).toEqual({ current: SEALED });
    expect(JSON.stringify(item)).not.toContain(out.secret);
    expect(JSON.stringify(item)).not.toContain(out.secret.slice('whsec_'.length));
  });

  it('creates a disabled endpoint when asked to', async () => {
    // Act
    const out = await createWebhookEndpoint(
      ORG_ID,
      { url: 'https://93.184.216.34/', event_types: ['post.failed'], enabled: false },
      NOW,
      admittedFn(),
    );

    // Assert
    expect(out).toMatchObject({ enabled: false, state: 'disabled' });
    const put = ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems?.[1]?.Put;
    expect(put?.Item).toMatchObject({ enabled: false, state: 'disabled' });
  });

  it('accepts plain http to a public address locally (https is required only in AWS)', async () => {
    // Act
    const out = await createWebhookEndpoint(
      ORG_ID,
      { url: 'http://93.184.216.34/', event_types: ['post.published'] },
      NOW,
      admittedFn(),
    );

    // Assert
    expect(out.url).toBe('http://93.184.216.34/');
    expect(
      ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems?.[1]?.Put?.Item,
    ).toMatchObject({
      url: 'http://93.184.216.34/',
    });
  });

  it('answers 409 when the count guard refuses the 21st endpoint', async () => {
    // Arrange
    ddb.on(TransactWriteCommand).rejects(
      new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }],
      }),
    );

    // Act
    const err = await rejectedApiError(
      createWebhookEndpoint(
        ORG_ID,
        { url: 'https://93.184.216.34/', event_types: ['post.published'] },
        NOW,
        admittedFn(),
      ),
    );

    // Assert
    expect(err.status).toBe(409);
    expect(err.code).toBe('resource_conflict');
    expect(err.message).toContain('20');
  });

  it.each(FORBIDDEN)('refuses %s (%s) with forbidden_address and writes nothing', async (_, url) => {
    // Arrange
    const admitted = admittedFn();

    // Act
    const errors = await validationOf(
      createWebhookEndpoint(ORG_ID, { url, event_types: ['post.published'] }, NOW, admitted),
    );

    // Assert
    expect(errors).toEqual([{ pointer: '/url', code: 'forbidden_address', message: expect.any(String) }]);
    expect(ddb.calls()).toHaveLength(0);
    expect(kms.calls()).toHaveLength(0);
    expect(admitted).not.toHaveBeenCalled();
  });

  it.each([
    ['not a url', 'invalid_url'],
    ['ftp://93.184.216.34/', 'scheme_not_allowed'],
    ['https://user:pw@93.184.216.34/', 'userinfo_not_allowed'],
  ])('refuses %s with %s', async (url, code) => {
    // Act
    const errors = await validationOf(
      createWebhookEndpoint(ORG_ID, { url, event_types: ['post.published'] }, NOW, admittedFn()),
    );

    // Assert
    expect(errors).toEqual([{ pointer: '/url', code, message: expect.any(String) }]);
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('updateWebhookEndpoint', () => {
  it.each(FORBIDDEN)('refuses %s (%s) with forbidden_address and never touches the table', async (_, url) => {
    // Arrange
    reads = [record()];

    // Act
    const errors = await validationOf(updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { url }, NOW, admittedFn()));

    // Assert
    expect(errors).toEqual([{ pointer: '/url', code: 'forbidden_address', message: expect.any(String) }]);
    expect(ddb.calls()).toHaveLength(0);
  });

  it('re-enabling an auto-disabled endpoint starts over: active, failure cleared, if still auto_disabled', async () => {
    // Arrange
    reads = [
      record({
        enabled: false,
        state: 'auto_disabled',
        failure: {
          consecutive_failures: 12,
          failing_since: '2030-06-01T00:00:00.000Z',
          warned_at: '2030-06-02T00:00:00.000Z',
          disabled_at: '2030-06-04T00:00:00.000Z',
        },
      }),
    ];
    applyUpdates();

    // Act
    const out = await updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { enabled: true }, NOW, admittedFn());

    // Assert
    const [update, ...rest] = updates();
    expect(rest).toEqual([]);
    expect(update?.Key).toEqual(ENDPOINT_KEY);
    expect(update?.ReturnValues).toBe('ALL_NEW');
    expect(setOf(update)).toEqual({
      updated_at: NOW,
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0 },
    });
    expect(expectOf(update)).toEqual({ state: 'auto_disabled' });
    expect(out).toMatchObject({
      enabled: true,
      state: 'active',
      failure: { consecutive_failures: 0, failing_since: null, disabled_at: null },
    });
  });

  it('with ifVersion (a console form), applies only at that version and refuses another without writing', async () => {
    // Arrange
    reads = [record({ version: 3 })];
    applyUpdates();

    // Act
    await updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { description: 'x' }, NOW, admittedFn(), 3);
    const stale = await updateWebhookEndpoint(
      ORG_ID,
      ENDPOINT_ID,
      { description: 'y' },
      NOW,
      admittedFn(),
      2,
    ).then(
      () => null,
      (e: unknown) => e,
    );

    // Assert
    expect(updates()).toHaveLength(1);
    expect(expectOf(updates()[0])).toEqual({ state: 'active', version: 3 });
    expect(stale).toMatchObject({ code: 'resource_conflict' });
  });

  it('disabling sets state disabled, conditional on the state read', async () => {
    // Arrange
    reads = [record({ state: 'warning', failure: { consecutive_failures: 2, failing_since: NOW } })];
    applyUpdates();

    // Act
    const out = await updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { enabled: false }, NOW, admittedFn());

    // Assert
    expect(setOf(updates()[0])).toEqual({ updated_at: NOW, enabled: false, state: 'disabled' });
    expect(expectOf(updates()[0])).toEqual({ state: 'warning' });
    expect(out).toMatchObject({ enabled: false, state: 'disabled' });
  });

  it('enabling a warning endpoint leaves its streak alone', async () => {
    // Arrange
    reads = [record({ state: 'warning', failure: { consecutive_failures: 2, failing_since: NOW } })];
    applyUpdates();

    // Act
    await updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { enabled: true }, NOW, admittedFn());

    // Assert
    expect(setOf(updates()[0])).toEqual({ updated_at: NOW, enabled: true });
  });

  it('stores the normalised URL and the de-duplicated event types', async () => {
    // Arrange
    reads = [record()];
    applyUpdates();

    // Act
    const out = await updateWebhookEndpoint(
      ORG_ID,
      ENDPOINT_ID,
      {
        url: 'HTTPS://93.184.216.34:443/new',
        event_types: ['post.failed', 'post.failed', 'channel.connected'],
        description: null,
      },
      NOW,
      admittedFn(),
    );

    // Assert
    expect(setOf(updates()[0])).toEqual({
      updated_at: NOW,
      url: 'https://93.184.216.34/new',
      event_types: ['post.failed', 'channel.connected'],
      description: null,
    });
    expect(out.url).toBe('https://93.184.216.34/new');
  });

  it('re-reads and applies to the new state when the state changed in between', async () => {
    // Arrange
    reads = [record({ state: 'active' }), record({ state: 'auto_disabled', enabled: false })];
    ddb
      .on(UpdateCommand)
      .rejectsOnce(conditionFailed())
      .callsFake((input: UpdateCommandInput) => ({
        Attributes: { ...ENDPOINT_KEY, ...record(), ...setOf(input) },
      }));

    // Act
    const out = await updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { enabled: true }, NOW, admittedFn());

    // Assert
    const [first, second] = updates();
    expect(expectOf(first)).toEqual({ state: 'active' });
    expect(setOf(first)).toEqual({ updated_at: NOW, enabled: true });
    expect(expectOf(second)).toEqual({ state: 'auto_disabled' });
    expect(setOf(second)).toMatchObject({ state: 'active', failure: { consecutive_failures: 0 } });
    expect(out.state).toBe('active');
    expect(ddb.commandCalls(GetCommand)).toHaveLength(2);
  });

  it('answers 409 after the condition failed three times', async () => {
    // Arrange
    reads = [record()];
    ddb.on(UpdateCommand).rejects(conditionFailed());

    // Act
    const err = await rejectedApiError(
      updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { description: 'x' }, NOW, admittedFn()),
    );

    // Assert
    expect(err.status).toBe(409);
    expect(err.code).toBe('resource_conflict');
    expect(ddb.commandCalls(GetCommand)).toHaveLength(3);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(3);
  });

  it('answers 404 for an endpoint that does not exist', async () => {
    // Act
    const err = await rejectedApiError(
      updateWebhookEndpoint(ORG_ID, ENDPOINT_ID, { enabled: true }, NOW, admittedFn()),
    );

    // Assert
    expect(err.status).toBe(404);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});

describe('rotateWebhookSecret', () => {
  it('seals a new secret and keeps the previous one for 24 h, if nobody rotated meanwhile', async () => {
    // Arrange
    reads = [record({ secret: { current: 'T0xELUNJUEhFUlRFWFQ=' } })];
    applyUpdates();
    const admitted = admittedFn();

    // Act
    const out = await rotateWebhookSecret(ORG_ID, ENDPOINT_ID, NOW, admitted);

    // Assert
    expect(out).toEqual({
      id: ENDPOINT_ID,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      previous_secret_expires_at: '2030-06-11T09:30:00.000Z',
    });
    expect(admitted).toHaveBeenCalledTimes(1);
    const enc = kms.commandCalls(EncryptCommand)[0]?.args[0].input;
    expect(enc?.EncryptionContext).toEqual({ org_id: ORG_ID, endpoint_id: ENDPOINT_ID });
    expect(Buffer.from(enc?.Plaintext ?? []).toString('utf8')).toBe(out.secret);
    const [update, ...rest] = updates();
    expect(rest).toEqual([]);
    expect(setOf(update)).toEqual({
      secret: {
        current: SEALED,
        previous: 'T0xELUNJUEhFUlRFWFQ=',
        previous_until: '2030-06-11T09:30:00.000Z',
      },
      updated_at: NOW,
    });
    expect(expectOf(update)).toEqual({ 'secret.current': 'T0xELUNJUEhFUlRFWFQ=' });
    expect(JSON.stringify(update)).not.toContain(out.secret);
  });

  it('answers 409 when another rotation won, 404 when the endpoint is gone', async () => {
    // Arrange
    reads = [record()];
    ddb.on(UpdateCommand).rejects(conditionFailed());

    // Act
    const raced = await rejectedApiError(rotateWebhookSecret(ORG_ID, ENDPOINT_ID, NOW, admittedFn()));
    reads = [record(), undefined];
    const gone = await rejectedApiError(rotateWebhookSecret(ORG_ID, ENDPOINT_ID, NOW, admittedFn()));

    // Assert
    expect(raced.status).toBe(409);
    expect(gone.status).toBe(404);
  });

  it('answers 404 for an unknown endpoint without writing', async () => {
    // Act
    const err = await rejectedApiError(rotateWebhookSecret(ORG_ID, ENDPOINT_ID, NOW, admittedFn()));

    // Assert
    expect(err.status).toBe(404);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});

describe('listWebhookEndpoints', () => {
  it('pages the endpoints newest first with limit and after, the cursor bound to the list', async () => {
    // Arrange: three endpoints (ids ascending = oldest first).
    const endpoints = [3, 2, 1].map((n) => ({
      ...keys.webhookEndpoint(ORG_ID, fixedId('webhook', n)),
      ...webhookEndpoint({ id: fixedId('webhook', n) }),
    }));
    ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
      const start = endpoints.findIndex((e) => e.sk === input.ExclusiveStartKey?.sk);
      return { Items: endpoints.slice(start + 1, start + 1 + (input.Limit ?? 100)) };
    });

    // Act
    const first = await listWebhookEndpoints(ORG_ID, { limit: 2 }, CURSOR_SECRET);
    const second = await listWebhookEndpoints(ORG_ID, { after: first.next_cursor ?? '' }, CURSOR_SECRET);
    const all = await listWebhookEndpoints(ORG_ID, {}, CURSOR_SECRET);

    // Assert
    expect(first.data.map((e) => e.id)).toEqual([fixedId('webhook', 3), fixedId('webhook', 2)]);
    expect(first.has_more).toBe(true);
    expect(second).toMatchObject({ has_more: false, next_cursor: null });
    expect(second.data.map((e) => e.id)).toEqual([fixedId('webhook', 1)]);
    expect(all.data).toHaveLength(3);
    expect(ddb.commandCalls(QueryCommand).map((c) => c.args[0].input.Limit)).toEqual([3, 26, 26]);
    expect(JSON.stringify(first)).not.toContain('secret');
  });

  it('refuses a cursor of another list or organization with 400 invalid_request', async () => {
    ddb.on(QueryCommand).resolves({ Items: [] });
    for (const scope of [
      { list: 'media', orgId: ORG_ID },
      { list: 'webhook-endpoints', orgId: fixedId('org', 9) },
    ]) {
      const after = encodeCursor(CURSOR_SECRET, scope, ENDPOINT_ID);
      const err = await rejectedApiError(listWebhookEndpoints(ORG_ID, { after }, CURSOR_SECRET));
      expect(err.code).toBe('invalid_request');
    }
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(0);
  });
});

describe('listWebhookDeliveries', () => {
  it('answers the log newest first from gsi1, without claim bookkeeping', async () => {
    // Arrange
    reads = [record()];
    const eventId = fixedId('message', 7);
    ddb.on(QueryCommand).resolves({
      Items: [
        {
          ...keys.webhookDelivery(ORG_ID, ENDPOINT_ID, eventId),
          ...keys.webhookDeliveryByTime(ORG_ID, ENDPOINT_ID, NOW, eventId),
          entity: 'webhook_delivery',
          org_id: ORG_ID,
          endpoint_id: ENDPOINT_ID,
          event_id: eventId,
          event_type: 'post.published',
          status: 'pending',
          attempts: [{ attempt: 1, attempted_at: NOW, status_code: 500, duration_ms: 12, error: 'HTTP 500' }],
          done: 1,
          claim_token: 'secret-ish',
          next_attempt_at: '2030-06-10T09:30:05.000Z',
          updated_at: NOW,
        },
      ],
    });

    // Act
    const out = await listWebhookDeliveries(ORG_ID, ENDPOINT_ID, {}, CURSOR_SECRET);

    // Assert
    expect(out).toEqual({
      has_more: false,
      next_cursor: null,
      data: [
        {
          event_id: eventId,
          event_type: 'post.published',
          status: 'pending',
          attempts: [{ attempt: 1, attempted_at: NOW, status_code: 500, duration_ms: 12, error: 'HTTP 500' }],
          next_attempt_at: '2030-06-10T09:30:05.000Z',
          updated_at: NOW,
        },
      ],
    });
    const q = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(q).toMatchObject({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': `ORG#${ORG_ID}#WHE#${ENDPOINT_ID}#LOG` },
      ScanIndexForward: false,
      Limit: 26,
    });
  });

  it('pages the log: limit + 1 read, a cursor to the last log position, resumed from it', async () => {
    // Arrange: three deliveries, attempted a minute apart, newest first.
    reads = [record(), record()];
    const items = [3, 2, 1].map((n) => {
      const eventId = fixedId('message', n);
      const at = `2030-06-10T09:0${n}:00.000Z`;
      return {
        ...keys.webhookDelivery(ORG_ID, ENDPOINT_ID, eventId),
        ...keys.webhookDeliveryByTime(ORG_ID, ENDPOINT_ID, at, eventId),
        event_id: eventId,
        event_type: 'post.published',
        status: 'delivered',
        attempts: [],
        updated_at: at,
      };
    });
    ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
      const start = items.findIndex((i) => i.gsi1sk === input.ExclusiveStartKey?.gsi1sk);
      return { Items: items.slice(start + 1, start + 1 + (input.Limit ?? 100)) };
    });

    // Act
    const first = await listWebhookDeliveries(ORG_ID, ENDPOINT_ID, { limit: 2 }, CURSOR_SECRET);
    const second = await listWebhookDeliveries(
      ORG_ID,
      ENDPOINT_ID,
      { limit: 2, after: first.next_cursor ?? '' },
      CURSOR_SECRET,
    );

    // Assert
    expect(first.data.map((d) => d.event_id)).toEqual([fixedId('message', 3), fixedId('message', 2)]);
    expect(first.has_more).toBe(true);
    expect(second.data.map((d) => d.event_id)).toEqual([fixedId('message', 1)]);
    expect(second).toMatchObject({ has_more: false, next_cursor: null });
    expect(ddb.commandCalls(QueryCommand)[1]?.args[0].input.ExclusiveStartKey).toEqual({
      ...keys.webhookDelivery(ORG_ID, ENDPOINT_ID, fixedId('message', 2)),
      ...keys.webhookDeliveryByTime(ORG_ID, ENDPOINT_ID, '2030-06-10T09:02:00.000Z', fixedId('message', 2)),
    });
  });

  it("refuses another endpoint's cursor, and the endpoint list's, with 400 invalid_request", async () => {
    // Arrange
    reads = [record(), record(), record()];
    ddb.on(QueryCommand).resolves({ Items: [] });
    const other = encodeCursor(
      CURSOR_SECRET,
      { list: 'webhook-deliveries', orgId: ORG_ID, filter: fixedId('webhook', 99) },
      `2030-06-10T09:00:00.000Z#${fixedId('message', 1)}`,
    );
    const endpoints = encodeCursor(CURSOR_SECRET, { list: 'webhook-endpoints', orgId: ORG_ID }, ENDPOINT_ID);
    const forged = encodeCursor(
      CURSOR_SECRET,
      { list: 'webhook-deliveries', orgId: ORG_ID, filter: ENDPOINT_ID },
      'not-a-position',
    );

    // Act + Assert
    for (const after of [other, endpoints, forged, 'garbage']) {
      const err = await rejectedApiError(
        listWebhookDeliveries(ORG_ID, ENDPOINT_ID, { after }, CURSOR_SECRET),
      );
      expect(err.code).toBe('invalid_request');
    }
  });

  it('answers 404 for an unknown endpoint', async () => {
    // Arrange
    ddb.on(QueryCommand).resolves({ Items: [] });

    // Act
    const err = await rejectedApiError(listWebhookDeliveries(ORG_ID, ENDPOINT_ID, {}, CURSOR_SECRET));

    // Assert
    expect(err.status).toBe(404);
    expect(err.code).toBe('resource_not_found');
  });
});

describe('deleteWebhookEndpoint', () => {
  it('deletes the endpoint and decrements the count in one transaction', async () => {
    // Act
    const out = await deleteWebhookEndpoint(ORG_ID, ENDPOINT_ID, admittedFn());

    // Assert
    expect(out).toEqual({ id: ENDPOINT_ID, deleted: true });
    const items = ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? [];
    expect(items[0]?.Delete).toMatchObject({
      Key: ENDPOINT_KEY,
      ConditionExpression: 'attribute_exists(pk)',
    });
    expect(items[1]?.Update).toMatchObject({
      Key: { pk: `ORG#${ORG_ID}`, sk: 'WEBHOOKS' },
      UpdateExpression: 'ADD endpoints :minus',
      ExpressionAttributeValues: { ':minus': -1 },
    });
  });

  it('answers 404 when there was no such endpoint', async () => {
    // Arrange
    ddb.on(TransactWriteCommand).rejects(
      new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: [{ Code: 'ConditionalCheckFailed' }, { Code: 'None' }],
      }),
    );

    // Act
    const err = await rejectedApiError(deleteWebhookEndpoint(ORG_ID, ENDPOINT_ID, admittedFn()));

    // Assert
    expect(err.status).toBe(404);
  });
});

describe('malformed endpoint ids', () => {
  const BAD_IDS = ['nope', '', fixedId('post', 1), `${ENDPOINT_ID}0`, 'whe_01jd0000000000000000000001'];

  it.each(BAD_IDS)('answer 404 for %j everywhere, without any AWS call or admission', async (id) => {
    // Arrange
    const admitted = admittedFn();

    // Act
    const errors = [
      await rejectedApiError(updateWebhookEndpoint(ORG_ID, id, { enabled: false }, NOW, admitted)),
      await rejectedApiError(deleteWebhookEndpoint(ORG_ID, id, admitted)),
      await rejectedApiError(rotateWebhookSecret(ORG_ID, id, NOW, admitted)),
      await rejectedApiError(listWebhookDeliveries(ORG_ID, id, {}, CURSOR_SECRET)),
    ];

    // Assert
    expect(errors.map((e) => e.status)).toEqual([404, 404, 404, 404]);
    expect(errors.map((e) => e.code)).toEqual(Array(4).fill('resource_not_found'));
    expect(ddb.calls()).toHaveLength(0);
    expect(kms.calls()).toHaveLength(0);
    expect(admitted).not.toHaveBeenCalled();
  });
});
