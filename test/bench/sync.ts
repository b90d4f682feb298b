import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeGrant } from '../fakes/oauth.ts';
import { countConsumedCapacity, machine, median, ROOT, table, today } from './support.ts';

// The channel sync at scale (issue 24): 10,000 X channels whose tokens all need renewing at once,
// expiring one after the other over a few minutes (compressed time: X's tokens live 2 hours and are
// renewed 30 minutes ahead; here every channel is already in its renewal window). The real finder
// and worker handlers run in this process as the local stack runs them — the finder on the local
// schedule (every 2 s), the worker behind a poller with the manifest's batch size and concurrency —
// against DynamoDB Local, the durable SQS stand-in and the X contract fake, which answers each
// call after a fixed delay standing in for X's latency. KMS is the unit tests' in-process stand-in
// (its calls counted). "Before" is the single scheduled loop this replaced (8 channels at a time
// in one function, 240 s): the same per-channel use case, the same due list, 8 at a time until
// 240 s have passed.

export type SyncMode = 'fanout' | 'single-loop';

export interface SyncRun {
  mode: SyncMode;
  channels: number;
  latencyMs: number;
  /** Expiries, seconds after the start: the first and the last. */
  window: { firstS: number; lastS: number };
  seedSeconds: number;
  /** single-loop: the run's length. */
  runSeconds: number | null;
  /** From the start to the last renewal (fan-out), or to the end of the run (single loop). */
  seconds: number;
  renewed: number;
  /** Renewals X answered for a channel already renewed (a refresh token spent twice). */
  twice: number;
  refreshFailures: number;
  /** Channels renewed after their token expired, or not renewed by the end while it expired. */
  pastExpiry: number;
  /** Not renewed, and expired before the next scheduled run (5 minutes after the start). */
  expireBeforeNextRun: number;
  /** Seconds between each renewal and its token's expiry. */
  marginS: { min: number; p50: number };
  /** At the end: channels live, with no error and their next look in the future. */
  healthy: number;
  units: { read: number; write: number };
  kms: number;
  sqs: { send: number; receive: number; emptyReceive: number; delete: number };
  lambda: { finder: number; worker: number; workerSeconds: number; finderSeconds: number };
}

