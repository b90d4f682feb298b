import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeGrant } from '../fakes/oauth.ts';
import { machine, median, ROOT, table, today } from './support.ts';

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
  /** DynamoDB units of the workers' calls (single loop: all of its calls). */
  worker: { read: number; write: number };
  /** The finder: its runs that sent nothing (cost per run), and what it cost per entry it sent. */
  finder: {
    runs: number;
    entries: number;
    perIdleRun: { read: number; write: number };
    perEntry: { read: number; write: number };
  };
  kms: number;
  sqs: { send: number; receive: number; emptyReceive: number; delete: number };
  lambda: { finder: number; worker: number; workerSeconds: number; finderSeconds: number };
  /** The machine's 1-minute load average (other work shares its 2 cores). */
  load: { start: number; max: number; end: number };
}

const N = Number(process.env.BENCH_SYNC_CHANNELS ?? 10_000);
/** X's answer time here (token and profile calls alike). */
const LATENCY_MS = Number(process.env.BENCH_SYNC_LATENCY_MS ?? 150);
/** The first token expires this long after the start; the last WINDOW_S later. */
const FIRST_S = Number(process.env.BENCH_SYNC_FIRST_S ?? 120);
const WINDOW_S = Number(process.env.BENCH_SYNC_WINDOW_S ?? 1800);
/** The old function's timeout. */
const RUN_S = Number(process.env.BENCH_SYNC_RUN_SECONDS ?? 240);
/** Seeding must be done by then (the expiries are fixed before it starts). */
const SEED_BUDGET_S = Number(process.env.BENCH_SYNC_SEED_BUDGET_S ?? 900);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function benchSync(mode: SyncMode): Promise<SyncRun> {
  const { startDynamo, ensureTable, dynamoCredentials, startQueues, awaitLocalCommits, LOCAL_REGION } =
    await import('../../bin/local/services.ts');
  const { allFakes } = await import('../fakes/index.ts');
  const dir = mkdtempSync(join(tmpdir(), 'herald-sync-'));
  const credentials = dynamoCredentials(dir);
  mkdirSync(join(dir, 'dynamodb'));
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
          else {
            if (Number.isNaN(renewedAt[i])) renewedAt[i] = Date.now();
            else twice++;
            // The rotated token is the channel's too: a second renewal with it counts as twice.
            const rotated = (res.body as { refresh_token?: string } | undefined)?.refresh_token;
            if (rotated) refreshOf.set(rotated, i);
          }
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

    // ---- what it costs from here, by function (the finder's and the workers' calls) ----
    const { AsyncLocalStorage } = await import('node:async_hooks');
    type Meter = { read: number; write: number; sends: number };
    const role = new AsyncLocalStorage<Meter>();
    const worker: Meter = { read: 0, write: 0, sends: 0 };
    const finderRuns: Array<Meter & { entries: number }> = [];
    const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;
    client.middlewareStack.add(
      ((next: (a: { input: unknown }) => Promise<{ output: unknown }>, ctx: { commandName?: string }) =>
        async (args: { input: unknown }) => {
          (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
          const out = await next(args);
          const meter = role.getStore();
          const cc = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
          for (const c of ([] as Array<{ CapacityUnits?: number }>).concat((cc as never) ?? [])) {
            if (meter) meter[WRITES.test(String(ctx.commandName)) ? 'write' : 'read'] += c.CapacityUnits ?? 0;
          }
          return out;
        }) as never,
      { step: 'initialize', name: 'benchUnitsByRole' } as never,
    );
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
            if (name.startsWith('SendMessage')) {
              sqsCalls.send++;
              const meter = role.getStore();
              if (meter) meter.sends++;
            } else if (name === 'ReceiveMessageCommand')
              out.output.Messages?.length ? sqsCalls.receive++ : sqsCalls.emptyReceive++;
            else if (name.startsWith('DeleteMessage')) sqsCalls.delete++;
            return out;
          }) as never,
        { step: 'initialize', name: 'benchCountSqs' } as never,
      );
    countSqs((await import('#shared/sqs')).sqs as never);
    const lambda = { finder: 0, worker: 0, workerSeconds: 0, finderSeconds: 0 };
    const load = [loadavg()[0] as number];

    let end: number;
    if (mode === 'fanout') {
      const { workers } = await import('#lib/operations');
      const { lambdaContext, loadHandler } = await import('../../bin/local/front-door.ts');
      const { QueuePoller } = await import('../../bin/local/queue-poller.ts');
      const { IntervalRunner } = await import('../../bin/local/interval-runner.ts');
      const finder = workers.find((w) => w.id === 'channelSync');
      const consumer = workers.find((w) => w.id === 'channelSyncWorker');
      if (finder?.trigger.kind !== 'schedule' || consumer?.trigger.kind !== 'queue')
        throw new Error('the manifest has no channel sync finder and worker');
      const find = await loadHandler<unknown, { sent: number; resent: number }>(ROOT, finder.entry);
      const work = await loadHandler<unknown, unknown>(ROOT, consumer.entry);
      const pollerClient = new SQSClient({
        endpoint: queues.endpoint,
        region: LOCAL_REGION,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
        useQueueUrlAsEndpoint: false,
      });
      countSqs(pollerClient as never);
      let inFlight = 0;
      let lastWork = Date.now();
      const runner = new IntervalRunner(
        async () => {
          const meter = { read: 0, write: 0, sends: 0, entries: 0 };
          const t = performance.now();
          const out = await role.run(meter, () =>
            find({}, lambdaContext(finder.id, crypto.randomUUID(), finder.timeoutSeconds * 1000)),
          );
          meter.entries = out.sent;
          finderRuns.push(meter);
          lambda.finder++;
          lambda.finderSeconds += (performance.now() - t) / 1000;
        },
        finder.trigger.localEverySeconds * 1000,
        (err) => console.error('[finder]', err),
      );
      const poller = new QueuePoller({
        client: pollerClient,
        queueUrl: queues.queues.channelSync.url,
        queueArn: queues.queues.channelSync.arn,
        handler: (async (event: unknown, context: unknown) => {
          const t = performance.now();
          inFlight++;
          try {
            return await role.run(worker, () => work(event, context as never));
          } finally {
            inFlight--;
            lastWork = Date.now();
            lambda.worker++;
            lambda.workerSeconds += (performance.now() - t) / 1000;
          }
        }) as never,
        context: () => lambdaContext(consumer.id, crypto.randomUUID(), consumer.timeoutSeconds * 1000),
        concurrency: consumer.trigger.concurrency,
        batchSize: consumer.trigger.batchSize,
        onError: (err) => console.error('[worker]', err),
      });
      runner.start();
      poller.start();
      stops.push(async () => {
        await runner.stop();
        await poller.stop();
      });
      // Until every channel is renewed and the workers have been idle for 5 s (the queue drained).
      const deadline = start + (FIRST_S + WINDOW_S) * 1000 + 600_000;
      let sampled = Date.now();
      while (renewedAt.some(Number.isNaN) || inFlight > 0 || Date.now() - lastWork < 5000) {
        if (Date.now() > deadline) break;
        if (Date.now() - sampled > 30_000) {
          load.push(loadavg()[0] as number);
          sampled = Date.now();
        }
        await sleep(200);
      }
      await runner.stop();
      await poller.stop();
      end = Math.max(...renewedAt.filter((t) => !Number.isNaN(t)));
    } else {
      // The loop as it was: the due list read once, then 8 at a time until the function's timeout.
      const { syncChannel } = await import('#usecases/channel-sync-worker');
      const { positionAt, syncEntriesAfter } = await import('#adapters/channel-sync-index');
      const t = performance.now();
      await role.run(worker, async () => {
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
      });
      lambda.worker = 1;
      lambda.workerSeconds = (performance.now() - t) / 1000;
      end = Date.now();
    }
    load.push(loadavg()[0] as number);

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
    // The finder's cost that does not grow with channels: its runs that sent nothing.
    const idle = finderRuns.filter((r) => r.entries === 0);
    const busy = finderRuns.filter((r) => r.entries > 0);
    const perIdleRun = {
      read: median(idle.map((r) => r.read)) || 0,
      write: median(idle.map((r) => r.write)) || 0,
    };
    const entries = busy.reduce((a, r) => a + r.entries, 0);
    const perEntry = {
      read: busy.reduce((a, r) => a + r.read - perIdleRun.read, 0) / Math.max(1, entries),
      write: busy.reduce((a, r) => a + r.write - perIdleRun.write, 0) / Math.max(1, entries),
    };
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
      worker: { read: worker.read, write: worker.write },
      finder: { runs: finderRuns.length, entries, perIdleRun, perEntry },
      kms: kmsCalls,
      sqs: sqsCalls,
      lambda,
      load: { start: load[0] as number, max: Math.max(...load), end: load.at(-1) as number },
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
  const one = async (i: number): Promise<Array<Record<string, unknown>>> => {
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
    return [
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
    ];
  };
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < expiresAt.length) {
        const from = next;
        next = Math.min(expiresAt.length, next + 12);
        const items = (
          await Promise.all(Array.from({ length: next - from }, (_, j) => one(from + j)))
        ).flat();
        let pending = items.map((Item) => ({ PutRequest: { Item } }));
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
/** A DynamoDB or KMS call in-region, for the duration model (as test/bench/cost.ts). */
const MS_PER_ROUND_TRIP = 6;
/** Sequential AWS round trips of one renewal besides X's two calls (read, open, lease, seal, save, health). */
const ROUND_TRIPS = 8;

const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '–');
const n0 = (n: number) => Math.round(n).toLocaleString('en');

