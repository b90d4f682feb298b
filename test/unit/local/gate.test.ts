import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GateOutcome, GateRequest } from '#adapters/usage';
import { type DynamoService, ensureTable, startDynamo } from '../../../bin/local/services.ts';

// The request gate (adapters/usage.ts) against DynamoDB Local, the engine the local stack runs:
// concurrent admissions are coalesced into one conditional write per batch, and the limits still
// hold exactly — n parallel requests near a limit admit exactly up to it — and a write the SDK
// retries after a lost answer counts its batch once.

const TABLE = process.env.TABLE_NAME ?? 'herald-test';
const dir = mkdtempSync(join(tmpdir(), 'herald-gate-'));
let engine: DynamoService | undefined;
let gate: typeof import('#adapters/usage');
let clients: typeof import('#shared/clients');
/** The gate's UpdateItems sent (SDK attempts included), counted by a middleware. */
let attempts = 0;
/** The UpdateItem attempt (counting from 1) that is applied but whose answer is lost: the SDK retries it. */
let loseAnswerOf: number | undefined;

const WINDOW = Math.floor(Date.now() / 60_000);
let org = 0;
/** A gate item of its own for each test (a fresh org), with `item` in it. */
async function gateFor(item: Record<string, unknown>, limits: { burst: number; month: number }) {
  org += 1;
  const req: GateRequest = {
    keyId: 'key_01',
    orgId: `org_gate${org}`,
    windowId: WINDOW,
    burstLimit: limits.burst,
    period: '2030-06',
    monthlyLimit: limits.month,
  };
  const key = { pk: `ORG#${req.orgId}`, sk: 'USAGE#2030-06' };
  if (Object.keys(item).length)
    await clients.ddb.send(new PutCommand({ TableName: TABLE, Item: { ...key, ...item } }));
  const read = async () =>
    (await clients.ddb.send(new GetCommand({ TableName: TABLE, Key: key, ConsistentRead: true }))).Item ?? {};
  return { req, read };
}

const outcomes = (results: GateOutcome[]) => {
  const by = (o: GateOutcome['outcome']) => results.filter((r) => r.outcome === o);
  return { admitted: by('admitted'), burst: by('burst'), quota: by('quota') };
};
const burstCounts = (results: GateOutcome[]) =>
  results.flatMap((r) => (r.outcome === 'admitted' ? [r.burstCount] : [])).sort((a, b) => a - b);

beforeAll(async () => {
  const credentials = {
    accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'unit',
    secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'unit',
  };
  engine = await startDynamo(dir, credentials);
  await ensureTable(engine.endpoint, TABLE, credentials);
  process.env.AWS_ENDPOINT_URL_DYNAMODB = engine.endpoint;
  clients = await import('#shared/clients');
  gate = await import('#adapters/usage');
  // Inside the SDK's retry loop: each attempt of an UpdateItem passes here once.
  clients.dynamo.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'UpdateItemCommand') return next(args);
      attempts += 1;
      const attempt = attempts;
      const result = await next(args);
      if (attempt === loseAnswerOf) {
        throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      }
      return result;
    },
    { step: 'deserialize', name: 'gateTestAttempts', priority: 'high' },
  );
}, 120_000);

afterAll(async () => {
  clients?.dynamo.destroy();
  await engine?.stop();
  rmSync(dir, { recursive: true, force: true });
});

beforeEach(() => {
  gate.clearGateGuesses();
  attempts = 0;
  loseAnswerOf = undefined;
});