const N = Number(process.env.BENCH_SYNC_CHANNELS ?? 10_000);
/** X's answer time here (token and profile calls alike). */
const LATENCY_MS = Number(process.env.BENCH_SYNC_LATENCY_MS ?? 150);
/** The first token expires this long after the start; the last WINDOW_S later. */
const FIRST_S = Number(process.env.BENCH_SYNC_FIRST_S ?? 60);
const WINDOW_S = Number(process.env.BENCH_SYNC_WINDOW_S ?? 300);
/** The old function's timeout. */
const RUN_S = Number(process.env.BENCH_SYNC_RUN_SECONDS ?? 240);
/** Seeding must be done by then (the expiries are fixed before it starts). */
const SEED_BUDGET_S = Number(process.env.BENCH_SYNC_SEED_BUDGET_S ?? 240);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchSync(mode: SyncMode): Promise<SyncRun> {
  const { startDynamo, ensureTable, dynamoCredentials, startQueues, awaitLocalCommits, LOCAL_REGION } =
    await import('../../bin/local/services.ts');
  const { allFakes } = await import('../fakes/index.ts');
  const dir = mkdtempSync(join(tmpdir(), 'herald-sync-'));
  const credentials = dynamoCredentials(dir);
  const dynamo = await startDynamo(join(dir, 'dynamodb'), credentials);
  const queues = await startQueues(join(dir, 'queues.journal'));
  const fakes = await allFakes().start();
  const stops: Array<() => Promise<void>> = [];
  try {
    await ensureTable(dynamo.endpoint, 'herald-sync', credentials);
    Object.assign(process.env, fakes.env(), {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: queues.endpoint,
      CHANNEL_SYNC_QUEUE_URL: queues.queues.channelSync.url,
      TABLE_NAME: 'herald-sync',
      HERALD_CURSOR_SECRET: 'sync-bench',
      CONNECTION_SECRETS_KEY_ID: 'alias/herald-sync',
      HERALD_PUBLIC_URL: 'https://api.example.com',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    delete process.env.AWS_LAMBDA_FUNCTION_NAME;
    const { KMSClient } = await import('@aws-sdk/client-kms');
    const { SQSClient } = await import('@aws-sdk/client-sqs');
    const { mockClient } = await import('aws-sdk-client-mock');
    const { serveDataKeys } = await import('../unit/support/kms.ts');
    const kms = mockClient(KMSClient);
    serveDataKeys(kms);
    const { dynamo: client } = await import('#shared/clients');
    awaitLocalCommits(client);

    // ---- X, with its latency, and every renewal it answers recorded ----
    const { FAKE_APPS } = await import('../fakes/oauth.ts');
    const x = fakes.fake('x') as import('../fakes/x.ts').FakeX;
    const refreshOf = new Map<string, number>();
    const renewedAt: number[] = new Array(N).fill(Number.NaN);
    let twice = 0;
    let refreshFailures = 0;
    const handle = x.handle.bind(x);
    x.handle = async (req, ctx) => {
      const api = req.path.startsWith('/2/');
      if (api) await sleep(LATENCY_MS);
      const res = await handle(req, ctx);
      if (req.path === '/2/oauth2/token') {
        const form = new URLSearchParams(req.body.toString('utf8'));
        const i = refreshOf.get(form.get('refresh_token') ?? '');
        if (form.get('grant_type') === 'refresh_token' && i !== undefined) {
          if (res?.status !== 200) refreshFailures++;
          else if (Number.isNaN(renewedAt[i])) renewedAt[i] = Date.now();
          else twice++;
        }
      }
      return res;
    };

    // ---- the organization and 10,000 X channels, all in their renewal window ----
    const admin = await import('#usecases/cli/admin');
    const created = await admin.createOrg({
      name: 'Sync',
      plan: 'agency',
      ownerEmail: 's@example.com',
      consoleUrl: 'http://localhost',
    });
    const orgId = created.org.id;
    await admin.setPlatformApp({
      platform: 'x',
      clientId: FAKE_APPS.x.clientId,
      clientSecret: FAKE_APPS.x.clientSecret,
    });
    const seedStart = Date.now();
    const start = seedStart + SEED_BUDGET_S * 1000;
    const expiresAt = Array.from({ length: N }, (_, i) => start + (FIRST_S + (WINDOW_S * i) / N) * 1000);
    await seed(orgId, expiresAt, x, refreshOf);
    const seedSeconds = (Date.now() - seedStart) / 1000;
    if (Date.now() > start) throw new Error(`seeding took ${seedSeconds} s, more than ${SEED_BUDGET_S} s`);
    await sleep(start - Date.now());

    // ---- what it costs from here ----
    const consumed = countConsumedCapacity(client);
    const kmsBefore = kms.calls().length;
    const sqsCalls = { send: 0, receive: 0, emptyReceive: 0, delete: 0 };
    const countSqs = (c: { middlewareStack: { add: (...a: never[]) => void } }) =>
      c.middlewareStack.add(
        ((
          next: (a: unknown) => Promise<{ output: { Messages?: unknown[] } }>,
          ctx: { commandName?: string },
        ) =>
          async (args: unknown) => {
            const out = await next(args);
            const name = String(ctx.commandName);
            if (name.startsWith('SendMessage')) sqsCalls.send++;
            else if (name === 'ReceiveMessageCommand')
              out.output.Messages?.length ? sqsCalls.receive++ : sqsCalls.emptyReceive++;
            else if (name.startsWith('DeleteMessage')) sqsCalls.delete++;
            return out;
          }) as never,
        { step: 'initialize', name: 'benchCountSqs' } as never,
      );
    countSqs((await import('#shared/sqs')).sqs as never);
    const lambda = { finder: 0, worker: 0, workerSeconds: 0, finderSeconds: 0 };

    let end: number;
    if (mode === 'fanout') {
      const { workers } = await import('#lib/operations');
      const { lambdaContext, loadHandler } = await import('../../bin/local/front-door.ts');
      const { QueuePoller } = await import('../../bin/local/queue-poller.ts');
      const { IntervalRunner } = await import('../../bin/local/interval-runner.ts');
      const finder = workers.find((w) => w.id === 'channelSync');
      const worker = workers.find((w) => w.id === 'channelSyncWorker');
      if (finder?.trigger.kind !== 'schedule' || worker?.trigger.kind !== 'queue')
        throw new Error('the manifest has no channel sync finder and worker');
      const find = await loadHandler<unknown, unknown>(ROOT, finder.entry);
      const work = await loadHandler<unknown, unknown>(ROOT, worker.entry);
      const poller = new SQSClient({
        endpoint: queues.endpoint,
        region: LOCAL_REGION,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        useQueueUrlAsEndpoint: false,
      });
      countSqs(poller as never);
      let inFlight = 0;
      let lastWork = Date.now();
      const timedCall = async (which: 'finder' | 'worker', fn: () => Promise<unknown>) => {
        const t = performance.now();
        inFlight++;
        try {
          return await fn();
        } finally {
          inFlight--;
          lastWork = Date.now();
          lambda[which]++;
          lambda[which === 'finder' ? 'finderSeconds' : 'workerSeconds'] += (performance.now() - t) / 1000;
        }
      };
      const runner = new IntervalRunner(
        () =>
          timedCall('finder', () =>
            find({}, lambdaContext(finder.id, crypto.randomUUID(), finder.timeoutSeconds * 1000)),
          ),
        finder.trigger.localEverySeconds * 1000,
        (err) => console.error('[finder]', err),
      );
      const consumer = new QueuePoller({
        client: poller,
        queueUrl: queues.queues.channelSync.url,
        queueArn: queues.queues.channelSync.arn,
        handler: ((event: unknown, context: unknown) =>
          timedCall('worker', () => work(event, context as never))) as never,
        context: () => lambdaContext(worker.id, crypto.randomUUID(), worker.timeoutSeconds * 1000),
        concurrency: worker.trigger.concurrency,
        batchSize: worker.trigger.batchSize,
        onError: (err) => console.error('[worker]', err),
      });
      runner.start();
      consumer.start();
      stops.push(async () => {
        await runner.stop();
        await consumer.stop();
      });
      // Until every channel is renewed and the workers have been idle for 5 s (the queue drained).
      const deadline = start + (FIRST_S + WINDOW_S) * 1000 + 600_000;
      while (renewedAt.some(Number.isNaN) || inFlight > 0 || Date.now() - lastWork < 5000) {
        if (Date.now() > deadline) break;
        await sleep(200);
      }
      await runner.stop();
      await consumer.stop();
      end = Math.max(...renewedAt.filter((t) => !Number.isNaN(t)));
    } else {
      // The loop as it was: the due list read once, then 8 at a time until the function's timeout.
      const { syncChannel } = await import('#usecases/channel-sync-worker');
      const { positionAt, syncEntriesAfter } = await import('#adapters/channel-sync-index');
      const t = performance.now();
      const now = new Date();
      const due: Array<{ orgId: string; id: string }> = [];
      for await (const page of syncEntriesAfter({
        after: null,
        until: positionAt(now),
        sinceMs: now.getTime() - 7 * 86_400_000,
        pageSize: 1000,
      }))
        due.push(...page);
      const stopAt = start + RUN_S * 1000;
      let next = 0;
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (next < due.length && Date.now() < stopAt) {
            const { orgId: o, id } = due[next++] as { orgId: string; id: string };
            await syncChannel(o, id, new Date());
          }
        }),
      );
      lambda.finder = 1;
      lambda.finderSeconds = (performance.now() - t) / 1000;
      end = Date.now();
    }

    const units = { read: consumed.read, write: consumed.write };
    const kmsCalls = kms.calls().length - kmsBefore;
    const done = renewedAt.filter((t) => !Number.isNaN(t)).length;
    const margins = renewedAt
      .map((t, i) => ((expiresAt[i] as number) - t) / 1000)
      .filter((m) => !Number.isNaN(m))
      .sort((a, b) => a - b);
    // Renewed too late, or not renewed while its token expired.
    const pastExpiry = renewedAt.filter((t, i) =>
      Number.isNaN(t) ? (expiresAt[i] as number) <= end : t >= (expiresAt[i] as number),
    ).length;
    const nextRun = start + 300_000;
    const expireBeforeNextRun = renewedAt.filter(
      (t, i) => Number.isNaN(t) && (expiresAt[i] as number) <= nextRun,
    ).length;
    const healthy = await countHealthy(orgId, Date.now());
    return {
      mode,
      channels: N,
      latencyMs: LATENCY_MS,
      window: { firstS: FIRST_S, lastS: FIRST_S + WINDOW_S },
      seedSeconds,
      runSeconds: mode === 'single-loop' ? RUN_S : null,
      seconds: (end - start) / 1000,
      renewed: done,
      twice,
      refreshFailures,
      pastExpiry,
      expireBeforeNextRun,
      marginS: { min: margins[0] ?? Number.NaN, p50: median(margins) },
      healthy,
      units,
      kms: kmsCalls,
      sqs: sqsCalls,
      lambda,
    };
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
    await fakes.stop();
    await queues.stop();
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * N X channels as a connection leaves them (a live channel, its sealed credentials at version 1,
 * its entry in the sync index 30 minutes before its token expires), each with a grant at the X
 * fake whose access token expires at `expiresAt[i]`.
 */
async function seed(
  orgId: string,
  expiresAt: number[],
  x: import('../fakes/x.ts').FakeX,
  refreshOf: Map<string, number>,
): Promise<void> {
  const { BatchWriteCommand } = await import('@aws-sdk/lib-dynamodb');
  const { ddb } = await import('#shared/clients');
  const { keys } = await import('#adapters/keys');
  const { TABLE_NAME } = await import('#adapters/table');
  const { sealCredentials } = await import('#adapters/channel-credentials');
  const { newId } = await import('#core/ids');
  const { FAKE_APPS } = await import('../fakes/oauth.ts');
  const scopes = ['tweet.read', 'tweet.write', 'users.read', 'media.write', 'offline.access'];
  const at = new Date().toISOString();
  const items: Array<Record<string, unknown>> = [];
  for (let i = 0; i < expiresAt.length; i++) {
    const user = x.oauth.user(`sync-${i}`);
    const grant: FakeGrant = {
      id: `bench-${i}`,
      clientId: FAKE_APPS.x.clientId,
      user,
      requested: scopes,
      scopes,
      declined: [],
      lifetime: null,
      redirectUri: 'https://api.example.com/oauth/callback/x',
      createdAt: Date.now(),
      revoked: null,
      extra: {},
      tokens: new Set(),
    };
    const expires = expiresAt[i] as number;
    const access = x.oauth.issue(grant, 'access', 7200);
    access.expiresAt = expires;
    const refresh = x.oauth.issue(grant, 'refresh', 180 * 86_400);
    refreshOf.set(refresh.token, i);
    const id = newId('channel');
    const nextSyncAt = new Date(expires - 30 * 60_000).toISOString();
    const credentials = {
      access_token: access.token,
      refresh_token: refresh.token,
      expires_at: new Date(expires).toISOString(),
      account_id: user.id,
    };
    items.push(
      {
        ...keys.channel(orgId, id),
        ...keys.channelSync(nextSyncAt, orgId, id),
        entity: 'channel',
        id,
        org_id: orgId,
        platform: 'x',
        handle: user.username,
        avatar_url: null,
        followers: 0,
        status: 'live',
        last_sync_at: at,
        last_error: null,
        created_at: at,
        account_id: user.id,
        connected_at: at,
        next_sync_at: nextSyncAt,
        sync_failures: 0,
        updated_at: at,
      },
      {
        ...keys.channelCredentials(orgId, id),
        entity: 'channel_credentials',
        sealed: await sealCredentials(orgId, id, credentials),
        version: 1,
      },
    );
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < items.length) {
        const chunk = items.slice(next, next + 25);
        next += 25;
        let pending = chunk.map((Item) => ({ PutRequest: { Item } }));
        while (pending.length) {
          const res = await ddb.send(new BatchWriteCommand({ RequestItems: { [TABLE_NAME]: pending } }));
          pending = (res.UnprocessedItems?.[TABLE_NAME] ?? []) as typeof pending;
        }
      }
    }),
  );
}

