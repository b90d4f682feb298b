import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  CLAIM_MS,
  clearIdempotencySwitch,
  IDEMPOTENCY_TTL_SECONDS,
  type IdempotentCall,
  idempotent,
  LEGACY_MS,
  type Recorded,
} from '#adapters/idempotency';
import { keys } from '#adapters/keys';
import { TABLE_NAME } from '#adapters/table';
import { ApiError } from '#core/errors';
import { dynamo } from '#shared/clients';
import { advance, useWorld } from '../faults/support/world.ts';
import { lambdaContext, ORG_ID, OTHER_ORG_ID } from '../support/fixtures.ts';

// Idempotency records per organization, and the way over from the shared partition of the previous
// version (`IDEMPOTENCY#createPost`): the adapter against a table that evaluates conditions, with
// the previous version's adapter (below, as it was) writing the records a deploy finds.

const { table } = useWorld({ platforms: false });

type Body = { text: string };
type Call = IdempotentCall<Body, null>;

/** What ran: one entry per execution of the operation (never two for one org and key). */
let runs: string[] = [];
/** Holds the next execution until released (a request still running). */
let gate: { wait: Promise<void>; release: () => void } | undefined;

const operation = async (call: Call, by: string): Promise<Recorded> => {
  runs.push(`${by} ${call.org_id} ${call.key}`);
  if (gate) await gate.wait;
  return { status: 201, json: JSON.stringify({ id: `post_${runs.length}`, text: call.body.text, by }) };
};

const current = idempotent<Body, null>('createPost', (call) => operation(call, 'current'));

/** The previous version's adapter: every organization's records under IDEMPOTENCY#createPost. */
function previousVersion() {
  const config = new IdempotencyConfig({
    eventKeyJmesPath: '[org_id, key]',
    payloadValidationJmesPath: 'body',
    expiresAfterSeconds: IDEMPOTENCY_TTL_SECONDS,
    throwOnNoIdempotencyKey: true,
    responseHook: (response) => ({ ...(response as object), replayed: true }),
  });
  const persistenceStore = new DynamoDBPersistenceLayer({
    tableName: TABLE_NAME,
    keyAttr: 'pk',
    sortKeyAttr: 'sk',
    staticPkValue: 'IDEMPOTENCY#createPost',
    expiryAttr: 'ttl',
    awsSdkV3Client: dynamo,
  });
  const wrapped = makeIdempotent((call: Call) => operation(call, 'previous'), {
    persistenceStore,
    config,
    keyPrefix: 'createPost',
  });
  const run = (call: Call): Promise<Recorded> => {
    config.registerLambdaContext(lambdaContext('createPost'));
    return wrapped(call);
  };
  /** Its in-progress record, as a container that died before finishing left it. */
  const crashAfterClaim = (call: Call) => {
    persistenceStore.configure({ config, keyPrefix: 'createPost' });
    return persistenceStore.saveInProgress(
      call as never,
      lambdaContext('createPost').getRemainingTimeInMillis(),
    );
  };
  return Object.assign(run, { crashAfterClaim });
}
const previous = previousVersion();

const call = (key: string, text = 'Hello', orgId = ORG_ID): Call => ({
  org_id: orgId,
  key,
  body: { text },
  context: null,
});
const send = (c: Call) => current(c, lambdaContext('createPost'));
/** The API error code a call ends with. */
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => (err instanceof ApiError ? err.code : String(err)),
  );

const holdNextRun = () => {
  let release: () => void = () => undefined;
  const wait = new Promise<void>((resolve) => {
    release = resolve;
  });
  gate = { wait, release };
  return () => {
    gate = undefined;
    release();
  };
};

const recordsIn = (pk: string) => [...table.items.values()].filter((i) => i.pk === pk);
const legacyPk = keys.legacyIdempotency('createPost').pk;
const legacyReads = () => table.callsOf('GetItem', (c) => c.view.keys[0]?.pk === legacyPk).length;
const legacyWrites = () =>
  ['PutItem', 'UpdateItem', 'DeleteItem'].flatMap((op) =>
    table.callsOf(op as 'PutItem', (c) => [...c.view.items, ...c.view.keys].some((i) => i.pk === legacyPk)),
  ).length;
