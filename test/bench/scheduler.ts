import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { LOCAL_REGION } from '../../bin/local/services.ts';
import { readStackInfo } from '../../bin/local/stack-file.ts';
import { allFakes } from '../fakes/index.ts';
import { startLocalStack } from '../support/local-stack.ts';
import { machine, table, today } from './support.ts';
import { benchWorkspace } from './workspace.ts';

// Scheduler lateness and delivery throughput on the local stack: N posts scheduled for the same
// second to the Mastodon contract fake. Lateness = the delivery's start (its first claim by a
// worker) minus scheduled_at; throughput = deliveries reaching the fake per second.

export interface SchedulerResult {
  posts: number;
  createSeconds: number;
  latenessMs: { p50: number; p90: number; p99: number; max: number };
  deliveriesPerSecond: number;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

export async function benchScheduler(n = 1000, leadSeconds = 45): Promise<SchedulerResult> {
  const fakes = await allFakes().start();
  const stack = await startLocalStack({
    ...fakes.env(),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  });
  try {
    const { org, key, channel } = await benchWorkspace(stack.dataDir, {
      name: 'Bench',
      scopes: 'posts:read,posts:write',
      mastodonInstance: fakes.url('mastodon'),
      // The fakes listen on loopback, which a user-named Mastodon server may not be outside tests.
      env: { HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' },
    });

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

    const deadline = Date.parse(at) + 180_000;
    let received: Array<{ at: number }> = [];
    while (Date.now() < deadline) {
      received = fakes
        .requests('mastodon')
        .filter((r) => r.method === 'POST' && r.path === '/api/v1/statuses');
      if (received.length >= n) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    if (received.length < n) throw new Error(`only ${received.length} of ${n} posts reached the fake`);

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

${table(
  ['Posts due in the same second', 'p50', 'p90', 'p99', 'max', 'deliveries/s reaching the fake'],
  ['r', 'r', 'r', 'r', 'r', 'r'],
  results.map((s) => [
    String(s.posts),
    String(s.latenessMs.p50),
    String(s.latenessMs.p90),
    String(s.latenessMs.p99),
    String(s.latenessMs.max),
    s.deliveriesPerSecond.toFixed(0),
  ]),
)}`;
}