/** Channels of the org that are live, without an error, and next looked at after `now`. */
async function countHealthy(orgId: string, now: number): Promise<number> {
  const { listChannels } = await import('#adapters/channels');
  const channels = await listChannels(orgId);
  return channels.filter(
    (c) => c.status === 'live' && c.last_error === null && Date.parse(String(c.next_sync_at)) > now,
  ).length;
}

// ---- the section ----------------------------------------------------------------------------------

/** us-east-1 list prices: DynamoDB on-demand, SQS standard, Lambda arm64, KMS. */
const PRICES = {
  dynamoPerMillionRead: 0.125,
  dynamoPerMillionWrite: 0.625,
  sqsPerMillion: 0.4,
  lambdaPerMillion: 0.2,
  lambdaPerGbSecondArm: 0.0000133334,
  kmsPerTenThousand: 0.03,
};
/** The functions' memory (lib/herald-function.ts's default), GB. */
const GB = 1;

const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '–');
const perK = (n: number, channels: number) => (n * 1000) / Math.max(1, channels);

function dollarsPerK(r: SyncRun): number {
  const k = (n: number) => perK(n, r.renewed);
  const sqs = r.sqs.send + r.sqs.receive + r.sqs.delete;
  return (
    (k(r.units.read) * PRICES.dynamoPerMillionRead + k(r.units.write) * PRICES.dynamoPerMillionWrite) / 1e6 +
    (k(sqs) * PRICES.sqsPerMillion) / 1e6 +
    (k(r.lambda.finder + r.lambda.worker) * PRICES.lambdaPerMillion) / 1e6 +
    k(r.lambda.workerSeconds + r.lambda.finderSeconds) * GB * PRICES.lambdaPerGbSecondArm +
    (k(r.kms) * PRICES.kmsPerTenThousand) / 1e4
  );
}