/** The deployment switched `ago` ms before now (as if an earlier container had written it). */
const switchedAgo = (ago: number) => table.seed({ ...keys.idempotencySwitch(), since: Date.now() - ago });

beforeEach(() => {
  clearIdempotencySwitch();
  runs = [];
  gate = undefined;
});

describe('idempotency records per organization', () => {
  it("keeps each organization's records in its own partition; the same key elsewhere is another request", async () => {
    switchedAgo(LEGACY_MS);

    const mine = await send(call('shared-key'));
    const theirs = await send(call('shared-key', 'Hello', OTHER_ORG_ID));
    const mineAgain = await send(call('shared-key'));
    const theirsAgain = await send(call('shared-key', 'Hello', OTHER_ORG_ID));

    expect(runs).toEqual([`current ${ORG_ID} shared-key`, `current ${OTHER_ORG_ID} shared-key`]);
    expect(mine.json).not.toBe(theirs.json);
    expect(mineAgain).toEqual({ ...mine, replayed: true });
    expect(theirsAgain).toEqual({ ...theirs, replayed: true });
    expect(recordsIn(`ORG#${ORG_ID}#IDEMPOTENCY`)).toMatchObject([{ status: 'COMPLETED' }]);
    expect(recordsIn(`ORG#${OTHER_ORG_ID}#IDEMPOTENCY`)).toMatchObject([{ status: 'COMPLETED' }]);
    expect(recordsIn(legacyPk)).toEqual([]);
  });

  it('long after the switch: never reads or writes the shared partition', async () => {
    switchedAgo(LEGACY_MS);

    await send(call('k-1'));
    await send(call('k-1'));
    await expect(codeOf(send(call('k-1', 'another body')))).resolves.toBe('idempotency_key_reused');

    expect(legacyReads()).toBe(0);
    expect(legacyWrites()).toBe(0);
    expect(runs).toHaveLength(1);
  });

  it("writes the switch time once: the deployment's first keyed call sets it, every later container reads it", async () => {
    const first = Date.now();
    await send(call('k-2'));
    advance(60_000);
    clearIdempotencySwitch(); // another container
    await send(call('k-3'));

    expect(table.get(keys.idempotencySwitch())).toMatchObject({ since: first });
    expect(table.callsOf('PutItem', (c) => c.view.items[0]?.pk === keys.idempotencySwitch().pk)).toHaveLength(
      1,
    );
  });
});

describe('the first 15 minutes after the switch: the previous version may still answer', () => {
  it('claims the shared record too, so the previous version replays instead of running it again', async () => {
    const first = await send(call('deploy-1'));
    const byPrevious = await previous(call('deploy-1'));

    expect(runs).toEqual([`current ${ORG_ID} deploy-1`]);
    expect(byPrevious).toEqual({ ...first, replayed: true });
    expect(recordsIn(`ORG#${ORG_ID}#IDEMPOTENCY`)).toMatchObject([{ status: 'COMPLETED' }]);
    expect(recordsIn(legacyPk)).toMatchObject([{ status: 'COMPLETED' }]);
  });

  it('a request still running on the previous version: 409, then its answer, run once', async () => {
    await send(call('warm')); // the switch time written
    const release = holdNextRun();
    const running = previous(call('deploy-2'));
    await new Promise((resolve) => setImmediate(resolve));

    const meanwhile = codeOf(send(call('deploy-2')));
    await expect(meanwhile).resolves.toBe('idempotency_in_progress');
    release();
    const answered = await running;
    const after = await send(call('deploy-2'));

    expect(after).toEqual({ ...answered, replayed: true });
    expect(runs.filter((r) => r.endsWith('deploy-2'))).toEqual([`previous ${ORG_ID} deploy-2`]);
  });

  it('a failed request releases both records: the retry runs', async () => {
    await send(call('warm'));
    const failing = idempotent<Body, null>('createPost', async () => {
      throw new Error('boom');
    });
    const held = () => [...recordsIn(legacyPk), ...recordsIn(`ORG#${ORG_ID}#IDEMPOTENCY`)].length;
    const before = held();
    await expect(failing(call('deploy-3'), lambdaContext('createPost'))).rejects.toThrow('boom');

    expect(held()).toBe(before);
    await send(call('deploy-3'));
    expect(runs).toEqual([`current ${ORG_ID} warm`, `current ${ORG_ID} deploy-3`]);
  });
});

