import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LOCAL_REGION } from '../../bin/local/services.ts';
import { readStackInfo } from '../../bin/local/stack-file.ts';
import { allFakes } from '../fakes/index.ts';
import { startLocalStack } from '../support/local-stack.ts';
import { cpuBetween, cpuTimes, itemSize, machine, table, today } from './support.ts';
import { benchWorkspace } from './workspace.ts';

// Scheduler lateness and delivery throughput on the local stack: N posts scheduled for the same
// second to the Mastodon contract fake. Lateness = the delivery's start (its first claim by a
// worker) minus scheduled_at; throughput = deliveries reaching the fake per second. Write units:
// the stack's own DynamoDB capacity (HERALD_COUNT_CAPACITY, bin/local/capacity.ts) from the moment
// every post is created until the last delivery's stream work has settled, less the idle rate
// (the sweeper's cursor) measured before, divided by N — everything from "due" to "published".

export interface SchedulerResult {
  posts: number;
  createSeconds: number;
  latenessMs: { p50: number; p90: number; p99: number; max: number };
  deliveriesPerSecond: number;
  /** The whole machine's busy CPU per delivery (ms) and the hypervisor's steal, during the burst. */
  cpuMsPerDelivery?: number;
  stealPct?: number;
  /** Write units per post from due to published: total, the table's, and per index. */
  writeUnits: { total: number; table: number; indexes: Record<string, number> };
}

interface Capacity {
  writes?: Record<string, number>;
  read: number;
  write: number;
  writeTable: number;
  writeIndexes: Record<string, number>;
}

const readCapacity = (file: string): Capacity =>
  existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as Capacity)
    : { read: 0, write: 0, writeTable: 0, writeIndexes: {} };

/**
 * The capacity once it stopped moving for `quietMs` beyond the idle rate (the sweeper's cursor):
 * the stream relay and the counters have caught up.
 */
