import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { PRICES } from './cost.ts';
import { ROOT, table } from './support.ts';

// The inbox poller at scale (issue 35): N Mastodon channels polled by the real finder and worker
// handlers, in this process as the local stack runs them — the worker behind a poller with the
// manifest's batch size and concurrency — against DynamoDB Local, the durable SQS stand-in and the
// Mastodon contract fake, which answers each API call after a fixed delay standing in for the
// instance's latency. KMS is the unit tests' in-process stand-in (its calls counted). Three rounds:
// the first poll (a 7-day backfill finding 3 items), a poll finding 2 new items, an empty poll;
// each round is the finder's five slots (every channel once) and the workers draining the queue.
// From the measured units and times: what a channel costs per month at one poll every 5 minutes,
// and whether 10,000 channels are polled within the interval at the manifest's concurrency.

const N = Number(process.env.BENCH_INBOX_CHANNELS ?? 1000);
const LATENCY_MS = Number(process.env.BENCH_INBOX_LATENCY_MS ?? 150);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface InboxRound {
  name: string;
  /** Items each channel's poll found new. */
  newItems: number;
  channels: number;
  seconds: number;
  /** Per polled channel. */
  perChannel: {
    readUnits: number;
    writeUnits: number;
    dynamoRequests: number;
    platformRequests: number;
    kms: number;
    /** Handler time of the worker batches, per message (a batch's messages run in parallel). */
    workerMs: number;
  };
  itemsWritten: number;
}

export interface InboxRun {
  channels: number;
  latencyMs: number;
  batchSize: number;
  concurrency: number;
  everySeconds: number;
  rounds: InboxRound[];
  finder: { entries: number; readUnits: number; requests: number; sqsSends: number };
  load: { start: number; max: number; end: number };
}

