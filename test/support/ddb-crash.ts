import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DynamoDBClient, GetItemCommand, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import {
  awaitLocalCommits,
  type DynamoService,
  dynamoCredentials,
  ensureTable,
  LOCAL_REGION,
  startDynamo,
} from '../../bin/local/services.ts';

// Crash experiment for DynamoDB Local: a TransactWriteItems, `kill -9` of the Java process the
// moment the caller has the answer, a restart on the same directory, and a look for the item.
// Each trial's restart is the next trial's engine, so N trials cost N + 1 Java starts.
//
//   npx tsx test/support/ddb-crash.ts [trials per variant, default 30] [items] [KiB per item]
//
// runs the trials with and without `awaitLocalCommits` alternately and prints the losses.

export interface CrashTrials {
  /** Trials whose transaction was gone after the restart, per variant. */
  lost: { raw: number; awaited: number };
  trials: { raw: number; awaited: number };
  seconds: number;
}

export async function crashTrials(opts: {
  /** One entry per trial: whether the transaction's caller waits for the commit. */
  awaited: boolean[];
  /** Items per transaction and KiB per item: a bigger COMMIT widens the window without the fix. */
  items?: number;
  kib?: number;
}): Promise<CrashTrials> {
  const items = opts.items ?? 1;
  const pad = 'x'.repeat((opts.kib ?? 0) * 1024);
  const dir = mkdtempSync(join(tmpdir(), 'herald-crash-'));
  const dbPath = join(dir, 'dynamodb');
  mkdirSync(dbPath);
  const credentials = dynamoCredentials(dir);
  const table = 'crash';
  const started = Date.now();
  const out: CrashTrials = { lost: { raw: 0, awaited: 0 }, trials: { raw: 0, awaited: 0 }, seconds: 0 };
  let engine: DynamoService | undefined;
  try {
    engine = await startDynamo(dbPath, credentials);
    await ensureTable(engine.endpoint, table, credentials);
    for (let i = 0; i <= opts.awaited.length; i++) {
      const client = new DynamoDBClient({ endpoint: engine.endpoint, region: LOCAL_REGION, credentials });
      if (i > 0) {
        // The previous trial's transaction, after its engine's crash.
        const got = await client.send(
          new GetItemCommand({
            TableName: table,
            Key: { pk: { S: `trial#${i - 1}` }, sk: { S: 'item#0' } },
            ConsistentRead: true,
          }),
        );
        const variant = opts.awaited[i - 1] ? 'awaited' : 'raw';
        out.trials[variant]++;
        if (!got.Item) out.lost[variant]++;
      }
      if (i === opts.awaited.length) {
        client.destroy();
        break;
      }
      if (opts.awaited[i]) awaitLocalCommits(client);
      await client.send(
        new TransactWriteItemsCommand({
          TransactItems: Array.from({ length: items }, (_, j) => ({
            Put: {
              TableName: table,
              Item: { pk: { S: `trial#${i}` }, sk: { S: `item#${j}` }, pad: { S: pad || '-' } },
            },
          })),
        }),
      );
      process.kill(engine.pid, 'SIGKILL');
      await engine.stop();
      client.destroy();
      engine = await startDynamo(dbPath, credentials);
    }
  } finally {
    await engine?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  out.seconds = (Date.now() - started) / 1000;
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const n = Number(process.argv[2] ?? 30);
  const items = Number(process.argv[3] ?? 1);
  const kib = Number(process.argv[4] ?? 0);
  const awaited = Array.from({ length: 2 * n }, (_, i) => i % 2 === 1);
  const res = await crashTrials({ awaited, items, kib });
  console.log(
    `${items} item(s) of ${kib} KiB per transaction: lost ${res.lost.raw}/${res.trials.raw} without ` +
      `the fix, ${res.lost.awaited}/${res.trials.awaited} with it (${res.seconds.toFixed(1)} s)`,
  );
}
