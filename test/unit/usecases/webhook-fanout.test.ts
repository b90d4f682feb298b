import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import type { HeraldEvent } from '#core/messages';
import { fanOutAll } from '#usecases/webhook-fanout';
import { fixedId, ORG_ID, webhookEndpoint } from '../support/fixtures.ts';

// The event stream's fan-out: a queue batch of events reads each organization's endpoints once and
// sends its webhook jobs together.

const ddb = mockClient(DynamoDBDocumentClient);
const sqs = mockClient(SQSClient);
const OTHER = fixedId('org', 2);

const event = (n: number, org = ORG_ID, type: HeraldEvent['type'] = 'post.published'): HeraldEvent =>
  ({
    id: `evt_${n}`,
    type,
    org_id: org,
    timestamp: '2030-01-01T00:00:00.000Z',
    data: {},
  }) as unknown as HeraldEvent;

const orgOf = (input: QueryCommandInput) =>
  String(input.ExpressionAttributeValues?.[':pk']).replace('ORG#', '');

beforeEach(() => {
  ddb.reset();
  sqs.reset();
  sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });
  ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
    const org = orgOf(input);
    if (org === ORG_ID)
      return {
        Items: [
          { pk: `ORG#${org}`, sk: 'WHE#1', ...webhookEndpoint() },
          {
            pk: `ORG#${org}`,
            sk: 'WHE#2',
            ...webhookEndpoint({ id: fixedId('webhook', 2), enabled: false }),
          },
        ],
      };
    return {
      Items: [
        { pk: `ORG#${org}`, sk: 'WHE#3', ...webhookEndpoint({ id: fixedId('webhook', 3), org_id: org }) },
      ],
    };
  });
});

describe('fanOutAll', () => {
  it('reads each organization’s endpoints once and sends the batch’s jobs together', async () => {
    const results = await fanOutAll([event(1), event(2, OTHER), event(3), event(4, ORG_ID, 'post.failed')]);

    expect(results).toEqual([1, 1, 1, 0]);
    expect(
      ddb
        .commandCalls(QueryCommand)
        .map((c) => orgOf(c.args[0].input))
        .sort(),
    ).toEqual([ORG_ID, OTHER].sort());
    const sent = sqs.commandCalls(SendMessageBatchCommand);
    expect(sent).toHaveLength(1);
    const jobs = sent[0]?.args[0].input.Entries?.map((e) => JSON.parse(e.MessageBody ?? '')) ?? [];
    expect(jobs.map((j) => [j.event.id, j.endpoint_id])).toEqual([
      ['evt_1', fixedId('webhook', 1)],
      ['evt_2', fixedId('webhook', 3)],
      ['evt_3', fixedId('webhook', 1)],
    ]);
  });

  it('fails only the events of an organization whose endpoints could not be read', async () => {
    ddb.on(QueryCommand).callsFake((input: QueryCommandInput) => {
      if (orgOf(input) === OTHER) throw new Error('throttled');
      return { Items: [{ pk: `ORG#${ORG_ID}`, sk: 'WHE#1', ...webhookEndpoint() }] };
    });
    const results = await fanOutAll([event(1), event(2, OTHER)]);
    expect(results[0]).toBe(1);
    expect(results[1]).toBeInstanceOf(Error);
  });

  it('fails the events that had jobs when the send failed; one without jobs is done', async () => {
    sqs.on(SendMessageBatchCommand).rejects(new Error('SQS down'));
    const results = await fanOutAll([event(1), event(2, ORG_ID, 'post.failed')]);
    expect(results[0]).toBeInstanceOf(Error);
    expect(results[1]).toBe(0);
  });
});
