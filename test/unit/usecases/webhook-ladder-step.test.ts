import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { ExecutionAlreadyExists, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import {
  DynamoDBDocumentClient,
  GetCommand,
  QueryCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { ladderExecutionName, type WebhookEndpointRecord } from '#core/webhooks';
import { startLadderOnChange } from '#usecases/support/webhook-ladder-start';
import { type LadderStepInput, ladderStep } from '#usecases/webhook-ladder-step';
import { fixedId, ORG_ID, webhookEndpoint } from '../support/fixtures.ts';

// The failure ladder's steps (warn at 24 h, auto-disable at 72 h) and its start from the table
// stream, against mocked DynamoDB, SES and Step Functions. Each step acts only on the same streak.

const ddb = mockClient(DynamoDBDocumentClient);
const ses = mockClient(SESv2Client);
const sfn = mockClient(SFNClient);

const ENDPOINT_ID = fixedId('webhook', 1);
const ENDPOINT_KEY = keys.webhookEndpoint(ORG_ID, ENDPOINT_ID);
const SINCE = '2030-06-01T08:00:00.000Z';
const NOW = new Date('2030-06-02T08:00:05.000Z');
const FROM = 'herald@notify.example';

const record = (patch: Partial<WebhookEndpointRecord> = {}) =>
  webhookEndpoint({
    id: ENDPOINT_ID,
    failure: {
      consecutive_failures: 6,
      failing_since: SINCE,
      last_failure_at: '2030-06-02T07:00:00.000Z',
      last_error: 'HTTP 503',
      last_status_code: 503,
    },
    secret: { current: 'c2VhbGVk' },
    version: 2,
    ...patch,
  });

let stored: WebhookEndpointRecord | undefined;
/** The order in which the step sent email and wrote the endpoint. */
let order: string[] = [];

const warnInput = (failingSince = SINCE): LadderStepInput => ({
  step: 'warn',
  org_id: ORG_ID,
  endpoint_id: ENDPOINT_ID,
  failing_since: failingSince,
});
const disableInput = (failingSince = SINCE): LadderStepInput => ({
  ...warnInput(failingSince),
  step: 'disable',
});

beforeEach(() => {
  ddb.reset();
  ses.reset();
  sfn.reset();
  stored = record();
  order = [];
  vi.stubEnv('HERALD_NOTIFY_FROM', FROM);
  vi.stubEnv('HERALD_TIME_SCALE', undefined);
  ddb.on(GetCommand).callsFake(() => ({ Item: stored ? { ...ENDPOINT_KEY, ...stored } : undefined }));
  ddb.on(QueryCommand).resolves({
    Items: [
      { pk: `ORG#${ORG_ID}`, sk: 'USER#1', role: 'owner', email: 'ada@acme.example' },
      { pk: `ORG#${ORG_ID}`, sk: 'USER#2', role: 'owner', email: 'grace@acme.example' },
      { pk: `ORG#${ORG_ID}`, sk: 'USER#3', role: 'owner', email: 'not-an-address' },
    ],
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    order.push('update');
    const values = input.ExpressionAttributeValues ?? {};
    const state = input.UpdateExpression?.includes(':warning') ? 'warning' : values[':disabled'];
    return { Attributes: { ...ENDPOINT_KEY, ...stored, state } };
  });
  ses.on(SendEmailCommand).callsFake(() => {
    order.push('email');
    return { MessageId: 'm-1' };
  });
  sfn.on(StartExecutionCommand).resolves({ executionArn: 'arn:x', startDate: new Date() });
});

afterEach(() => {
  vi.unstubAllEnvs();
});

const updates = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);

describe("ladderStep('warn')", () => {
  it('emails the owners, then marks the endpoint warning if the same streak is still running', async () => {
    // Act
    const out = await ladderStep(warnInput(), NOW);

    // Assert
    expect(out).toEqual({ still_failing: true });
    expect(order).toEqual(['email', 'update']);

    const query = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(query).toMatchObject({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      FilterExpression: '#role = :owner',
      ExpressionAttributeValues: { ':pk': `ORG#${ORG_ID}`, ':sk': 'USER#', ':owner': 'owner' },
    });

    const emails = ses.commandCalls(SendEmailCommand);
    expect(emails).toHaveLength(1);
    const email = emails[0]?.args[0].input;
    expect(email?.FromEmailAddress).toBe(FROM);
    expect(email?.Destination?.ToAddresses).toEqual(['ada@acme.example', 'grace@acme.example']);
    expect(email?.Content?.Simple?.Subject?.Data).toBe(
      `Herald: webhook endpoint ${ENDPOINT_ID} has been failing for 24 hours`,
    );
    const text = email?.Content?.Simple?.Body?.Text?.Data ?? '';
    expect(text).toContain(
      `Deliveries to https://hooks.example/herald have failed continuously since ${SINCE}.`,
    );
    expect(text).toContain('Last error: HTTP 503.');
    expect(text).toContain('disabled at 2030-06-04T08:00:00.000Z');

    const [warn, ...rest] = updates();
    expect(rest).toEqual([]);
    expect(warn?.Key).toEqual(ENDPOINT_KEY);
    expect(warn?.UpdateExpression).toBe('SET #state = :warning, failure.warned_at = :at');
    expect(warn?.ConditionExpression).toBe('failure.failing_since = :fs AND #state = :active');
    expect(warn?.ExpressionAttributeNames).toEqual({ '#state': 'state' });
    expect(warn?.ExpressionAttributeValues).toMatchObject({
      ':fs': SINCE,
      ':at': NOW.toISOString(),
      ':warning': 'warning',
      ':active': 'active',
    });
  });

  it.each<[string, () => void, string]>([
    ['another streak', () => undefined, '2030-05-01T00:00:00.000Z'],
    ['a recovered endpoint', () => (stored = record({ failure: { consecutive_failures: 0 } })), SINCE],
    ['an auto-disabled endpoint', () => (stored = record({ state: 'auto_disabled', enabled: false })), SINCE],
    ['a disabled endpoint', () => (stored = record({ state: 'disabled', enabled: false })), SINCE],
    ['a deleted endpoint', () => (stored = undefined), SINCE],
  ])('does nothing for %s: still_failing false, no email, no write', async (_, arrange, since) => {
    // Arrange
    arrange();

    // Act
    const out = await ladderStep(warnInput(since), NOW);

    // Assert
    expect(out).toEqual({ still_failing: false });
    expect(ses.calls()).toHaveLength(0);
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(0);
    expect(updates()).toEqual([]);
  });

  it('a retried step on an endpoint already warned sends no second email', async () => {
    // Arrange
    stored = record({ state: 'warning' });

    // Act
    const out = await ladderStep(warnInput(), NOW);

    // Assert
    expect(out).toEqual({ still_failing: true });
    expect(ses.calls()).toHaveLength(0);
    expect(updates()).toEqual([]);
  });

  it('reports the streak as over when it ended while the email was being sent', async () => {
    // Arrange
    ddb.on(UpdateCommand).callsFake(() => {
      stored = record({ failure: { consecutive_failures: 0 } });
      throw new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} });
    });

    // Act
    const out = await ladderStep(warnInput(), NOW);

    // Assert
    expect(out).toEqual({ still_failing: false });
    expect(ses.calls()).toHaveLength(1);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(2);
  });

  it('still marks the endpoint warning when no sender is configured', async () => {
    // Arrange
    vi.stubEnv('HERALD_NOTIFY_FROM', undefined);

    // Act
    const out = await ladderStep(warnInput(), NOW);

    // Assert
    expect(out).toEqual({ still_failing: true });
    expect(ses.calls()).toHaveLength(0);
    expect(updates()).toHaveLength(1);
  });
});