/** What one renewal costs on AWS, by the measured counts; Lambda time modelled (see the text). */
function perThousand(r: SyncRun) {
  const k = (v: number) => (v * 1000) / Math.max(1, r.renewed);
  const read = k(r.worker.read) + 1000 * r.finder.perEntry.read;
  const write = k(r.worker.write) + 1000 * r.finder.perEntry.write;
  const sqs = r.mode === 'fanout' ? k(r.sqs.send + r.sqs.receive + r.sqs.delete) : 0;
  const invocations = r.mode === 'fanout' ? k(r.lambda.worker) : k(1);
  // A worker batch's channels run at once: one renewal's time per batch. The single loop: its run.
  const perRenewalS = (2 * r.latencyMs + ROUND_TRIPS * MS_PER_ROUND_TRIP) / 1000;
  const gbSeconds = r.mode === 'fanout' ? invocations * perRenewalS * GB : k(r.runSeconds ?? r.seconds) * GB;
  const kms = k(r.kms);
  const dollars =
    (read * PRICES.dynamoPerMillionRead + write * PRICES.dynamoPerMillionWrite) / 1e6 +
    (sqs * PRICES.sqsPerMillion) / 1e6 +
    (invocations * PRICES.lambdaPerMillion) / 1e6 +
    gbSeconds * PRICES.lambdaPerGbSecondArm +
    (kms * PRICES.kmsPerTenThousand) / 1e4;
  return { read, write, sqs, invocations, gbSeconds, kms, dollars };
}

