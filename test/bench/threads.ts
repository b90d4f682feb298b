import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyBenchEnv, itemSize, machine, table, today } from './support.ts';

// Threads (issue 34): what delivering a thread costs the table. One post to one Mastodon channel
// (the contract fake) delivered by `deliver` — the use case each delivery Lambda runs — against
// DynamoDB Local: a single post, a 5-post thread (the root and 4 follow-ups) and the same thread
// with a first comment. Counted on the worker's DynamoDB client: every request (the worker's are
// sequential, so requests = round trips on its path), and write units as DynamoDB Local reports
// them (ReturnConsumedCapacity INDEXES: the table's and each index's apart).

export interface ThreadsRow {
  shape: string;
  parts: number;
  requests: number;
  reads: number;
  writes: number;
  writeUnits: { total: number; table: number; gsi1: number; gsi2: number };
  /** The post item once published, bytes. */
  itemBytes: number;
  ms: number;
}

const TABLE = 'herald-threads-bench';
const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;

export async function benchThreads(): Promise<ThreadsRow[]> {
  const { startDynamo, ensureTable, dynamoCredentials, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const { allFakes } = await import('../fakes/index.ts');
  const dir = mkdtempSync(join(tmpdir(), 'herald-threads-'));
  const credentials = dynamoCredentials(dir);
  const dynamoLocal = await startDynamo(dir, credentials);
  const fakes = await allFakes().start();
  try {
    await ensureTable(dynamoLocal.endpoint, TABLE, credentials);
    applyBenchEnv(fakes.env());
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamoLocal.endpoint,
      TABLE_NAME: TABLE,
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    });
    const { SQSClient, SendMessageCommand, SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
    const { mockClient } = await import('aws-sdk-client-mock');
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm' });
    sqs.on(SendMessageBatchCommand).resolves({ Successful: [], Failed: [] });

    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBDocumentClient, GetCommand, PutCommand } = await import('@aws-sdk/lib-dynamodb');
    const { dynamo } = await import('#shared/clients');
    const { keys } = await import('#adapters/keys');
    const { deliver } = await import('#usecases/delivery-worker');
    const { startPublishing } = await import('#core/posts');
    const fx = await import('../unit/support/fixtures.ts');

    const counted = { reads: 0, writes: 0, total: 0, table: 0, indexes: {} as Record<string, number> };
    type Units = {
      CapacityUnits?: number;
      Table?: { CapacityUnits?: number };
      GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
    };
    dynamo.middlewareStack.add(
      ((next: (a: { input: unknown }) => Promise<{ output: unknown }>, context: { commandName?: string }) =>
        async (a: { input: unknown }) => {
          const write = WRITES.test(String(context.commandName));
          (a.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
          if (write) counted.writes++;
          else counted.reads++;
          const out = await next(a);
          if (write) {
            const cc = (out.output as { ConsumedCapacity?: Units | Units[] }).ConsumedCapacity;
            for (const c of ([] as Units[]).concat(cc ?? [])) {
              counted.total += c.CapacityUnits ?? 0;
              counted.table += c.Table?.CapacityUnits ?? 0;
              for (const [index, u] of Object.entries(c.GlobalSecondaryIndexes ?? {}))
                counted.indexes[index] = (counted.indexes[index] ?? 0) + (u.CapacityUnits ?? 0);
            }
          }
          return out;
        }) as never,
      { step: 'initialize', name: 'threadsCount', priority: 'high' } as never,
    );
    const writer = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: dynamoLocal.endpoint, region: LOCAL_REGION, credentials }),
      { marshallOptions: { removeUndefinedValues: true } },
    );
    const put = (item: Record<string, unknown>) =>
      writer.send(new PutCommand({ TableName: TABLE, Item: item }));
    await put(fx.orgItem(fx.org()));

    // The first delivery of a container also reads what it then caches (the platform app's pause):
    // a warm-up, not counted, so every row is a warm worker's.
    const shapes = [
      { shape: 'warm-up', items: 0, comment: false },
      { shape: 'a single post', items: 0, comment: false },
      { shape: 'a 5-post thread', items: 4, comment: false },
      { shape: 'a 5-post thread and a first comment', items: 4, comment: true },
    ];
    const rows: ThreadsRow[] = [];
    for (const [k, s] of shapes.entries()) {
      const ch = fx.channel(3000 + k, 'mastodon');
      await put(fx.channelItem({ ...ch, handle: `acme-${k}` }));
      await put({
        ...keys.channelCredentials(fx.ORG_ID, ch.id),
        entity: 'channel_credentials',
        credentials: { instance: fakes.url('mastodon'), access_token: 'token' },
      });
      const text = (i: number) =>
        `Threads bench ${k}, part ${i}: a short update of a typical length with a link https://example.com/${k}/${i}`;
      const p = startPublishing(
        fx.post({
          id: fx.fixedId('post', 300 + k),
          type: s.items ? 'thread' : 'single',
          variants: [
            {
              id: fx.fixedId('variant', 3000 + k),
              channel_id: ch.id,
              body: text(1),
              media: [],
              options: {},
              ...(s.items
                ? { thread: Array.from({ length: s.items }, (_, j) => ({ body: text(j + 2), media: [] })) }
                : {}),
              ...(s.comment
                ? { first_comment: { body: `Threads bench ${k}: more at https://example.com/${k}` } }
                : {}),
            },
          ],
        }),
        new Date(Date.now() - 1000),
      );
      await put(fx.postItem(p));
      Object.assign(counted, { reads: 0, writes: 0, total: 0, table: 0, indexes: {} });
      const t0 = performance.now();
      const outcome = await deliver({ org_id: fx.ORG_ID, post_id: p.id, channel_id: ch.id, round: 1 });
      const ms = performance.now() - t0;
      if (outcome !== 'published') throw new Error(`threads bench: the delivery ended ${outcome}`);
      const stored = (
        await writer.send(new GetCommand({ TableName: TABLE, Key: keys.post(fx.ORG_ID, p.id) }))
      ).Item as Record<string, unknown>;
      if (stored.status !== 'published')
        throw new Error(`threads bench: the post is ${String(stored.status)}`);
      if (s.shape === 'warm-up') continue;
      rows.push({
        shape: s.shape,
        parts: 1 + s.items + (s.comment ? 1 : 0),
        requests: counted.reads + counted.writes,
        reads: counted.reads,
        writes: counted.writes,
        writeUnits: {
          total: counted.total,
          table: counted.table,
          gsi1: counted.indexes.gsi1 ?? 0,
          gsi2: counted.indexes.gsi2 ?? 0,
        },
        itemBytes: itemSize(stored),
        ms: Math.round(ms),
      });
    }
    return rows;
  } finally {
    await fakes.stop();
    await dynamoLocal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function threadsSection(rows: ThreadsRow[]): string {
  return `Measured ${today()} on ${machine()} by \`BENCH_ONLY=threads npm run bench\` (test/bench/threads.ts).
One post to one Mastodon channel (the contract fake) delivered by the delivery worker's use case
against DynamoDB Local; requests and write units counted on the worker's DynamoDB client (write
units as DynamoDB Local reports them, the table's and each index's apart). The worker's requests
are sequential: each is a round trip on its path. The parts are recorded one write each, before
the next is sent (docs/architecture/delivery.md, "Parts").

${table(
  [
    'Delivered',
    'Parts',
    'DynamoDB requests (reads + writes)',
    'Write units (table + gsi1 + gsi2)',
    'Post item',
    'Time',
  ],
  ['l', 'r', 'r', 'r', 'r', 'r'],
  rows.map((r) => [
    r.shape,
    String(r.parts),
    `${r.requests} (${r.reads} + ${r.writes})`,
    `${r.writeUnits.total} (${r.writeUnits.table} + ${r.writeUnits.gsi1} + ${r.writeUnits.gsi2})`,
    `${(r.itemBytes / 1024).toFixed(1)} KiB`,
    `${r.ms} ms`,
  ]),
)}`;
}
