import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import autocannon from 'autocannon';
import { LOCAL_CREDENTIALS, LOCAL_REGION } from '../../bin/local/services.ts';
import { readStackInfo } from '../../bin/local/stack-file.ts';
import { allFakes } from '../fakes/index.ts';
import { startLocalStack } from '../support/local-stack.ts';
import { childServer, cpuBetween, cpuTimes, machine, table, today } from './support.ts';
import { benchWorkspace } from './workspace.ts';

// Local stack throughput (issue 8): getPost, listPosts and createPost at 16 connections with
// autocannon, next to a bare node:http server answering the same JSON in the same run — each in a
// process of its own, apart from autocannon's. Also the webhook fan-out: events per second
// delivered to loopback receivers.

const CONNECTIONS = 16;

export interface Load {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  /** The whole machine's busy CPU per request (ms) and the hypervisor's steal, while it ran. */
  cpuMsPerRequest?: number;
  stealPct?: number;
}

export interface ThroughputResult {
  seconds: number;
  bare: Load;
  operations: Load[];
  webhooks: { events: number; endpoints: number; seconds: number; deliveriesPerSecond: number };
}

async function load(
  name: string,
  url: string,
  opts: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string },
  seconds: number,
): Promise<Load> {
  const t0 = cpuTimes();
  const res = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
  });
  const cpu = cpuBetween(t0, cpuTimes());
  return {
    name,
    requestsPerSecond: Math.round(res.requests.average),
    p50Ms: res.latency.p50,
    p99Ms: res.latency.p99,
    non2xx: res.non2xx,
    ...(cpu && res.requests.total
      ? { cpuMsPerRequest: (1000 * cpu.busySeconds) / res.requests.total, stealPct: cpu.stealPct }
      : {}),
  };
}

/** A bare node:http server answering `body` to every request, in a child process like the stack. */
function bareServer(body: string): Promise<{ url: string; close(): Promise<void> }> {
  return childServer({
    setup: `const body = ${JSON.stringify(body)};`,
    handler: `(_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      res.end(body);
    }`,
  });
}