export function syncSection(after: SyncRun, before: SyncRun | undefined): string {
  const rows = [after, ...(before ? [before] : [])].map((r) => {
    const c = perThousand(r);
    return [
      r.mode === 'fanout'
        ? 'finder + queue + workers (now)'
        : `one loop, 8 at a time, one ${r.runSeconds} s run (before)`,
      `${n0(r.renewed)} / ${n0(r.channels)}`,
      f(r.seconds),
      f(r.renewed / Math.max(r.seconds, 0.001)),
      n0(r.pastExpiry),
      n0(r.twice),
      r.mode === 'fanout' ? n0(r.healthy) : '–',
      f(c.read),
      f(c.write),
      f(c.kms),
      r.mode === 'fanout' ? f(c.sqs) : '–',
      f(c.invocations),
      f(c.gbSeconds),
      `$${c.dollars.toFixed(4)}`,
    ];
  });
  const a = after;
  const idle = a.finder.perIdleRun;
  const finderMonth =
    288 *
    30 *
    ((idle.read * PRICES.dynamoPerMillionRead + idle.write * PRICES.dynamoPerMillionWrite) / 1e6 +
      PRICES.lambdaPerMillion / 1e6 +
      0.2 * GB * PRICES.lambdaPerGbSecondArm);
  return [
    `Run of ${today()} on ${machine()} (\`npm run bench\`, \`BENCH_ONLY=sync\`), load average ${f(a.load.start)}–${f(a.load.max)}`,
    `during the fan-out (other work shares the 2 cores). ${n0(a.channels)} X channels connected within the same`,
    `half hour, so every one of them is in its 30-minute renewal window when the run starts, their tokens expiring`,
    `one after the other between ${a.window.firstS} s and ${a.window.lastS} s after the start (seeded in ${f(a.seedSeconds, 0)} s).`,
    'The real finder and worker handlers run in process as the local stack runs them — the finder every 2 s,',
    'the worker behind a poller with the manifest’s batches of 10, 8 batches at once — against DynamoDB Local,',
    `the durable SQS stand-in and the X contract fake answering each call after ${a.latencyMs} ms (about X’s`,
    'latency). A renewal is X’s answer to the token request; its margin is the time then left on the old',
    'token; renewed twice would be a second renewal of a channel (none: a refresh token spent once). "Before"',
    'is the scheduled loop this replaced: the same per-channel use case over the same due list, 8 at a time,',
    'stopped at the function’s 240 s timeout (its next run came 5 minutes after the previous one started).',
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
        'GB-s / 1k (AWS model)',
        '$ / 1k renewals (AWS)',
      ],
      ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
      rows,
    ),
    '',
    `Fan-out: the smallest margin ${f(a.marginS.min)} s (negative: renewed after the old token expired), the median`,
    `${f(a.marginS.p50)} s; ${a.refreshFailures} renewal refused; ${n0(a.healthy)} channels live afterwards with no error and their next look in the`,
    `future. The finder ran ${a.lambda.finder} times`,
    `(${f(a.lambda.finderSeconds)} s in all) and sent ${n0(a.finder.entries)} messages; the workers ran ${a.lambda.worker} batches (${f(a.lambda.workerSeconds, 0)} s`,
    `of handler time here, on a CPU-bound machine). SQS: ${a.sqs.send} sends (batches of 10), ${a.sqs.receive} receives that returned`,
    `messages and ${a.sqs.delete} batch deletes (the local poller’s ${n0(a.sqs.emptyReceive)} empty receives left out: on AWS the event`,
    'source mapping’s idle long polls are a fixed few requests a minute, whatever the number of channels).',
    'Units: DynamoDB capacity units as DynamoDB Local reports them (ReturnConsumedCapacity), index writes',
    `included, of the workers’ calls plus the finder’s per message (${f(a.finder.perEntry.read, 3)} read,`,
    `${f(a.finder.perEntry.write, 3)} write units). A finder run with nothing to send costs ${f(idle.read)} read / ${f(idle.write)} write units;`,
    `at 288 runs a day that is $${finderMonth.toFixed(3)} a month for the whole deployment. Lambda time is modelled, not measured`,
    `(the local handler time is CPU contention): a worker batch renews its 10 channels at once, so one renewal’s`,
    `time per batch — X’s two calls plus ${ROUND_TRIPS} AWS round trips of ${MS_PER_ROUND_TRIP} ms — at 1 GB; the single loop pays its`,
    'whole 240 s run. Dollars: us-east-1 list prices (DynamoDB on-demand, SQS standard $0.40 per million',
    'requests, Lambda arm64, KMS $0.03 per 10,000 requests); KMS is most of it.',
    ...(before
      ? [
          '',
          `Before: one ${before.runSeconds} s run renewed ${n0(before.renewed)} of the ${n0(before.channels)} channels (${f(before.renewed / before.seconds)}/s: 8 at a`,
          `time, each waiting on X twice). ${n0(before.pastExpiry)} tokens expired unrenewed during that run, and ${n0(before.expireBeforeNextRun)} of the ones`,
          'it left expired before the next run would start, 5 minutes after it; the next run would start again from',
          'the oldest entry.',
        ]
      : []),
  ].join('\n');
}
