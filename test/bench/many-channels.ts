import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyBenchEnv, itemSize, machine, table, today } from './support.ts';

// Many channels per post (issue 31): one post due now to N Mastodon channels (the contract fake),
// its N dispatch messages handed to N concurrent workers (`deliver`, the use case each delivery
// Lambda runs) against DynamoDB Local. Counted on the workers' DynamoDB client: write units as
// DynamoDB Local reports them (ReturnConsumedCapacity INDEXES: the table's and GSI1's apart), and
// writes refused by their condition — which DynamoDB bills too (the item's size in KB, ≥ 1; the
// error carries no capacity, so they are counted from the item the write asked back). Time: from
// the first worker's start to the last delivery recorded. A worker that gave up
// (ConcurrentChangeError) is redelivered by SQS after its visibility timeout in AWS; here it runs
// again at once and is counted.

export interface ManyChannelsRow {
  channels: number;
  writeRequests: number;
  writeUnits: { total: number; table: number; gsi1: number; gsi2: number };
  failedConditionalWrites: number;
  failedConditionalUnits: number;
  /** Deliveries whose worker gave up on contention and needed SQS to redeliver. */
  redelivered: number;
  /** Of those, deliveries left leased by a worker that gave up after the platform accepted: in AWS they wait the lease out (90 s), then reconcile. */
  leased: number;
  msToLastDelivery: number;
  /** The post item once published, bytes. */
  itemBytes: number;
}

const TABLE = 'herald-many-channels-bench';
const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;

