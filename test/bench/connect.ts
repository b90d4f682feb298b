import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { countConsumedCapacity, machine, median, today } from './support.ts';

// Connecting accounts and keeping them connected: what a connection costs in time on Herald's side
// and in DynamoDB units, and what the channel sync costs per channel per day. The real use cases
// run against DynamoDB Local (which reports consumed capacity) and the platforms' contract fakes
// on loopback, so a measured time is Herald's own work plus loopback round trips to the fakes —
// not a platform's real latency. KMS is the in-process stand-in of the unit tests; its calls are
// counted, not timed.

/** Runs per platform for the connect timings. */
const RUNS = Number(process.env.BENCH_CONNECT_RUNS ?? 10);

/** Access-token lifetimes the platforms document (seconds; null: the token does not expire). */
export const TOKEN_LIFETIME: Record<string, number | null> = {
  x: 2 * 3600,
  linkedin: 60 * 86_400,
  threads: 60 * 86_400,
  instagram: null, // Page-scoped tokens read with a long-lived user token do not expire
  facebook: null,
  tiktok: 24 * 3600,
  youtube: 3600,
  pinterest: 30 * 86_400,
  mastodon: null,
  bluesky: null, // the channel keeps the app password, not a session
};

export interface Units {
  read: number;
  write: number;
  kms: number;
  ms: number;
}

export interface ConnectResult {
  connect: Array<{ platform: string; create: Units; callback: Units; read: Units; totalMs: number }>;
  sync: { profile: Units; renewal: Units; index: Units };
}