describe("ladderStep('disable')", () => {
  it('auto-disables the endpoint for the same streak, without an email', async () => {
    // Arrange
    stored = record({ state: 'warning' });

    // Act
    const out = await ladderStep(disableInput(), NOW);

    // Assert
    expect(out).toEqual({ still_failing: true });
    const [disable, ...rest] = updates();
    expect(rest).toEqual([]);
    expect(disable?.Key).toEqual(ENDPOINT_KEY);
    expect(disable?.UpdateExpression).toBe(
      'SET #state = :disabled, enabled = :false, failure.disabled_at = :at',
    );
    expect(disable?.ConditionExpression).toBe(
      'failure.failing_since = :fs AND #state IN (:active, :warning)',
    );
    expect(disable?.ExpressionAttributeValues).toMatchObject({
      ':fs': SINCE,
      ':at': NOW.toISOString(),
      ':disabled': 'auto_disabled',
      ':false': false,
    });
    expect(ses.calls()).toHaveLength(0);
  });

  it('reports still_failing false when the condition fails (the streak ended at the last moment)', async () => {
    // Arrange
    ddb
      .on(UpdateCommand)
      .rejects(
        new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} }),
      );

    // Act
    const out = await ladderStep(disableInput(), NOW);

    // Assert
    expect(out).toEqual({ still_failing: false });
  });

  it('does nothing for another streak', async () => {
    // Act
    const out = await ladderStep(disableInput('2030-05-01T00:00:00.000Z'), NOW);

    // Assert
    expect(out).toEqual({ still_failing: false });
    expect(updates()).toEqual([]);
  });
});