export async function benchManyChannels(sizes: number[] = [1, 10, 25, 50]): Promise<ManyChannelsRow[]> {
  const { startDynamo, ensureTable, dynamoCredentials, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const { allFakes } = await import('../fakes/index.ts');
  const dir = mkdtempSync(join(tmpdir(), 'herald-many-channels-'));
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
    // Later attempts' messages go to SQS: answered as SQS does, not measured.
    const { SQSClient, SendMessageCommand, SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
    const { mockClient } = await import('aws-sdk-client-mock');
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageCommand).resolves({ MessageId: 'm' });
    sqs.on(SendMessageBatchCommand).callsFake((input: { Entries?: Array<{ Id?: string }> }) => ({
      Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}` })),
      Failed: [],
    }));

    const { unmarshall } = await import('@aws-sdk/util-dynamodb');
    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBDocumentClient, GetCommand, PutCommand } = await import('@aws-sdk/lib-dynamodb');
    const { dynamo } = await import('#shared/clients');
    const { keys } = await import('#adapters/keys');
    const { deliver, RetryLaterError } = await import('#usecases/delivery-worker');
    const { LEASE_SECONDS } = await import('#core/timing');
    const fx = await import('../unit/support/fixtures.ts');
    type PostRecord = import('#core/posts').PostRecord;

    const counted = {
      requests: 0,
      total: 0,
      table: 0,
      indexes: {} as Record<string, number>,
      failed: 0,
      failedUnits: 0,
    };
    type Units = {
      CapacityUnits?: number;
      Table?: { CapacityUnits?: number };
      GlobalSecondaryIndexes?: Record<string, { CapacityUnits?: number }>;
    };
    dynamo.middlewareStack.add(
      ((next: (a: { input: unknown }) => Promise<{ output: unknown }>, context: { commandName?: string }) =>
        async (a: { input: unknown }) => {
          const name = String(context.commandName);
          const write = WRITES.test(name);
          (a.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'INDEXES';
          if (write) counted.requests++;
          let out: { output: unknown };
          try {
            out = await next(a);
          } catch (err) {
            if (write && (err as { name?: string }).name === 'ConditionalCheckFailedException') {
              counted.failed++;
              const old = (err as { Item?: Record<string, unknown> }).Item;
              counted.failedUnits += Math.max(
                1,
                Math.ceil((old ? itemSize(unmarshall(old as never)) : 0) / 1024),
              );
            }
            throw err;
          }
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
      { step: 'initialize', name: 'manyChannelsCount', priority: 'high' } as never,
    );
    // The seed goes through a client of its own: not counted.
    const writer = DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint: dynamoLocal.endpoint, region: LOCAL_REGION, credentials }),
      { marshallOptions: { removeUndefinedValues: true } },
    );
    const put = (item: Record<string, unknown>) =>
      writer.send(new PutCommand({ TableName: TABLE, Item: item }));
    await put(fx.orgItem(fx.org()));

    const rows: ManyChannelsRow[] = [];
    for (const [k, n] of sizes.entries()) {
      const channels = Array.from({ length: n }, (_, i) => fx.channel(1000 * (k + 1) + i, 'mastodon'));
      for (const ch of channels) {
        await put(fx.channelItem({ ...ch, handle: `acme-${ch.id.slice(-6)}` }));
        await put({
          ...keys.channelCredentials(fx.ORG_ID, ch.id),
          entity: 'channel_credentials',
          credentials: { instance: fakes.url('mastodon'), access_token: 'token' },
        });
      }
      const due = new Date(Date.now() - 1000).toISOString();
      const p: PostRecord = fx.post({
        id: fx.fixedId('post', 100 + k),
        status: 'scheduled',
        scheduled_at: due,
        variants: channels.map((ch, i) => ({
          id: fx.fixedId('variant', 1000 * (k + 1) + i),
          channel_id: ch.id,
          body: `Many channels bench: post ${k}, channel ${i}. A short update with a link https://example.com/${k}/${i}`,
          media: [],
          options: {},
        })),
      });
      await put(fx.postItem(p));
      Object.assign(counted, { requests: 0, total: 0, table: 0, indexes: {}, failed: 0, failedUnits: 0 });
      const t0 = performance.now();
      let redelivered = 0;
      let leased = 0;
      const one = async (channel_id: string): Promise<void> => {
        // After a worker gave up holding the lease (its outcome write lost), the redelivery finds the
        // delivery leased: it is run as the clock would be once the lease ran out (it reconciles).
        let skewMs = 0;
        for (;;) {
          try {
            const clock = () => new Date(Date.now() + skewMs);
            const msg = { org_id: fx.ORG_ID, post_id: p.id, channel_id, round: 1, start: due };
            const outcome = await deliver(msg, clock);
            if (outcome !== 'published') throw new Error(`many-channels bench: a delivery ended ${outcome}`);
            return;
          } catch (err) {
            if (err instanceof RetryLaterError) {
              leased++;
              skewMs += (LEASE_SECONDS + 1) * 1000;
            } else if ((err as Error).name !== 'ConcurrentChangeError') throw err;
            redelivered++;
          }
        }
      };
      await Promise.all(channels.map((ch) => one(ch.id)));
      const ms = performance.now() - t0;
      const stored = (
        await writer.send(new GetCommand({ TableName: TABLE, Key: keys.post(fx.ORG_ID, p.id) }))
      ).Item as Record<string, unknown>;
      if (stored.status !== 'published')
        throw new Error(`many-channels bench: the post is ${String(stored.status)}`);
      rows.push({
        channels: n,
        writeRequests: counted.requests,
        writeUnits: {
          total: counted.total,
          table: counted.table,
          gsi1: counted.indexes.gsi1 ?? 0,
          gsi2: counted.indexes.gsi2 ?? 0,
        },
        failedConditionalWrites: counted.failed,
        failedConditionalUnits: counted.failedUnits,
        redelivered,
        leased,
        msToLastDelivery: Math.round(ms),
        itemBytes: itemSize(stored),
      });
      console.error(`many-channels ${n}: ${JSON.stringify(rows.at(-1))}`);
    }
    return rows;
  } finally {
    await fakes.stop();
    await dynamoLocal.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function manyChannelsSection(after: ManyChannelsRow[], before?: ManyChannelsRow[]): string {
  const rows = (label: string, rs: ManyChannelsRow[]) =>
    rs.map((r) => [
      label,
      String(r.channels),
      String(r.writeRequests),
      String(r.writeUnits.total),
      String(r.writeUnits.table),
      String(r.writeUnits.gsi1),
      String(r.failedConditionalWrites),
      String(r.failedConditionalUnits),
      `${r.redelivered}${r.leased ? ` (${r.leased} leased)` : ''}`,
      String(r.msToLastDelivery),
      (r.itemBytes / 1024).toFixed(1),
    ]);
  return `Measured ${today()} on ${machine()} by \`npm run bench\` (test/bench/many-channels.ts): one
post due now to N Mastodon channels (the contract fake), its N dispatch messages run by N concurrent
workers against DynamoDB Local. WRU: write units DynamoDB Local reported for the workers' writes
(the table and GSI1; GSI2 is keys only and is written only when the post's due entry moves); failed
conditional writes are billed too (their units: the item's KB, ≥ 1). Redelivered: workers that gave up
on contention (ConcurrentChangeError), run again here at once — in AWS SQS redelivers them after the
visibility timeout; "leased": the worker gave up after the platform accepted, so the redelivery
waits the 90 s lease out and reconciles (run here on a clock moved past the lease, so the time
column leaves those waits out). The write counts are deterministic
for a given interleaving; the times are on a machine shared with other work and move with its load.

${table(
  [
    'Code',
    'Channels',
    'Write requests',
    'WRU',
    'of which table',
    'gsi1',
    'Failed conditional writes',
    'their WRU',
    'Redelivered',
    'ms to last delivery',
    'Item KB',
  ],
  ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  [...rows('after', after), ...(before ? rows('before (91db867)', before) : [])],
)}`;
}