export function syncSection(after: SyncRun, before: SyncRun | undefined): string {
  const rows = [after, ...(before ? [before] : [])].map((r) => {
    const k = (n: number) => f(perK(n, r.renewed));
    return [
      r.mode === 'fanout'
        ? 'finder + queue + workers (now)'
        : `one loop, 8 at a time, ${r.runSeconds} s (before)`,
      `${r.renewed.toLocaleString('en')} / ${r.channels.toLocaleString('en')}`,
      f(r.seconds),
      f(r.renewed / Math.max(r.seconds, 0.001)),
      `${r.pastExpiry.toLocaleString('en')}`,
      `${r.twice}`,
      r.mode === 'fanout' ? `${r.healthy.toLocaleString('en')}` : '–',
      k(r.units.read),
      k(r.units.write),
      k(r.kms),
      k(r.sqs.send + r.sqs.receive + r.sqs.delete),
      k(r.lambda.finder + r.lambda.worker),
      f(perK(r.lambda.workerSeconds + r.lambda.finderSeconds, r.renewed) * GB, 0),
      `$${dollarsPerK(r).toFixed(4)}`,
    ];
  });
  const a = after;
  return [
    `Run of ${today()} on ${machine()} (\`npm run bench\`, \`BENCH_ONLY=sync\`). ${a.channels.toLocaleString('en')} X`,
    `channels whose tokens all need renewing at once and expire one after the other between ${a.window.firstS} s and`,
    `${a.window.lastS} s after the start (compressed time: every channel already in its 30-minute renewal`,
    `window; seeded in ${f(a.seedSeconds, 0)} s). The real finder and worker handlers run in process as the local`,
    'stack runs them: the finder every 2 s, the worker behind a poller with the manifest’s batches of 10 and',
    '8 batches at once, against DynamoDB Local, the durable SQS stand-in and the X contract fake answering',
    `each call after ${a.latencyMs} ms (X’s latency, roughly). A renewal is X’s answer to the token`,
    'request; the margin is the time left on the old token then. "Before" is the scheduled loop this',
    'replaced (the same per-channel use case over the same due list, 8 at a time, stopped at the',
    'function’s 240 s timeout; the next run came 5 minutes after the previous one started).',
    '',
    table(
      [
        'Sync',
        'renewed',
        'seconds',
        'renewals/s',
        'past expiry',
        'renewed twice',
        'healthy after',
        'read units / 1k',
        'write units / 1k',
        'KMS / 1k',
        'SQS requests / 1k',
        'invocations / 1k',
        'GB-s / 1k',
        '$ / 1k channels',
      ],
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      rows,
    ),
    '',
    `Fan-out: every channel renewed ${f(a.marginS.min)} s or more before its token expired (median ${f(a.marginS.p50)} s);`,
    `${a.refreshFailures} renewal refused; the finder ran ${a.lambda.finder} times (${f(a.lambda.finderSeconds)} s in all), the`,
    `workers ${a.lambda.worker} batches. SQS requests: ${a.sqs.send} sends (batches of 10), ${a.sqs.receive} receives that`,
    `returned messages, ${a.sqs.delete} deletes — plus ${a.sqs.emptyReceive} empty receives of the local poller (on AWS the`,
    'event source mapping’s idle long polls cost a fixed few requests a minute, whatever the number of channels).',
    'Units are DynamoDB capacity units as DynamoDB Local reports them (ReturnConsumedCapacity), index writes',
    'included. GB-s: the handlers’ wall time here at 1 GB (X’s latency is most of it). Dollars: us-east-1 list',
    'prices (DynamoDB on-demand, SQS standard $0.40 per million requests, Lambda arm64, KMS $0.03 per 10,000).',
    ...(before
      ? [
          '',
          `Before: one 240 s run renewed ${before.renewed.toLocaleString('en')} of the ${before.channels.toLocaleString('en')} (${f(before.renewed / before.seconds)}/s,`,
          `bounded by 8 at a time × X’s latency); ${before.pastExpiry.toLocaleString('en')} tokens had expired unrenewed by the end of that run,`,
          `and ${before.expireBeforeNextRun.toLocaleString('en')} of those it left expired before the next run would start (5 minutes after it).`,
        ]
      : []),
  ].join('\n');
}