async function settledCapacity(file: string, quietMs: number, idlePerSecond = 0): Promise<Capacity> {
  let last = readCapacity(file);
  for (;;) {
    await new Promise((r) => setTimeout(r, quietMs));
    const now = readCapacity(file);
    if (now.write - last.write <= idlePerSecond * (quietMs / 1000) + 1) return now;
    last = now;
  }
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

export async function benchScheduler(n = 1000, leadSeconds = 45): Promise<SchedulerResult> {
  const fakes = await allFakes().start();
  const capacityFile = join(mkdtempSync(join(tmpdir(), 'herald-capacity-')), 'capacity.json');
  const stack = await startLocalStack(
    {
      HERALD_COUNT_CAPACITY: capacityFile,
      ...fakes.env(),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    },
    process.env.BENCH_VERBOSE === '1',
  );
  try {
    const { org, key, channel } = await benchWorkspace(stack.dataDir, {
      name: 'Bench',
      scopes: 'posts:read,posts:write',
      mastodonInstance: fakes.url('mastodon'),
      // The fakes listen on loopback, which a user-named Mastodon server may not be outside tests.
      env: { HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' },
    });

    // The idle write rate (the sweeper's cursor), subtracted below.
    const idle0 = await settledCapacity(capacityFile, 1500, 2);
    const idleT0 = Date.now();
    await new Promise((r) => setTimeout(r, 5000));
    const idleRate = (readCapacity(capacityFile).write - idle0.write) / ((Date.now() - idleT0) / 1000);

    const at = new Date(Math.ceil(Date.now() / 1000) * 1000 + leadSeconds * 1000).toISOString();
    const t0 = Date.now();
    const ids: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < n) {
          const i = next++;
          const res = await fetch(`${stack.baseUrl}/v1/posts`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({
              variants: [{ channel_id: channel, body: `bench ${i}` }],
              scheduled_at: at,
            }),
          });
          if (res.status !== 201) throw new Error(`createPost answered ${res.status}: ${await res.text()}`);
          ids.push(((await res.json()) as { id: string }).id);
        }
      }),
    );
    const createSeconds = (Date.now() - t0) / 1000;
    if (Date.now() > Date.parse(at) - 5000)
      throw new Error(`creating ${n} posts took ${createSeconds} s; raise the lead time`);

    const before = await settledCapacity(capacityFile, 1500, idleRate);
    const t1 = Date.now();
    const cpu0 = cpuTimes();

    const deadline = Date.parse(at) + 180_000 + n * 100;
    let received: Array<{ at: number }> = [];
    while (Date.now() < deadline) {
      received = fakes
        .requests('mastodon')
        .filter((r) => r.method === 'POST' && r.path === '/api/v1/statuses');
      if (received.length >= n) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (received.length < n) throw new Error(`only ${received.length} of ${n} posts reached the fake`);
    const cpu = cpuBetween(cpu0, cpuTimes());

    const after = await settledCapacity(capacityFile, 3000, idleRate);
    const idle = idleRate * ((Date.now() - t1) / 1000);
    const perPost = (x: number) => Math.round((x / n) * 100) / 100;
    const indexes: Record<string, number> = {};
    for (const [name, units] of Object.entries(after.writeIndexes))
      indexes[name] = perPost(units - (before.writeIndexes[name] ?? 0));
    const writeUnits = {
      total: perPost(after.write - before.write - idle),
      table: perPost(after.writeTable - before.writeTable - idle),
      indexes,
    };

    // Which items the writes went to, per post (a diagnostic for BENCHMARKS.md's prose).
    const counts = Object.fromEntries(
      Object.entries(after.writes ?? {}).map(([k, v]) => [k, perPost(v - (before.writes?.[k] ?? 0))]),
    );
    console.error(`scheduler ${n}: write units per post by item kind ${JSON.stringify(counts)}`);

    const info = readStackInfo(stack.dataDir);
    if (!info) throw new Error('the local stack wrote no stack.json');
    const ddb = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: info.dynamodbEndpoint,
        region: LOCAL_REGION,
        credentials: info.dynamodbCredentials,
      }),
    );
    const lateness: number[] = [];
    for (let i = 0; i < ids.length; i += 100) {
      const keys = ids.slice(i, i + 100).map((id) => ({ pk: `ORG#${org}`, sk: `POST#${id}` }));
      const res = await ddb.send(new BatchGetCommand({ RequestItems: { [info.tableName]: { Keys: keys } } }));
      const sample = res.Responses?.[info.tableName]?.[0];
      if (i === 0 && sample) {
        // A diagnostic for BENCHMARKS.md: what one post item weighs once published, by attribute.
        const parts = Object.entries(sample)
          .map(([k, v]) => [k, itemSize({ [k]: v })] as const)
          .sort((a, b) => b[1] - a[1]);
        console.error(
          `scheduler ${n}: a published post item is ${itemSize(sample)} bytes: ${JSON.stringify(parts)}`,
        );
      }
      for (const item of res.Responses?.[info.tableName] ?? []) {
        const started = (item.deliveries as Record<string, { attempt_started_at?: string }>)[channel]
          ?.attempt_started_at;
        if (started) lateness.push(Date.parse(started) - Date.parse(at));
      }
    }
    lateness.sort((a, b) => a - b);
    const times = received.map((r) => r.at).sort((a, b) => a - b);
    const span = ((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000;
    return {
      posts: n,
      createSeconds,
      latenessMs: {
        p50: pct(lateness, 50),
        p90: pct(lateness, 90),
        p99: pct(lateness, 99),
        max: lateness.at(-1) ?? NaN,
      },
      deliveriesPerSecond: span > 0 ? n / span : n,
      ...(cpu ? { cpuMsPerDelivery: (1000 * cpu.busySeconds) / n, stealPct: cpu.stealPct } : {}),
      writeUnits,
    };
  } finally {
    await stack.stop();
    await fakes.stop();
  }
}

export function schedulerSection(results: SchedulerResult[]): string {
  return `Measured ${today()} on ${machine()} by \`npm run bench\`
(test/bench/scheduler.ts): N posts scheduled for the same second to the Mastodon contract fake on
the local stack. Lateness = a delivery's start (its first claim by a worker) − scheduled_at, in ms.
Write units per post: every DynamoDB write the stack made from the posts' creation to the last
stream record handled (dispatch, claim, checkpoints, outcome, counters, the sweeper's watchdog),
less the idle rate, ÷ N; "table" is the base table's share, the rest are index writes.
CPU ms per delivery: the whole machine's busy CPU from the posts' due time to the last delivery
(the stack, DynamoDB Local's JVM, the fakes and this bench) ÷ N; steal: the share of that time the
hypervisor gave other guests. On a shared VM lateness moves with steal; CPU per delivery compares runs.

${table(
  [
    'Posts due in the same second',
    'p50',
    'p90',
    'p99',
    'max',
    'deliveries/s reaching the fake',
    'CPU ms per delivery',
    'steal',
    'WRU per post',
    'of which table',
    'gsi1',
    'gsi2',
  ],
  ['r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  results.map((s) => [
    String(s.posts),
    String(s.latenessMs.p50),
    String(s.latenessMs.p90),
    String(s.latenessMs.p99),
    String(s.latenessMs.max),
    s.deliveriesPerSecond.toFixed(0),
    s.cpuMsPerDelivery === undefined ? '–' : s.cpuMsPerDelivery.toFixed(1),
    s.stealPct === undefined ? '–' : `${s.stealPct.toFixed(0)} %`,
    String(s.writeUnits.total),
    String(s.writeUnits.table),
    String(s.writeUnits.indexes.gsi1 ?? 0),
    String(s.writeUnits.indexes.gsi2 ?? 0),
  ]),
)}`;
}