describe('the request gate on DynamoDB Local: group commit', () => {
  it('admits one request alone with one write at once (a batch of one)', async () => {
    const { req, read } = await gateFor({}, { burst: 30, month: 1_000 });
    expect(await gate.admitRequest(req)).toEqual({ outcome: 'admitted', burstCount: 1, apiRequests: 1 });
    expect(attempts).toBe(1);
    expect(await read()).toMatchObject({ api_requests: 1, key_01: { w: WINDOW, n: 1 } });
  });

  it('coalesces 40 concurrent admissions of one key into a few writes, counting each exactly once', async () => {
    // Arrange: a window from before tokens existed ({w, n} only) and a month in progress.
    const { req, read } = await gateFor(
      { api_requests: 500, key_01: { w: WINDOW, n: 3 } },
      { burst: 300, month: 10_000 },
    );

    // Act
    const results = await Promise.all(Array.from({ length: 40 }, () => gate.admitRequest(req)));

    // Assert: every count from 4 to 43 handed out once, the item counted 40, in far fewer writes.
    expect(outcomes(results).admitted).toHaveLength(40);
    expect(burstCounts(results)).toEqual(Array.from({ length: 40 }, (_, i) => 4 + i));
    expect(await read()).toMatchObject({ api_requests: 540, key_01: { w: WINDOW, n: 43 } });
    expect(attempts).toBeLessThanOrEqual(4);
  });

  it('admits exactly the burst room of 50 parallel requests (7 left) and refuses the rest with burst', async () => {
    const { req, read } = await gateFor(
      { api_requests: 90, key_01: { w: WINDOW, n: 23 } },
      { burst: 30, month: 10_000 },
    );

    const results = await Promise.all(Array.from({ length: 50 }, () => gate.admitRequest(req)));

    const { admitted, burst } = outcomes(results);
    expect(admitted).toHaveLength(7);
    expect(burst).toHaveLength(43);
    expect(burstCounts(results)).toEqual([24, 25, 26, 27, 28, 29, 30]);
    expect(await read()).toMatchObject({ api_requests: 97, key_01: { w: WINDOW, n: 30 } });
  });

  it('admits exactly the month room of 30 parallel requests (5 left) and refuses the rest with quota', async () => {
    const { req, read } = await gateFor(
      { api_requests: 995, key_01: { w: WINDOW, n: 2 } },
      { burst: 100, month: 1_000 },
    );

    const results = await Promise.all(Array.from({ length: 30 }, () => gate.admitRequest(req)));

    const { admitted, quota } = outcomes(results);
    expect(admitted).toHaveLength(5);
    expect(quota).toHaveLength(25);
    expect(admitted.map((a) => (a.outcome === 'admitted' ? a.apiRequests : 0)).sort((a, b) => a - b)).toEqual(
      [996, 997, 998, 999, 1_000],
    );
    expect(await read()).toMatchObject({ api_requests: 1_000, key_01: { w: WINDOW, n: 7 } });
  });

  it('opens a new window for a batch: 60 parallel requests of a fresh minute, burst 30, admit 30', async () => {
    const { req, read } = await gateFor(
      { api_requests: 10, key_01: { w: WINDOW - 1, n: 30 } },
      { burst: 30, month: 10_000 },
    );

    const results = await Promise.all(Array.from({ length: 60 }, () => gate.admitRequest(req)));

    expect(outcomes(results).admitted).toHaveLength(30);
    expect(outcomes(results).burst).toHaveLength(30);
    expect(await read()).toMatchObject({ api_requests: 40, key_01: { w: WINDOW, n: 30 } });
  });

  it('refuses a revoked key for every request of a batch and writes nothing', async () => {
    const revoked = { r: '2030-06-01T00:00:00.000Z' };
    const { req, read } = await gateFor({ api_requests: 10, key_01: revoked }, { burst: 30, month: 10_000 });

    const results = await Promise.all(Array.from({ length: 10 }, () => gate.admitRequest(req)));

    expect(results.every((r) => r.outcome === 'revoked')).toBe(true);
    expect(await read()).toMatchObject({ api_requests: 10, key_01: revoked });
  });
});

describe('the request gate on DynamoDB Local: a write retried after a lost answer', () => {
  it('counts a batch once when the SDK retries its applied write: the retry is refused by its own token', async () => {
    // Arrange: a window this container has counted in (8 requests, 3 in the window); 12 requests at
    // once: the first goes alone, the 11 that waited for it go as the second write, which is
    // applied but whose answer is lost, so the SDK sends it again.
    const { req, read } = await gateFor(
      { api_requests: 7, key_01: { w: WINDOW, n: 2 } },
      { burst: 100, month: 1_000 },
    );
    await gate.admitRequest(req);
    attempts = 0;
    loseAnswerOf = 2;

    // Act
    const results = await Promise.all(Array.from({ length: 12 }, () => gate.admitRequest(req)));

    // Assert: 3 attempts (the lone write, the batch, its retry), each request counted once.
    expect(attempts).toBe(3);
    expect(outcomes(results).admitted).toHaveLength(12);
    expect(burstCounts(results)).toEqual(Array.from({ length: 12 }, (_, i) => 4 + i));
    expect(await read()).toMatchObject({ api_requests: 20, key_01: { w: WINDOW, n: 15 } });
  });

  it("leaves no token in a window only lone requests counted in (the item's size, and so its write units, as before)", async () => {
    const { req, read } = await gateFor({}, { burst: 100, month: 1_000 });
    await gate.admitRequest(req);
    await gate.admitRequest(req);
    expect((await read()).key_01).toEqual({ w: WINDOW, n: 2 });
  });
});
