import { DynamoDBClient, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DATA_MODEL_KEY, DATA_MODEL_VERSION, judgeDataModel } from '#core/data-model';
import { ApiError } from '#core/errors';
import { installDataModelGate, resetDataModelVerdict } from '#shared/data-model-gate';

// The data model gate on a real SDK client: every command waits for one read of the table's mark
// (once per container) and a newer mark refuses them before they leave. The client's network is
// replaced by a last middleware that records what would have been sent.

function gatedClient(read: (table: string) => Promise<number | null>) {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  });
  const sent: string[] = [];
  client.middlewareStack.add(
    () => async (args) => {
      sent.push((args.input as { Key?: { pk?: { S?: string } } }).Key?.pk?.S ?? 'put');
      return { output: { $metadata: {} }, response: {} };
    },
    { step: 'build', name: 'noNetwork', priority: 'low' },
  );
  installDataModelGate(client, read);
  return { client, sent };
}

const get = (pk: string) =>
  new GetItemCommand({ TableName: 'herald-test', Key: { pk: { S: pk }, sk: { S: 'X' } } });

afterEach(() => resetDataModelVerdict());

describe('judgeDataModel', () => {
  it('runs on the same or an older mark (raising an older or missing one) and refuses a newer one', () => {
    expect(judgeDataModel(null, 2)).toEqual({ run: true, raise: true });
    expect(judgeDataModel(1, 2)).toEqual({ run: true, raise: true });
    expect(judgeDataModel(2, 2)).toEqual({ run: true, raise: false });
    const newer = judgeDataModel(3, 2);
    expect(newer.run).toBe(false);
    expect(newer).toMatchObject({ reason: expect.stringContaining('data model 3, newer than this release') });
  });

  it("the marker's key is outside every other entity's key space", () => {
    expect(DATA_MODEL_KEY).toEqual({ pk: 'META', sk: 'SCHEMA' });
    expect(Number.isInteger(DATA_MODEL_VERSION) && DATA_MODEL_VERSION >= 1).toBe(true);
  });
});

describe('the data model gate', () => {
  it('reads the mark once, then lets every command through when the table is not newer', async () => {
    const read = vi.fn(async () => DATA_MODEL_VERSION);
    const { client, sent } = gatedClient(read);
    await client.send(get('ORG#1'));
    await client.send(get('ORG#2'));
    await client.send(new PutItemCommand({ TableName: 'herald-test', Item: { pk: { S: 'ORG#3' } } }));
    expect(read).toHaveBeenCalledTimes(1);
    expect(read).toHaveBeenCalledWith('herald-test');
    expect(sent).toEqual(['ORG#1', 'ORG#2', 'put']);
  });

  it('refuses every command, before it is sent, when the table holds a newer data model (503 service_unavailable)', async () => {
    const read = vi.fn(async () => DATA_MODEL_VERSION + 1);
    const { client, sent } = gatedClient(read);
    const err = await client.send(get('ORG#1')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'service_unavailable', status: 503, headers: { 'retry-after': '60' } });
    await expect(client.send(get('ORG#2'))).rejects.toBeInstanceOf(ApiError);
    expect(sent).toEqual([]);
    expect(read).toHaveBeenCalledTimes(1);
  });

  it('lets commands on the marker itself through (its own read and the sweeper raising it)', async () => {
    const { client, sent } = gatedClient(async () => DATA_MODEL_VERSION + 1);
    await client.send(
      new GetItemCommand({ TableName: 'herald-test', Key: { pk: { S: 'META' }, sk: { S: 'SCHEMA' } } }),
    );
    expect(sent).toEqual(['META']);
  });

  it('reads again after a failed read (not remembered), and the command fails meanwhile', async () => {
    const read = vi
      .fn<(t: string) => Promise<number | null>>()
      .mockRejectedValueOnce(new Error('throttled'))
      .mockResolvedValue(null);
    const { client, sent } = gatedClient(read);
    await expect(client.send(get('ORG#1'))).rejects.toThrow('throttled');
    await client.send(get('ORG#1'));
    expect(read).toHaveBeenCalledTimes(2);
    expect(sent).toEqual(['ORG#1']);
  });

  it('guards nothing in a function without a table', async () => {
    vi.stubEnv('TABLE_NAME', '');
    try {
      const read = vi.fn(async () => 99);
      const { client, sent } = gatedClient(read);
      await client.send(get('ORG#1'));
      expect(read).not.toHaveBeenCalled();
      expect(sent).toEqual(['ORG#1']);
    } finally {
      vi.unstubAllEnvs();
    }
  });
});