export async function benchInbox(): Promise<InboxRun> {
  const { startDynamo, ensureTable, dynamoCredentials, startQueues, awaitLocalCommits, LOCAL_REGION } =
    await import('../../bin/local/services.ts');
  const { allFakes } = await import('../fakes/index.ts');
  const dir = mkdtempSync(join(tmpdir(), 'herald-inbox-'));
  const credentials = dynamoCredentials(dir);
  mkdirSync(join(dir, 'dynamodb'));
  const dynamo = await startDynamo(join(dir, 'dynamodb'), credentials);
  const queues = await startQueues(join(dir, 'queues.journal'));
  const fakes = await allFakes().start();
  const stops: Array<() => Promise<void>> = [];
  try {
    await ensureTable(dynamo.endpoint, 'herald-inbox', credentials);
    Object.assign(process.env, fakes.env(), {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_ENDPOINT_URL_SQS: queues.endpoint,
      INBOX_POLL_QUEUE_URL: queues.queues.inboxPoll.url,
      TABLE_NAME: 'herald-inbox',
      HERALD_CURSOR_SECRET: 'inbox-bench',
      CONNECTION_SECRETS_KEY_ID: 'alias/herald-inbox',
      HERALD_PUBLIC_URL: 'https://api.example.com',
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
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
    const { clearOpened } = await import('#adapters/sealed');

    // ---- Mastodon, with its latency, its API requests counted ----
    const mastodon = fakes.fake('mastodon') as import('../fakes/mastodon.ts').FakeMastodon;
    let platformRequests = 0;
    const handle = mastodon.handle.bind(mastodon);
    mastodon.handle = async (req, ctx) => {
      if (req.path.startsWith('/api/')) {
        platformRequests++;
        await sleep(LATENCY_MS);
      }
      return handle(req, ctx);
    };
    const base = `${fakes.origin}/mastodon`;
    const inboxOf = mastodon.inbox?.bind(mastodon);
    if (!inboxOf) throw new Error('the Mastodon fake has no inbox');
    const seedItems = (n: number) => {
      for (let i = 0; i < n; i++) inboxOf({ kind: 'mention', text: `bench ${i} ${Date.now()}` }, { base });
    };

    // ---- the organization and N channels (one account: each channel reads the same inbox) ----
    const admin = await import('#usecases/cli/admin');
    const created = await admin.createOrg({
      name: 'Inbox',
      plan: 'agency',
      ownerEmail: 'i@example.com',
      consoleUrl: 'http://localhost',
    });
    const orgId = created.org.id;
    const channelIds = await seed(orgId, base);

    // ---- meters: DynamoDB units and requests, SQS sends, by role ----
    const { AsyncLocalStorage } = await import('node:async_hooks');
    type Meter = { read: number; write: number; requests: number; sends: number };
    const role = new AsyncLocalStorage<Meter>();
    const meter = (): Meter => ({ read: 0, write: 0, requests: 0, sends: 0 });
    const WRITES = /^(Put|Update|Delete|BatchWrite|TransactWrite)/;
    client.middlewareStack.add(
      ((next: (a: { input: unknown }) => Promise<{ output: unknown }>, ctx: { commandName?: string }) =>
        async (args: { input: unknown }) => {
          (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
          const out = await next(args);
          const m = role.getStore();
          if (m) m.requests++;
          const cc = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
          for (const c of ([] as Array<{ CapacityUnits?: number }>).concat((cc as never) ?? []))
            if (m) m[WRITES.test(String(ctx.commandName)) ? 'write' : 'read'] += c.CapacityUnits ?? 0;
          return out;
        }) as never,
      { step: 'initialize', name: 'benchUnitsByRole' } as never,
    );
    (await import('#shared/sqs')).sqs.middlewareStack.add(
      ((next: (a: unknown) => Promise<unknown>, ctx: { commandName?: string }) => async (args: unknown) => {
        const out = await next(args);
        const m = role.getStore();
        if (m && String(ctx.commandName).startsWith('SendMessage')) m.sends++;
        return out;
      }) as never,
      { step: 'initialize', name: 'benchCountSqs' } as never,
    );

    // ---- the workers, as the manifest runs them ----
    const { workers } = await import('#lib/operations');
    const { lambdaContext, loadHandler } = await import('../../bin/local/front-door.ts');
    const { QueuePoller } = await import('../../bin/local/queue-poller.ts');
    const finderSpec = workers.find((w) => w.id === 'inboxPoll');
    const consumer = workers.find((w) => w.id === 'inboxPollWorker');
    if (finderSpec?.trigger.kind !== 'schedule' || consumer?.trigger.kind !== 'queue')
      throw new Error('the manifest has no inbox finder and worker');
    const work = await loadHandler<unknown, unknown>(ROOT, consumer.entry);
    const { findInboxPolls } = await import('#usecases/inbox-poll');
    const pollerClient = new SQSClient({
      endpoint: queues.endpoint,
      region: LOCAL_REGION,
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      useQueueUrlAsEndpoint: false,
    });
    const workerMeter = meter();
    let handled = 0;
    let workerMs = 0;
    const poller = new QueuePoller({
      client: pollerClient,
      queueUrl: queues.queues.inboxPoll.url,
      queueArn: queues.queues.inboxPoll.arn,
      handler: (async (event: { Records?: unknown[] }, context: unknown) => {
        const t = performance.now();
        try {
          return await role.run(workerMeter, () => work(event, context as never));
        } finally {
          workerMs += performance.now() - t;
          handled += event.Records?.length ?? 0;
        }
      }) as never,
      context: () => lambdaContext(consumer.id, crypto.randomUUID(), consumer.timeoutSeconds * 1000),
      concurrency: consumer.trigger.concurrency,
      batchSize: consumer.trigger.batchSize,
      onError: (err) => console.error('[worker]', err),
    });
    poller.start();
    stops.push(() => poller.stop());
    const load = [loadavg()[0] as number];

    const { QueryCommand } = await import('@aws-sdk/lib-dynamodb');
    const { TABLE_NAME } = await import('#adapters/table');
    const countItems = async () => {
      let n = 0;
      let start: Record<string, unknown> | undefined;
      do {
        const res = await client.send(
          new QueryCommand({
            TableName: TABLE_NAME,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
            ExpressionAttributeValues: { ':pk': `ORG#${orgId}`, ':sk': 'INBOX#' },
            Select: 'COUNT',
            ExclusiveStartKey: start,
          }),
        );
        n += res.Count ?? 0;
        start = res.LastEvaluatedKey;
      } while (start);
      return n;
    };

    const finderMeter = meter();
    const rounds: InboxRound[] = [];
    const round = async (name: string, newItems: number) => {
      seedItems(newItems);
      // In AWS a channel's next poll is 5 minutes on, on any container: its credentials are opened again.
      clearOpened();
      const before = { ...workerMeter, handled, workerMs, kms: kms.calls().length, platformRequests };
      const itemsBefore = await countItems();
      const t = performance.now();
      // The five slots' runs back to back (period 1 s: no delays), as five minutes of the finder.
      for (let slot = 0; slot < 5; slot++)
        await role.run(finderMeter, () => findInboxPolls(new Date(slot * 1000), 1));
      while (handled - before.handled < channelIds.length) await sleep(100);
      const seconds = (performance.now() - t) / 1000;
      load.push(loadavg()[0] as number);
      const per = (v: number) => v / channelIds.length;
      rounds.push({
        name,
        newItems,
        channels: channelIds.length,
        seconds,
        perChannel: {
          readUnits: per(workerMeter.read - before.read),
          writeUnits: per(workerMeter.write - before.write),
          dynamoRequests: per(workerMeter.requests - before.requests),
          platformRequests: per(platformRequests - before.platformRequests),
          kms: per(kms.calls().length - before.kms),
          workerMs: per(workerMs - before.workerMs),
        },
        itemsWritten: (await countItems()) - itemsBefore,
      });
    };
    await round('first poll: 7-day backfill, 3 items', 3);
    const finderFirst = { ...finderMeter };
    await round('2 new items', 2);
    await round('nothing new', 0);
    await poller.stop();
    pollerClient.destroy();
    load.push(loadavg()[0] as number);
    return {
      channels: channelIds.length,
      latencyMs: LATENCY_MS,
      batchSize: consumer.trigger.batchSize,
      concurrency: consumer.trigger.concurrency,
      everySeconds: finderSpec.trigger.everySeconds,
      rounds,
      finder: {
        entries: channelIds.length,
        readUnits: finderFirst.read,
        requests: finderFirst.requests,
        sqsSends: finderFirst.sends,
      },
      load: { start: load[0] ?? 0, max: Math.max(...load), end: load.at(-1) ?? 0 },
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await fakes.stop();
    await queues.stop();
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** N live Mastodon channels with the inbox's grant, their sealed credentials and poll states. */
async function seed(orgId: string, instance: string): Promise<string[]> {
  const { BatchWriteCommand } = await import('@aws-sdk/lib-dynamodb');
  const { ddb } = await import('#shared/clients');
  const { keys } = await import('#adapters/keys');
  const { TABLE_NAME } = await import('#adapters/table');
  const { sealCredentials } = await import('#adapters/channel-credentials');
  const { newId } = await import('#core/ids');
  const { pollSlotOf } = await import('#core/inbox');
  const at = new Date().toISOString();
  const ids: string[] = [];
  const one = async (): Promise<Array<Record<string, unknown>>> => {
    const id = newId('channel');
    ids.push(id);
    return [
      {
        ...keys.channel(orgId, id),
        entity: 'channel',
        id,
        org_id: orgId,
        platform: 'mastodon',
        handle: 'acme',
        avatar_url: null,
        followers: 0,
        status: 'live',
        last_sync_at: at,
        last_error: null,
        created_at: at,
        account_id: '109000000000000001',
        granted_scopes: [
          'read:accounts',
          'read:notifications',
          'read:statuses',
          'write:media',
          'write:statuses',
        ],
        connected_at: at,
        sync_failures: 0,
        updated_at: at,
      },
      {
        ...keys.channelCredentials(orgId, id),
        entity: 'channel_credentials',
        sealed: await sealCredentials(orgId, id, { instance, access_token: 'token' }),
        version: 1,
      },
      {
        ...keys.inboxPoll(orgId, id),
        ...keys.inboxSlot(pollSlotOf(id), orgId, id),
        entity: 'inbox_poll',
        org_id: orgId,
        channel_id: id,
        platform: 'mastodon',
        cursor: null,
        last_synced_at: null,
        error: null,
        failures: 0,
        next_poll_at: null,
        created_at: at,
        updated_at: at,
      },
    ];
  };
  for (let from = 0; from < N; from += 8) {
    const items = (await Promise.all(Array.from({ length: Math.min(8, N - from) }, one))).flat();
    let pending = items.map((Item) => ({ PutRequest: { Item } }));
    while (pending.length) {
      const res = await ddb.send(new BatchWriteCommand({ RequestItems: { [TABLE_NAME]: pending } }));
      pending = (res.UnprocessedItems?.[TABLE_NAME] ?? []) as typeof pending;
    }
  }
  return ids;
}

// ---- the model: a month at one poll per channel every 5 minutes --------------------------------

/** KMS: $0.03 per 10,000 requests (the credentials are opened once per poll: a container's cache
 * keeps them 5 minutes, the interval itself). SQS standard: $0.40 per million requests. */
const KMS_PER_REQUEST = 0.03 / 10_000;
const SQS_PER_MILLION = 0.4;

export interface InboxCost {
  pollsPerMonth: number;
  /** Dollars per 1,000 channels per month, by service, for each round's kind of poll. */
  rows: Array<{ name: string; dynamodb: number; lambda: number; sqs: number; kms: number; total: number }>;
  /** 10,000 channels: seconds to poll them all at the manifest's concurrency (from the measured rate). */
  tenThousandSeconds: number;
  finderPerRun10k: { readUnits: number; sqsRequests: number };
}

export function inboxCost(r: InboxRun, memoryMb = 1024): InboxCost {
  const pollsPerMonth = (30 * 86_400) / 300;
  const polls = pollsPerMonth * 1000;
  const rows = r.rounds.map((x) => {
    const p = x.perChannel;
    // A batch of 10 runs in parallel: billed per invocation for its slowest; the measured handler
    // time per message is that share, in the local stack (an upper bound of Lambda's).
    const lambda =
      (polls / r.batchSize) * (PRICES.lambdaPerMillionRequests / 1e6) +
      polls * (memoryMb / 1024) * (p.workerMs / 1000) * PRICES.lambdaPerGbSecondArm;
    const dynamodb =
      polls *
      ((p.writeUnits * PRICES.dynamoPerMillionWrite + p.readUnits * PRICES.dynamoPerMillionRead) / 1e6);
    // Per message: its share of a SendMessageBatch (10), a receive and a delete per batch.
    const sqs = polls * (3 / r.batchSize) * (SQS_PER_MILLION / 1e6);
    const kms = polls * p.kms * KMS_PER_REQUEST;
    return { name: x.name, dynamodb, lambda, sqs, kms, total: dynamodb + lambda + sqs + kms };
  });
  const steady = r.rounds.at(-1) as InboxRound;
  const rate = steady.channels / steady.seconds;
  const perEntry = r.finder.readUnits / r.finder.entries;
  return {
    pollsPerMonth,
    rows,
    tenThousandSeconds: 10_000 / rate,
    finderPerRun10k: { readUnits: (perEntry * 10_000) / 5, sqsRequests: 10_000 / 5 / 10 },
  };
}

const f = (n: number, d = 2) => n.toFixed(d);

export function inboxSection(r: InboxRun): string {
  const c = inboxCost(r);
  const measured = table(
    [
      'poll',
      'channels',
      's',
      'RRU / ch',
      'WRU / ch',
      'DynamoDB req / ch',
      'platform req / ch',
      'KMS / ch',
      'worker ms / ch',
      'items written',
    ],
    ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'r'],
    r.rounds.map((x) => [
      x.name,
      String(x.channels),
      f(x.seconds, 1),
      f(x.perChannel.readUnits),
      f(x.perChannel.writeUnits),
      f(x.perChannel.dynamoRequests),
      f(x.perChannel.platformRequests),
      f(x.perChannel.kms),
      f(x.perChannel.workerMs, 0),
      String(x.itemsWritten),
    ]),
  );
  const cost = table(
    ['poll (every 5 minutes, a month)', 'DynamoDB', 'Lambda', 'SQS', 'KMS', 'total'],
    ['l', 'r', 'r', 'r', 'r', 'r'],
    c.rows.map((x) => [
      x.name,
      `$${f(x.dynamodb)}`,
      `$${f(x.lambda)}`,
      `$${f(x.sqs)}`,
      `$${f(x.kms)}`,
      `$${f(x.total)}`,
    ]),
  );
  return [
    `${r.channels} Mastodon channels, the instance answering each call after ${r.latencyMs} ms; workers of ${r.batchSize} messages, ${r.concurrency} batches at once (lib/operations.ts). Load average ${f(r.load.start, 1)} → max ${f(r.load.max, 1)}.`,
    '',
    measured,
    '',
    `The finder, one slot of ${r.finder.entries / 5} channels per run on average: ${f(r.finder.readUnits / 5)} RRU and ${f(r.finder.requests / 5, 1)} DynamoDB requests a run (the index holds keys only); 10,000 channels: ≈ ${f(c.finderPerRun10k.readUnits, 1)} RRU and ${c.finderPerRun10k.sqsRequests} SendMessageBatch requests a minute.`,
    '',
    `Per 1,000 channels per month (${c.pollsPerMonth} polls each; Lambda arm64 1024 MB at the measured handler time, requests per batch of ${r.batchSize}; SQS $0.40 per million; KMS $0.03 per 10,000):`,
    '',
    cost,
    '',
    `10,000 channels at the measured rate (${f(r.rounds.at(-1)?.channels ?? 0, 0)} in ${f(r.rounds.at(-1)?.seconds ?? 0, 1)} s): ≈ ${f(c.tenThousandSeconds, 0)} s, against the 300 s interval.`,
  ].join('\n');
}
