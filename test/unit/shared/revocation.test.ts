import {
  DynamoDBDocumentClient,
  QueryCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { revokeApiKey } from '#adapters/api-keys';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  counters,
  type Item,
  lambdaContext,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  problemOf,
  serveItems,
} from '../support/fixtures.ts';

// Revocation is effective at once on every container: two containers (two fresh module instances
// of the getPost function, each with its own auth cache and window guesses) hold the key warm; the
// key is revoked through the real adapter; the next request on each is refused.

const ddb = mockClient(DynamoDBDocumentClient);

const KEY = apiKey({ scopes: ['posts:read'], n: 1 });
const POST = post();
const NOW = '2030-06-30T12:00:42.500Z';

type Handler = typeof import('#handlers/get-post')['handler'];

/** A container: the getPost function loaded on its own (its module state is its own). */
async function container(): Promise<Handler> {
  vi.resetModules();
  return (await import('#handlers/get-post')).handler;
}

const get = (handler: Handler) =>
  handler(
    apiEvent('getPost', { headers: bearer(KEY), pathParameters: { id: POST.id } }),
    lambdaContext('getPost'),
  );

let gate: ReturnType<typeof counters>;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date(NOW));
  ddb.reset();
  serveItems(ddb, [apiKeyItem(KEY), orgItem(org()), postItem(POST)]);
  gate = counters();
  ddb.on(UpdateCommand).callsFake(gate.update);
  ddb.on(QueryCommand).resolves({ Items: [apiKeyItem(KEY)] });
  // The revocation's transaction: the key record is read-only here (the containers hold it
  // cached); its gate items go to the same in-memory gate the containers write.
  ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    for (const t of input.TransactItems ?? []) {
      const u = t.Update as UpdateCommandInput | undefined;
      if (u && String(u.Key?.sk).startsWith('USAGE#')) gate.update(u);
    }
    return {};
  });
});

describe('a revoked key', () => {
  it('is refused on the next request of every warm container', async () => {
    // Arrange: two containers, each having served the key (cached for 30 s).
    const a = await container();
    const b = await container();
    expect((await get(a)).statusCode).toBe(200);
    expect((await get(b)).statusCode).toBe(200);

    // Act: 10 s later, the key is revoked.
    vi.setSystemTime(new Date(Date.parse(NOW) + 10_000));
    await revokeApiKey(ORG_ID, KEY.record.id, new Date().toISOString(), ['2030-06', '2030-07']);

    // Assert
    for (const handler of [a, b, a]) {
      const res = await get(handler);
      expect(res.statusCode).toBe(401);
      expect(problemOf(res).code).toBe('invalid_api_key');
    }
    const month = gate.items.get(`ORG#${ORG_ID} USAGE#2030-06`) as Item;
    expect(month.api_requests).toBe(2);
    expect(month[KEY.record.id]).toEqual({ r: expect.any(String) });
  });

  it('stays refused across the month boundary, while the containers still hold it cached', async () => {
    // Arrange: a container served the key 10 s before the month ends; it is revoked 5 s later.
    vi.setSystemTime(new Date('2030-06-30T23:59:50.000Z'));
    const a = await container();
    expect((await get(a)).statusCode).toBe(200);
    vi.setSystemTime(new Date('2030-06-30T23:59:55.000Z'));
    await revokeApiKey(ORG_ID, KEY.record.id, new Date().toISOString(), ['2030-06', '2030-07']);

    // Act: 10 s later, in July, within the cache's 30 s.
    vi.setSystemTime(new Date('2030-07-01T00:00:05.000Z'));
    const res = await get(a);

    // Assert
    expect(res.statusCode).toBe(401);
    // July's gate item holds the revocation and nothing else: the refused request wrote nothing.
    expect(gate.items.get(`ORG#${ORG_ID} USAGE#2030-07`)).toEqual({
      [KEY.record.id]: { r: '2030-06-30T23:59:55.000Z' },
    });
  });
});