describe('until 24 h 15 min after the switch: a key first used before the upgrade', () => {
  it('replays the previous answer byte for byte, runs nothing, and keeps the answer in the new partition', async () => {
    const before = await previous(call('order-1'));
    advance(10 * 3_600_000);
    switchedAgo(CLAIM_MS + 60_000);
    const writes = legacyWrites();

    const replay = await send(call('order-1'));
    const again = await send(call('order-1'));

    expect(runs).toEqual([`previous ${ORG_ID} order-1`]);
    expect(replay).toEqual({ ...before, replayed: true });
    expect(again).toEqual(replay);
    expect(recordsIn(`ORG#${ORG_ID}#IDEMPOTENCY`)).toMatchObject([{ status: 'COMPLETED' }]);
    expect(legacyWrites()).toBe(writes);
  });

  it('reads the shared record alongside the per-organization claim (one read, no write)', async () => {
    switchedAgo(CLAIM_MS + 60_000);
    await send(call('warm')); // the switch time known to this container

    const reads = legacyReads();
    await send(call('fresh'));

    expect(legacyReads() - reads).toBe(1);
    expect(legacyWrites()).toBe(0);
    expect(runs).toEqual([`current ${ORG_ID} warm`, `current ${ORG_ID} fresh`]);
  });

  it('another body for a key used before the upgrade: 422, nothing run, nothing kept', async () => {
    await previous(call('order-2', 'first'));
    switchedAgo(CLAIM_MS + 60_000);

    await expect(codeOf(send(call('order-2', 'second')))).resolves.toBe('idempotency_key_reused');

    expect(runs).toEqual([`previous ${ORG_ID} order-2`]);
    expect(recordsIn(`ORG#${ORG_ID}#IDEMPOTENCY`)).toEqual([]);
  });

  it("another organization's identical key and body is never answered from the shared record", async () => {
    await previous(call('order-3'));
    switchedAgo(CLAIM_MS + 60_000);

    const theirs = await send(call('order-3', 'Hello', OTHER_ORG_ID));

    expect(theirs.replayed).toBeUndefined();
    expect(runs).toEqual([`previous ${ORG_ID} order-3`, `current ${OTHER_ORG_ID} order-3`]);
  });

  it('a request of the previous version that crashed mid-way (its in-progress time passed) no longer holds the key', async () => {
    await previous.crashAfterClaim(call('order-4'));
    advance(10_001); // past the in-progress expiry (the Lambda's remaining time, 10 s)
    switchedAgo(CLAIM_MS + 60_000);

    const retried = await send(call('order-4'));

    expect(retried.replayed).toBeUndefined();
    expect(runs).toEqual([`current ${ORG_ID} order-4`]);
  });

  it('one still in progress there: 409, nothing run', async () => {
    await previous.crashAfterClaim(call('order-6'));
    switchedAgo(CLAIM_MS + 60_000);

    await expect(codeOf(send(call('order-6')))).resolves.toBe('idempotency_in_progress');

    expect(runs).toEqual([]);
    expect(recordsIn(`ORG#${ORG_ID}#IDEMPOTENCY`)).toEqual([]);
  });

  it('a shared record past its 24 h is a new request', async () => {
    await previous(call('order-5'));
    advance(IDEMPOTENCY_TTL_SECONDS * 1000 + 1000);
    switchedAgo(CLAIM_MS + 60_000);

    const res = await send(call('order-5'));

    expect(res.replayed).toBeUndefined();
    expect(runs).toEqual([`previous ${ORG_ID} order-5`, `current ${ORG_ID} order-5`]);
  });
});
