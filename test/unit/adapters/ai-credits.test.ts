import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  TransactWriteCommand,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { openReservations, refundCredits, reserveCredits, settleCredits } from '#adapters/ai-credits';
import { update as applyUpdate, condition, type Item } from '../support/expressions.ts';
import { fixedId, ORG_ID } from '../support/fixtures.ts';

// AI credits (adapters/ai-credits.ts): the ai_credits meter on the usage item and the generation's
// reservation, each step ONE TransactWriteItems of both, all or nothing.

const ddb = mockClient(DynamoDBDocumentClient);
const PERIOD = '2030-06';
const USAGE = `ORG#${ORG_ID} USAGE#${PERIOD}`;
const GEN = fixedId('generation', 1);
const GEN_ITEM = `ORG#${ORG_ID} GEN#${GEN}`;
const DUE = '2030-06-10T12:01:30.000Z';

/** A table of the items the transactions touch, evaluating their conditions and updates. */
function table(start: Record<string, Item> = {}) {
  const items = new Map<string, Item>(Object.entries(start));
  const id = (k: Record<string, unknown> | undefined) => `${String(k?.pk)} ${String(k?.sk)}`;
  ddb.on(TransactWriteCommand).callsFake((input: TransactWriteCommandInput) => {
    const specs = input.TransactItems ?? [];
    const ok = specs.map((s) => {
      const spec = s.Put ?? s.Update;
      const key = s.Put ? s.Put.Item : s.Update?.Key;
      if (!spec?.ConditionExpression) return true;
      const holds = condition(
        spec.ConditionExpression,
        spec.ExpressionAttributeNames,
        spec.ExpressionAttributeValues,
      );
      return holds(items.get(id(key ?? {})) ?? {});
    });
    if (!ok.every(Boolean))
      throw new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: ok.map((r) => ({ Code: r ? 'None' : 'ConditionalCheckFailed' })),
      });
    for (const s of specs) {
      if (s.Put) items.set(id(s.Put.Item), structuredClone(s.Put.Item as Item));
      else if (s.Update) {
        const k = id(s.Update.Key);
        const { next } = applyUpdate(
          items.get(k) ?? { ...s.Update.Key },
          s.Update.UpdateExpression ?? '',
          s.Update.ExpressionAttributeNames,
          s.Update.ExpressionAttributeValues,
        );
        items.set(k, next);
      }
    }
    return {};
  });
  return items;
}

const meter = (items: Map<string, Item>) => Number(items.get(USAGE)?.ai_credits ?? 0);

beforeEach(() => {
  ddb.reset();
});

describe('reserveCredits', () => {
  it('adds the credits and writes the open reservation, in the due-work index, in ONE transaction', async () => {
    const items = table({ [USAGE]: { pk: `ORG#${ORG_ID}`, sk: `USAGE#${PERIOD}`, api_requests: 3 } });

    expect(await reserveCredits(ORG_ID, PERIOD, GEN, 6, 100, DUE)).toBe(true);

    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(1);
    expect(meter(items)).toBe(6);
    expect(items.get(GEN_ITEM)).toMatchObject({
      id: GEN,
      period: PERIOD,
      credits: 6,
      status: 'open',
      due_at: DUE,
      gsi2pk: 'DUE#2030-06-10T12:01',
      gsi2sk: `${DUE}#${ORG_ID}#${GEN}`,
    });
    expect(items.get(GEN_ITEM)?.ttl).toEqual(expect.any(Number));
  });

  it('refuses, writing nothing, when the meter has no room for the task', async () => {
    const items = table({ [USAGE]: { pk: `ORG#${ORG_ID}`, sk: `USAGE#${PERIOD}`, ai_credits: 95 } });
    expect(await reserveCredits(ORG_ID, PERIOD, GEN, 6, 100, DUE)).toBe(false);
    expect(meter(items)).toBe(95);
    expect(items.has(GEN_ITEM)).toBe(false);
    // Exactly the room is still admitted.
    expect(await reserveCredits(ORG_ID, PERIOD, GEN, 5, 100, DUE)).toBe(true);
    expect(meter(items)).toBe(100);
  });

  it('refuses a task larger than the whole allowance without a write (an absent meter passes the condition)', async () => {
    table();
    expect(await reserveCredits(ORG_ID, PERIOD, GEN, 11, 10, DUE)).toBe(false);
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('never lets concurrent reservations pass the limit', async () => {
    const items = table();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        reserveCredits(ORG_ID, PERIOD, fixedId('generation', i + 10), 3, 10, DUE),
      ),
    );
    expect(results.filter(Boolean)).toHaveLength(3);
    expect(meter(items)).toBe(9);
  });
});

describe('settleCredits and refundCredits', () => {
  it('settles to what was used: the meter moves by used − reserved and the reservation leaves the index', async () => {
    const items = table();
    await reserveCredits(ORG_ID, PERIOD, GEN, 6, 100, DUE);

    expect(await settleCredits(ORG_ID, PERIOD, GEN, 6, 2)).toBe(true);

    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(2);
    expect(meter(items)).toBe(2);
    expect(items.get(GEN_ITEM)).toMatchObject({ status: 'settled', used: 2 });
    expect(items.get(GEN_ITEM)).not.toHaveProperty('gsi2pk');
    expect(items.get(GEN_ITEM)).not.toHaveProperty('gsi2sk');
  });

  it('never charges more than was reserved', async () => {
    const items = table();
    await reserveCredits(ORG_ID, PERIOD, GEN, 6, 100, DUE);
    await settleCredits(ORG_ID, PERIOD, GEN, 6, 9);
    expect(meter(items)).toBe(6);
    expect(items.get(GEN_ITEM)?.used).toBe(6);
  });

  it('refunds all of it', async () => {
    const items = table();
    await reserveCredits(ORG_ID, PERIOD, GEN, 6, 100, DUE);
    expect(await refundCredits(ORG_ID, PERIOD, GEN, 6)).toBe(true);
    expect(meter(items)).toBe(0);
    expect(items.get(GEN_ITEM)).toMatchObject({ status: 'refunded', used: 0 });
  });

  it('applies a refund and a settle at most once between them', async () => {
    const items = table();
    await reserveCredits(ORG_ID, PERIOD, GEN, 6, 100, DUE);
    expect(await refundCredits(ORG_ID, PERIOD, GEN, 6)).toBe(true);
    expect(await settleCredits(ORG_ID, PERIOD, GEN, 6, 2)).toBe(false);
    expect(await refundCredits(ORG_ID, PERIOD, GEN, 6)).toBe(false);
    expect(meter(items)).toBe(0);
    expect(items.get(GEN_ITEM)?.status).toBe('refunded');
  });
});

describe('openReservations', () => {
  it('answers only the reservations still open, in one read', async () => {
    const open = fixedId('generation', 2);
    ddb.on(BatchGetCommand).resolves({
      Responses: {
        [process.env.TABLE_NAME ?? 'herald-test']: [
          { pk: `ORG#${ORG_ID}`, sk: `GEN#${GEN}`, id: GEN, status: 'settled', credits: 3 },
          { pk: `ORG#${ORG_ID}`, sk: `GEN#${open}`, id: open, status: 'open', credits: 4, gsi2pk: 'x' },
        ],
      },
    });
    const found = await openReservations([
      { orgId: ORG_ID, id: GEN },
      { orgId: ORG_ID, id: open },
    ]);
    expect(found).toEqual([{ id: open, status: 'open', credits: 4 }]);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(1);
  });
});