describe('startLadderOnChange', () => {
  const healthy = record({ failure: { consecutive_failures: 0 } });
  const failing = record({ failure: { consecutive_failures: 1, failing_since: SINCE } });

  it('starts one execution per streak, named after it, with the 24 h and 72 h deadlines', async () => {
    // Act
    const started = await startLadderOnChange(healthy, failing);

    // Assert
    expect(started).toBe(true);
    const calls = sfn.commandCalls(StartExecutionCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0]?.args[0].input;
    expect(input?.stateMachineArn).toBe(process.env.WEBHOOK_LADDER_ARN);
    expect(input?.name).toBe(ladderExecutionName(ENDPOINT_ID, SINCE));
    expect(input?.name).toBe(`${ENDPOINT_ID}-${Date.parse(SINCE)}`);
    expect(JSON.parse(input?.input ?? '{}')).toEqual({
      org_id: ORG_ID,
      endpoint_id: ENDPOINT_ID,
      failing_since: SINCE,
      warn_at: '2030-06-02T08:00:00.000Z',
      disable_at: '2030-06-04T08:00:00.000Z',
    });
  });

  it('scales the deadlines with HERALD_TIME_SCALE (local stack)', async () => {
    // Arrange
    vi.stubEnv('HERALD_TIME_SCALE', String(1 / 3600));

    // Act
    await startLadderOnChange(healthy, failing);

    // Assert
    const input = JSON.parse(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.input ?? '{}');
    expect(input).toMatchObject({
      warn_at: '2030-06-01T08:00:24.000Z',
      disable_at: '2030-06-01T08:01:12.000Z',
    });
  });

  it.each<[string, WebhookEndpointRecord | undefined, WebhookEndpointRecord | undefined]>([
    [
      'the streak is unchanged',
      failing,
      record({ failure: { consecutive_failures: 2, failing_since: SINCE } }),
    ],
    ['the endpoint is healthy', failing, healthy],
    ['the endpoint was deleted', failing, undefined],
    ['the endpoint is auto_disabled (410 Gone)', healthy, record({ ...failing, state: 'auto_disabled' })],
    ['the endpoint is disabled', healthy, record({ ...failing, state: 'disabled' })],
  ])('starts nothing when %s', async (_, before, after) => {
    // Act
    const started = await startLadderOnChange(before, after);

    // Assert
    expect(started).toBe(false);
    expect(sfn.calls()).toHaveLength(0);
  });

  it('starts a new ladder for a new streak after a recovery', async () => {
    // Arrange
    const later = '2030-06-05T00:00:00.000Z';

    // Act
    await startLadderOnChange(
      failing,
      record({ failure: { consecutive_failures: 1, failing_since: later } }),
    );

    // Assert
    expect(sfn.commandCalls(StartExecutionCommand)[0]?.args[0].input.name).toBe(
      ladderExecutionName(ENDPOINT_ID, later),
    );
  });

  it('swallows ExecutionAlreadyExists (the same streak, started before)', async () => {
    // Arrange
    sfn.on(StartExecutionCommand).rejects(new ExecutionAlreadyExists({ message: 'exists', $metadata: {} }));

    // Act
    const started = await startLadderOnChange(healthy, failing);

    // Assert
    expect(started).toBe(true);
    expect(sfn.commandCalls(StartExecutionCommand)).toHaveLength(1);
  });

  it('lets any other Step Functions error through (the stream retries)', async () => {
    // Arrange
    sfn.on(StartExecutionCommand).rejects(new Error('throttled'));

    // Act / Assert
    await expect(startLadderOnChange(healthy, failing)).rejects.toThrow('throttled');
  });
});
