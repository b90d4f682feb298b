import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { itemSize } from './cost.ts';
import { applyBenchEnv, countConsumedCapacity, machine, table, today } from './support.ts';

// The analytics counters' write units (issue 24): what the stream relay writes to keep the
// deliveries and timeline counters for each post, measured, not estimated. Post writes go into
// DynamoDB Local as the service makes them (scheduled → publishing → claimed → published, one
// channel); the local stack's own stream poller reads the table's real stream (DynamoDB Local's
// shard ids and sequence numbers) and hands it to the real relay handler; every call of the
// relay's DynamoDB client has ReturnConsumedCapacity TOTAL. Two mappings of the same relay:
// without a tumbling window a batch names no shard, and the relay counts change by change with a
// marker in a transaction (main's scheme before issue 24); with the stack's window it counts each
// batch once per organization and counter item, guarded by the shard's mark.

export interface StatsRow {
  scheme: 'marker' | 'ordered';
  scenario: string;
  posts: number;
  /** Relay invocations with records (the poller's batches). */
  batches: number;
  writeRequests: number;
  /** As AWS bills them: 1 per KB of the larger image per item, twice that for an item in a transaction. */
  writeUnits: number;
  /** As DynamoDB Local reports them (ReturnConsumedCapacity TOTAL). */
  reportedUnits: number;
}

export interface StatsResult {
  rows: StatsRow[];
  /** The org's STATS item after the ordered runs: its bytes and how many shard marks it holds. */
  statsItem: { bytes: number; marks: number };
}

const TABLE = 'herald-stats-bench';

