import { renameSync, writeFileSync } from 'node:fs';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

// A measuring knob for the benchmarks (HERALD_COUNT_CAPACITY=<file>): every DynamoDB call of the
// handlers asks for its consumed capacity (ReturnConsumedCapacity INDEXES, which changes nothing
// else) and the running totals — read and write units, the table's and its indexes' apart — are
// written to the file twice a second. Off unless set; never on in AWS.

const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;

interface Units {
  CapacityUnits?: number;
  Table?: { CapacityUnits?: number };
  GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
}

export function countCapacity(client: DynamoDBClient, file: string): () => void {
  const totals = {
    read: 0,
    write: 0,
    writeTable: 0,
    writeIndexes: {} as Record<string, number>,
    calls: {} as Record<string, number>,
    writes: {} as Record<string, number>,
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { ReturnConsumedCapacity?: string };
      input.ReturnConsumedCapacity = 'INDEXES';
      const out = await next(args);
      const name = String(context.commandName);
      totals.calls[name] = (totals.calls[name] ?? 0) + 1;
      const cc = (out.output as { ConsumedCapacity?: Units | Units[] }).ConsumedCapacity;
      if (WRITES.test(name)) {
        // Units by the kinds of item written (a transaction's units go to all its kinds together).
        const kind = kindsOf(args.input).join('+');
        const units = ([] as Units[]).concat(cc ?? []).reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
        totals.writes[kind] = (totals.writes[kind] ?? 0) + units;
      }
      for (const c of ([] as Units[]).concat(cc ?? [])) {
        if (!WRITES.test(name)) {
          totals.read += c.CapacityUnits ?? 0;
          continue;
        }
        totals.write += c.CapacityUnits ?? 0;
        totals.writeTable += c.Table?.CapacityUnits ?? 0;
        for (const [index, u] of Object.entries(c.GlobalSecondaryIndexes ?? {}))
          totals.writeIndexes[index] = (totals.writeIndexes[index] ?? 0) + (u.CapacityUnits ?? 0);
      }
      return out;
    },
    { step: 'initialize', name: 'heraldCountCapacity', override: true },
  );
  // Written aside and renamed over, so a reader never sees half a file.
  const flush = () => {
    writeFileSync(`${file}.tmp`, JSON.stringify(totals));
    renameSync(`${file}.tmp`, file);
  };
  const timer = setInterval(flush, 500);
  timer.unref();
  return () => {
    clearInterval(timer);
    flush();
  };
}

/** What a write touches, by the kind of item (the sort key's first part): POST, STATS, USAGE, … */
function kindsOf(input: unknown): string[] {
  const i = input as {
    Key?: { sk?: unknown };
    Item?: { sk?: unknown };
    TransactItems?: Array<Record<string, { Key?: { sk?: unknown }; Item?: { sk?: unknown } }>>;
  };
  const kind = (sk: unknown) => `${String(sk ?? '?').split('#')[0]}`;
  if (i.TransactItems)
    return i.TransactItems.flatMap((t) =>
      Object.entries(t).map(([op, v]) => `tx:${op}:${kind(v.Key?.sk ?? v.Item?.sk)}`),
    );
  return [kind(i.Key?.sk ?? i.Item?.sk)];
}