export async function benchConnect(): Promise<ConnectResult> {
  const { startDynamo, ensureTable, dynamoCredentials, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const { allFakes } = await import('../fakes/index.ts');
  const { FAKE_APPS } = await import('../fakes/oauth.ts');
  const dir = mkdtempSync(join(tmpdir(), 'herald-connect-'));
  const credentials = dynamoCredentials(dir);
  const dynamo = await startDynamo(dir, credentials);
  const fakes = await allFakes().start();
  try {
    await ensureTable(dynamo.endpoint, 'herald-connect', credentials);
    Object.assign(process.env, fakes.env(), {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      TABLE_NAME: 'herald-connect',
      HERALD_CURSOR_SECRET: 'connect-bench',
      CONNECTION_SECRETS_KEY_ID: 'alias/herald-connect',
      HERALD_PUBLIC_URL: 'https://api.example.com',
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    const { KMSClient } = await import('@aws-sdk/client-kms');
    const { mockClient } = await import('aws-sdk-client-mock');
    const { serveDataKeys } = await import('../unit/support/kms.ts');
    const kms = mockClient(KMSClient);
    serveDataKeys(kms);

    const { dynamo: client } = await import('#shared/clients');
    const consumed = countConsumedCapacity(client);
    const measure = async <T>(fn: () => Promise<T>): Promise<{ value: T; units: Units }> => {
      consumed.read = 0;
      consumed.write = 0;
      const calls = kms.calls().length;
      const t0 = performance.now();
      const value = await fn();
      const ms = performance.now() - t0;
      return { value, units: { ...consumed, kms: kms.calls().length - calls, ms } };
    };

    const admin = await import('#usecases/cli/admin');
    const { createChannelConnection } = await import('#usecases/create-channel-connection');
    const { oauthCallback } = await import('#usecases/oauth-callback');
    const { getChannelConnection } = await import('#usecases/get-channel-connection');
    const { selectChannelAccount } = await import('#usecases/select-channel-account');
    const { findDueChannels } = await import('#usecases/channel-sync');
    const { syncChannel } = await import('#usecases/channel-sync-worker');
    const { OAUTH_PLATFORMS } = await import('#core/connections');
    const { clearOpened } = await import('#adapters/sealed');
    const created = await admin.createOrg({
      name: 'Connect',
      plan: 'agency',
      ownerEmail: 'c@example.com',
      consoleUrl: 'http://localhost',
    });
    const orgId = created.org.id;
    await admin.setPlan({ orgId, plan: 'agency', limits: { channels: 10_000 } });
    // The sessions land on the client's own site, which the organization allows.
    await admin.setSettings({
      orgId,
      by: created.owner.id,
      patch: { landing_origins: ['https://app.example.com'] },
    });
    const platforms = OAUTH_PLATFORMS;
    for (const platform of platforms) {
      const app = FAKE_APPS[platform];
      await admin.setPlatformApp({ platform, clientId: app.clientId, clientSecret: app.clientSecret });
    }
    const admitted = async () => undefined;

    const connect: ConnectResult['connect'] = [];
    const lastChannel: Record<string, string> = {};
    for (const platform of platforms) {
      for (let run = 0; run < RUNS; run++) {
        // A new person each run (a new account, a new channel), and a cold secrets cache half the time.
        if (run % 2 === 0) clearOpened();
        const start = performance.now();
        const session = await measure(() =>
          createChannelConnection({
            orgId,
            body: { platform, redirect_uri: 'https://app.example.com/connected' },
            requestHost: 'api.example.com',
            now: new Date(),
            admitted,
          }),
        );
        const url = new URL(String(session.value.authorize_url));
        url.searchParams.set('fake_user', `bench-${platform}-${run}`);
        const consent = await fetch(url, { redirect: 'manual' });
        const back = new URL(String(consent.headers.get('location')));
        const callback = await measure(() =>
          oauthCallback(platform, Object.fromEntries(back.searchParams), new Date()),
        );
        const read = await measure(async () => {
          const now = await getChannelConnection(orgId, session.value.id, new Date());
          return now.status === 'selecting_account'
            ? selectChannelAccount(
                orgId,
                session.value.id,
                String(now.accounts?.[0]?.id),
                new Date(),
                admitted,
              )
            : now;
        });
        if (read.value.status !== 'connected')
          throw new Error(`${platform}: ${read.value.status} ${JSON.stringify(read.value.error)}`);
        lastChannel[platform] = String(read.value.channel_id);
        connect.push({
          platform,
          create: session.units,
          callback: callback.units,
          read: read.units,
          totalMs: performance.now() - start,
        });
      }
    }

    // The channel sync: a profile-only look, and a renewal (X: tokens that live two hours; the
    // sync renews 30 minutes before they end, so act as if that moment had come).
    clearOpened();
    const profile = await measure(() => syncChannel(orgId, lastChannel.linkedin as string, new Date()));
    const soon = new Date(Date.now() + 2 * 3600_000 - 20 * 60_000);
    clearOpened();
    const renewal = await measure(() => syncChannel(orgId, lastChannel.x as string, soon));
    if (profile.value !== 'synced' || renewal.value !== 'refreshed')
      throw new Error(`sync: ${profile.value}, ${renewal.value}`);
    const index = await measure(() => findDueChannels(new Date()));
    kms.restore();
    return { connect, sync: { profile: profile.units, renewal: renewal.units, index: index.units } };
  } finally {
    await fakes.stop();
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const PRICES = {
  dynamoPerMillionWrite: 0.625,
  dynamoPerMillionRead: 0.125,
  kmsPerTenThousand: 0.03,
  lambdaPerGbSecondArm: 0.0000133334,
  lambdaPerMillionRequests: 0.2,
};
/** The channel sync function's memory (the default of lib/herald-function.ts), GB. */
const SYNC_GB = 1;

const fmt = (n: number, digits = 1) => n.toFixed(digits);
const med = (xs: number[]) => median(xs);

/** Renewals per day the sync makes for a token of this lifetime (nextSyncAt's rule). */
export function renewalsPerDay(lifetime: number | null): number {
  if (lifetime === null) return 0;
  const lead = Math.min(30 * 60, lifetime / 2);
  return 86_400 / (lifetime - lead);
}

export function connectSection(r: ConnectResult): string {
  const rows = [...new Set(r.connect.map((c) => c.platform))].map((platform) => {
    const runs = r.connect.filter((c) => c.platform === platform);
    const sum = (pick: (c: (typeof runs)[number]) => Units, k: keyof Units) =>
      med(runs.map((c) => pick(c)[k]));
    const ms = (c: (typeof runs)[number]) => c.create.ms + c.callback.ms + c.read.ms;
    const writes = med(runs.map((c) => c.create.write + c.callback.write + c.read.write));
    const reads = med(runs.map((c) => c.create.read + c.callback.read + c.read.read));
    const kmsCalls = med(runs.map((c) => c.create.kms + c.callback.kms + c.read.kms));
    return `| ${platform} | ${fmt(sum((c) => c.create, 'ms'))} | ${fmt(sum((c) => c.callback, 'ms'))} | ${fmt(med(runs.map(ms)))} | ${fmt(Math.max(...runs.map(ms)))} | ${fmt(reads)} | ${fmt(writes)} | ${fmt(kmsCalls, 0)} |`;
  });
  const s = r.sync;
  const day = Object.entries(TOKEN_LIFETIME).map(([platform, life]) => {
    const renewals = renewalsPerDay(life);
    // A sync that is due renews and reads the profile in one look. Tokens renewed at least daily:
    // every look is a renewal. Longer-lived ones: the daily profile look, a renewal now and then.
    const perDay = (k: keyof Units) =>
      renewals >= 1 ? renewals * s.renewal[k] : s.profile[k] + renewals * (s.renewal[k] - s.profile[k]);
    const looks = Math.max(1, renewals);
    const reads = perDay('read');
    const writes = perDay('write');
    const kmsCalls = perDay('kms');
    const ms = perDay('ms');
    const dollars =
      (reads * PRICES.dynamoPerMillionRead + writes * PRICES.dynamoPerMillionWrite) / 1e6 +
      (kmsCalls * PRICES.kmsPerTenThousand) / 1e4 +
      (ms / 1000) * SYNC_GB * PRICES.lambdaPerGbSecondArm;
    return `| ${platform} | ${life === null ? 'no expiry' : life >= 86_400 ? `${life / 86_400} d` : `${life / 3600} h`} | ${fmt(looks)} | ${fmt(reads)} | ${fmt(writes)} | ${fmt(kmsCalls)} | ${fmt(ms, 0)} | ${(dollars * 30 * 1000).toFixed(3)} |`;
  });
  const runs = 288;
  const indexReads = Math.max(s.index.read, 10 * 0.5) * runs;
  return [
    `Run of ${today()} on ${machine()}; ${RUNS} connections per platform (a new account each), use`,
    'cases in process against DynamoDB Local and the contract fakes on loopback (`npm run bench`,',
    '`BENCH_ONLY=connect`). Times are Herald’s side of the flow: creating the session, and handling',
    'the callback (state, token exchange, scopes, accounts and profile from the platform, the',
    'connecting transaction); the person’s time at the consent page is not in them. Units are',
    'DynamoDB capacity units as DynamoDB Local reports them; KMS calls with a cold secrets cache',
    'on every other run.',
    '',
    '| Platform | create, ms (median) | callback, ms (median) | Herald total, ms (median) | max, ms | read units | write units | KMS calls |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    `One channel sync (a cold container): a profile look ${fmt(s.profile.ms)} ms, ${fmt(s.profile.read)} read / ${fmt(s.profile.write)} write units, ${s.profile.kms} KMS calls; a renewal (X) ${fmt(s.renewal.ms)} ms, ${fmt(s.renewal.read)} read / ${fmt(s.renewal.write)} write units, ${s.renewal.kms} KMS calls. Finding the due channels (a finder run, nothing due): 10 reads — the platform-app refusal tally, the cursor, 8 day buckets of the index (DynamoDB Local reports ${fmt(s.index.read)} units for them; AWS bills at least 0.5 read unit per request), ${runs} runs a day = ${fmt(indexReads, 0)} read units a day for the whole deployment, whatever the number of channels — $${((indexReads * 30 * PRICES.dynamoPerMillionRead) / 1e6).toFixed(4)} a month.`,
    '',
    'Per channel per day, by the platform’s token lifetime (renewals at half-life, at most 30 min',
    'before expiry; one profile look a day), from the cold-container looks above: an upper bound, as',
    'a warm sync container keeps opened secrets (the platform app’s among them) for 5 minutes.',
    'KMS is most of the cost of short-lived tokens. Dollars: us-east-1 list prices (DynamoDB on-demand, KMS',
    `$0.03 per 10,000 requests, Lambda arm64 at ${SYNC_GB * 1024} MB for the measured time), per 1,000 channels for 30 days:`,
    '',
    '| Platform | token life | sync looks / day | read units | write units | KMS calls | Lambda ms | $ per 1,000 channels per month |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...day,
  ].join('\n');
}