export async function benchThroughput(seconds = 10): Promise<ThroughputResult> {
  // The CLI checks a channel's credentials with its platform: the Mastodon contract fake answers.
  const fakes = await allFakes().start();
  const stack = await startLocalStack({
    ...fakes.env(),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
  });
  const cleanup: Array<() => Promise<void> | void> = [() => stack.stop(), () => fakes.stop()];
  try {
    const { org, key, channel } = await benchWorkspace(stack.dataDir, {
      name: 'Load',
      scopes: 'posts:read,posts:write,webhooks:write',
      mastodonInstance: fakes.url('mastodon'),
      // The fakes listen on loopback, which a user-named Mastodon server may not be outside tests.
      env: { HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' },
    });
    const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const draft = JSON.stringify({
      variants: [{ channel_id: channel, body: 'Load test draft' }],
      draft: true,
    });
    const first = await fetch(`${stack.baseUrl}/v1/posts`, { method: 'POST', headers: auth, body: draft });
    const post = (await first.json()) as { id: string };
    const postJson = JSON.stringify(
      await (await fetch(`${stack.baseUrl}/v1/posts/${post.id}`, { headers: auth })).json(),
    );

    const bare = await bareServer(postJson);
    cleanup.push(() => bare.close());
    const result: ThroughputResult = {
      seconds,
      bare: await load('bare node:http (same JSON as getPost)', `${bare.url}/`, {}, seconds),
      operations: [],
      webhooks: { events: 0, endpoints: 0, seconds: 0, deliveriesPerSecond: 0 },
    };
    result.operations.push(
      await load('getPost', `${stack.baseUrl}/v1/posts/${post.id}`, { headers: auth }, seconds),
    );
    result.operations.push(
      await load('listPosts', `${stack.baseUrl}/v1/posts?limit=25`, { headers: auth }, seconds),
    );
    result.operations.push(
      await load(
        'createPost (draft)',
        `${stack.baseUrl}/v1/posts`,
        { method: 'POST', headers: auth, body: draft },
        seconds,
      ),
    );

    // Webhook fan-out: E channel.connected events to R loopback receivers, timed to the last delivery.
    const endpoints = 4;
    const events = 50;
    let received = 0;
    let lastAt = 0;
    for (let i = 0; i < endpoints; i++) {
      const server = createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          received += 1;
          lastAt = performance.now();
          res.writeHead(204);
          res.end();
        });
      });
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      cleanup.push(() => new Promise<void>((ok) => server.close(() => ok())));
      const res = await fetch(`${stack.baseUrl}/v1/webhook-endpoints`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
          event_types: ['channel.connected'],
        }),
      });
      if (res.status !== 201) throw new Error(`webhook endpoint: ${res.status} ${await res.text()}`);
    }
    // The events go straight onto the events queue (as the stream relay puts them), so the
    // measurement is the fan-out path itself, not CLI process start-up.
    const info = readStackInfo(stack.dataDir);
    if (!info) throw new Error('the local stack wrote no stack.json');
    const sqs = new SQSClient({
      endpoint: info.sqsEndpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
    });
    const started = performance.now();
    for (let i = 0; i < events; i += 10) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: info.queues.events?.url,
          Entries: Array.from({ length: Math.min(10, events - i) }, (_, j) => ({
            Id: String(j),
            MessageBody: JSON.stringify({
              id: `msg_01JD${String(i + j).padStart(22, '0')}`,
              type: 'channel.connected',
              timestamp: new Date().toISOString(),
              org_id: org,
              data: { channel: { id: channel, platform: 'mastodon', handle: `fan-${i + j}` } },
            }),
          })),
        }),
      );
    }
    const deadline = Date.now() + 120_000;
    while (received < events * endpoints && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    if (received < events * endpoints)
      throw new Error(`only ${received} of ${events * endpoints} deliveries arrived`);
    const took = (lastAt - started) / 1000;
    sqs.destroy();
    result.webhooks = {
      events,
      endpoints,
      seconds: Number(took.toFixed(2)),
      deliveriesPerSecond: Math.round((events * endpoints) / took),
    };
    return result;
  } finally {
    for (const fn of cleanup.reverse()) await fn();
  }
}

export function throughputSection(r: ThroughputResult): string {
  const row = (l: Load, base?: Load) => [
    l.name,
    String(l.requestsPerSecond),
    String(l.p50Ms),
    String(l.p99Ms),
    String(l.non2xx),
    base ? `${((l.requestsPerSecond / base.requestsPerSecond) * 100).toFixed(1)} %` : '—',
    l.cpuMsPerRequest === undefined ? '–' : l.cpuMsPerRequest.toFixed(2),
    l.stealPct === undefined ? '–' : `${l.stealPct.toFixed(0)} %`,
  ];
  return `Measured ${today()} on ${machine()} by \`npm run bench\`
(test/bench/throughput.ts): autocannon, ${CONNECTIONS} connections, ${r.seconds} s per target, against the local stack
(front door → the same handlers → DynamoDB Local), next to a bare node:http server in the same run;
the stack and the bare server each run in a process of their own, autocannon in the bench's.
CPU ms per request: the whole machine's busy CPU while the target ran (the stack, DynamoDB Local's
JVM and autocannon) ÷ requests answered; steal: the share of time the hypervisor gave other guests.
On a shared VM req/s moves with steal; CPU per request is what compares runs.

${table(
  ['Target', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'of bare', 'CPU ms per request', 'steal'],
  ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
  [row(r.bare), ...r.operations.map((o) => row(o, r.bare))],
)}

Webhook fan-out: ${r.webhooks.events} \`channel.connected\` events × ${r.webhooks.endpoints} loopback receivers =
${r.webhooks.events * r.webhooks.endpoints} signed deliveries in ${r.webhooks.seconds} s from putting the events on the
events queue to the last delivery: **${r.webhooks.deliveriesPerSecond} deliveries/s** (fan-out → webhooks queue → delivery worker:
claim, KMS-stand-in decrypt (cached), sign, POST, record — every hop through the local stand-ins).`;
}