export async function benchStats(opts: { burst?: number; isolated?: number } = {}): Promise<StatsResult> {
  const burst = opts.burst ?? 1000;
  const isolated = opts.isolated ?? 20;
  const { startDynamo, ensureTable, dynamoCredentials, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const dir = mkdtempSync(join(tmpdir(), 'herald-stats-'));
  const credentials = dynamoCredentials(dir);
  const dynamo = await startDynamo(dir, credentials);
  try {
    const streamArn = await ensureTable(dynamo.endpoint, TABLE, credentials);
    applyBenchEnv();
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      TABLE_NAME: TABLE,
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    // The relay's queues answer as SQS does; nothing else of the relay is measured here.
    const { SQSClient, SendMessageBatchCommand } = await import('@aws-sdk/client-sqs');
    const { mockClient } = await import('aws-sdk-client-mock');
    mockClient(SQSClient)
      .on(SendMessageBatchCommand)
      .callsFake((input: { Entries?: Array<{ Id?: string }> }) => ({
        Successful: (input.Entries ?? []).map((e) => ({ Id: e.Id, MessageId: `m-${e.Id}` })),
        Failed: [],
      }));

    const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb');
    const { DynamoDBDocumentClient, GetCommand, PutCommand } = await import('@aws-sdk/lib-dynamodb');
    const { DynamoDBStreamsClient } = await import('@aws-sdk/client-dynamodb-streams');
    const { StreamPoller } = await import('../../bin/local/stream-poller.ts');
    const { workers } = await import('#lib/operations');
    const { dynamo: relayClient } = await import('#shared/clients');
    const { keys } = await import('#adapters/keys');
    const { handler } = await import('#handlers/stream-relay');
    const { claimDelivery, deliverySucceeded, withDelivery } = await import('#core/delivery');
    const { startPublishing } = await import('#core/posts');
    const { fixedId, lambdaContext, post, postItem, variant } = await import('../unit/support/fixtures.ts');
    type PostRecord = import('#core/posts').PostRecord;

    const consumed = countConsumedCapacity(relayClient);
    // DynamoDB Local reports a TransactWriteItems of 1, 2, 3 or 10 items of under 1 KB as 2 units
    // alike; AWS bills 2 per item. So transactions are billed here by AWS's rule (every item the
    // relay writes is under 1 KB: checked below), single-item writes as DynamoDB Local reports them
    // (1 per KB of the larger image, as AWS bills them).
    let writeRequests = 0;
    let transactionUnits = 0;
    let transactionReported = 0;
    relayClient.middlewareStack.add(
      ((next: (a: { input: unknown }) => Promise<{ output: unknown }>, context: { commandName?: string }) =>
        async (a: { input: unknown }) => {
          const name = String(context.commandName);
          if (/^(Put|Update|Delete|TransactWrite|BatchWrite)/.test(name)) writeRequests++;
          const out = await next(a);
          if (name === 'TransactWriteItemsCommand') {
            const items = (a.input as { TransactItems?: unknown[] }).TransactItems ?? [];
            transactionUnits += 2 * items.length;
            const cc = (out.output as { ConsumedCapacity?: Array<{ CapacityUnits?: number }> })
              .ConsumedCapacity;
            transactionReported += (cc ?? []).reduce((n, c) => n + (c.CapacityUnits ?? 0), 0);
          }
          return out;
        }) as never,
      { step: 'initialize', name: 'writeRequests', priority: 'low' } as never,
    );
    // The service's own writes of the posts: another client, not counted.
    const local = { endpoint: dynamo.endpoint, region: LOCAL_REGION, credentials };
    const writer = DynamoDBDocumentClient.from(new DynamoDBClient(local), {
      marshallOptions: { removeUndefinedValues: true },
    });
    const streams = new DynamoDBStreamsClient(local);
    const relay = workers.find((w) => w.id === 'streamRelay');
    if (relay?.trigger.kind !== 'stream') throw new Error('stats bench: no stream relay in the manifest');
    const { kind: _, ...mapping } = relay.trigger;
    const checkpointFile = join(dir, 'stream-checkpoints.json');
    let batches = 0;
    /** The stream read to its end (one poller at a time, each resuming from the same checkpoints). */
    const drain = async (windowSeconds: number | undefined) => {
      const poller = new StreamPoller({
        client: streams,
        streamArn,
        handler: async (event) => {
          if (event.Records.length) batches++;
          const res = await handler(event as never);
          // Every batch must go through at once: a retried one would be measured twice.
          if (res.batchItemFailures.length) throw new Error('stats bench: the relay reported a failure');
          return res as never;
        },
        context: () => lambdaContext('streamRelay'),
        checkpointFile,
        source: { ...mapping, windowSeconds },
        onError: (err) => {
          throw err;
        },
      });
      // A read can come back empty before the end of the shard: read until two passes find nothing.
      for (let idle = 0; idle < 2; ) idle = (await poller.pollOnce()) > 0 ? 0 : idle + 1;
    };

    const put = (p: PostRecord) => writer.send(new PutCommand({ TableName: TABLE, Item: postItem(p) }));
    const CHANNEL = fixedId('channel', 1);
    /** A one-channel post's writes from scheduled to published, in order. */
    const lifeOf = (orgId: string, n: number): PostRecord[] => {
      const now = new Date();
      const scheduled: PostRecord = {
        ...post({ id: fixedId('post', n), org_id: orgId, variants: [variant(CHANNEL, n)] }),
        status: 'scheduled',
        scheduled_at: now.toISOString(),
      };
      const publishing = { ...startPublishing(scheduled, now), version: 2 };
      const claim = claimDelivery(publishing, CHANNEL, publishing.round, `claim-${n}`, now);
      if (claim.kind !== 'claimed') throw new Error('stats bench: not claimed');
      const claimed = { ...claim.post, version: 3 };
      const d = claimed.deliveries[CHANNEL];
      if (!d) throw new Error('stats bench: no delivery');
      const sent = deliverySucceeded(d, { externalId: `ext-${n}`, url: null }, now);
      return [scheduled, publishing, claimed, { ...withDelivery(claimed, sent, now), version: 4 }];
    };

    const rows: StatsRow[] = [];
    let orgs = 0;
    const measure = async (
      scheme: StatsRow['scheme'],
      scenario: string,
      posts: number,
      together: boolean,
    ) => {
      const windowSeconds = scheme === 'ordered' ? mapping.windowSeconds : undefined;
      await drain(windowSeconds); // anything earlier runs left unread is not this run's
      const orgId = fixedId('org', 100 + ++orgs);
      const lives = Array.from({ length: posts }, (_, i) => lifeOf(orgId, i + 1));
      consumed.write = 0;
      consumed.read = 0;
      writeRequests = 0;
      transactionUnits = 0;
      transactionReported = 0;
      batches = 0;
      if (together) {
        // Every post's step written, then the stream read: the relay sees them in batches of 100.
        for (let step = 0; step < 4; step++) {
          for (let i = 0; i < lives.length; i += 25)
            await Promise.all(lives.slice(i, i + 25).map((life) => put(life[step] as PostRecord)));
          await drain(windowSeconds);
        }
      } else {
        // Each write read on its own before the next: a batch per change.
        for (const life of lives) {
          for (const state of life) {
            await put(state);
            await drain(windowSeconds);
          }
        }
      }
      const stats = await writer.send(new GetCommand({ TableName: TABLE, Key: keys.orgStats(orgId) }));
      if (stats.Item?.deliveries_published !== posts)
        throw new Error(
          `stats bench: ${scheme} counted ${String(stats.Item?.deliveries_published)} of ${posts}`,
        );
      for (const sk of ['STATS', `STATS#DAY#${today()}`]) {
        const got = await writer.send(new GetCommand({ TableName: TABLE, Key: { pk: `ORG#${orgId}`, sk } }));
        if (itemSize(sizable(got.Item ?? {})) > 1024) throw new Error(`stats bench: ${sk} is over 1 KB`);
      }
      rows.push({
        scheme,
        scenario,
        posts,
        batches,
        writeRequests,
        writeUnits: consumed.write - transactionReported + transactionUnits,
        reportedUnits: consumed.write,
      });
      return stats.Item;
    };

    let statsItem: Record<string, unknown> = {};
    for (const scheme of ['marker', 'ordered'] as const) {
      await measure(scheme, 'one post at a time (a batch per change)', isolated, false);
      statsItem = (await measure(scheme, `${burst} posts due together (batches of 100)`, burst, true)) ?? {};
    }
    const bytes = itemSize(sizable(statsItem));
    return {
      rows,
      statsItem: { bytes, marks: Object.keys(statsItem).filter((k) => k.startsWith('hw_')).length },
    };
  } finally {
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** String sets sized as their strings (near enough: DynamoDB adds nothing per element). */
const sizable = (item: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(item).map(([k, v]) => [k, v instanceof Set ? [...v].join('') : v]));

const perPost = (r: StatsRow) => r.writeUnits / r.posts;

export function statsSection(r: StatsResult): string {
  const label = { marker: 'marker per change (before)', ordered: 'per batch, shard marks (after)' };
  const rows = r.rows.map((x) => [
    x.scenario,
    label[x.scheme],
    String(x.posts),
    String(x.batches),
    String(x.writeRequests),
    String(x.writeUnits),
    String(x.reportedUnits),
    perPost(x).toFixed(2),
  ]);
  const find = (scheme: StatsRow['scheme'], burst: boolean) =>
    r.rows.find((x) => x.scheme === scheme && x.scenario.includes('together') === burst);
  const ratio = (burst: boolean) => {
    const before = find('marker', burst);
    const after = find('ordered', burst);
    return before && after ? (perPost(before) / perPost(after)).toFixed(0) : '–';
  };
  return [
    `Measured ${today()} on ${machine()} by \`BENCH_ONLY=stats npm run bench\` (test/bench/stats.ts).`,
    'The analytics counters kept by the stream relay for one-channel scheduled posts of one',
    'organization: each post written scheduled → publishing → claimed → published into DynamoDB',
    'Local, the table stream read by the local stack’s poller with the manifest’s mapping and handed',
    'to the real relay; write units are the relay’s DynamoDB calls (nothing else of the relay writes the',
    'table), as AWS bills them: ReturnConsumedCapacity TOTAL for single-item writes, and for a',
    'transaction 2 per item (every item here is under 1 KB) — DynamoDB Local reports any transaction',
    'of small items as 2 units, whatever their number. Before: the same relay fed batches without a shard',
    '(no tumbling window), which counts change by change as main did: a marker Put + the STATS',
    'update (+ the day update) in one transaction, every item billed twice. After: the stack’s',
    'windowed mapping, one UpdateItem per organization, counter item and batch.',
    '',
    table(
      [
        'Scenario',
        'Counting',
        'posts',
        'batches',
        'write requests',
        'WRU',
        'DynamoDB Local says',
        'WRU per post',
      ],
      ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r'],
      rows,
    ),
    '',
    `Per post: ${ratio(false)}× fewer write units one post at a time, ${ratio(true)}× fewer in a burst.`,
    `The org's STATS item after the runs: ${r.statsItem.bytes} bytes with ${r.statsItem.marks} shard mark(s)`,
    '(a mark is ≈ 45 bytes; marks of shards quiet for 25 h are removed).',
  ].join('\n');
}
