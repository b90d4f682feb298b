// The admin CLI (docs/operator/cli.md). It talks to the table directly, with the same use cases the
// handlers use: against the running local stack by default, or a deployment with --stack.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { type OrgSettings, ROLES } from '#core/accounts';
import { landingOrigin } from '#core/connections';
import { PLATFORMS } from '#core/constants';
import { LIMIT_KEYS, type Limits, PLAN_NAMES as PLANS } from '#core/plans';
import type { Platform } from '#core/platforms';
import { SCOPES, type Scope } from '#lib/operations';
import { dlqNames, STREAM_DLQ } from './cli/dlq-names.ts';
import { INSPECT_COMMANDS, type InspectCommand, inspectJob, View } from './cli/inspect.ts';
import { resolveOps, resolveTarget, type Target } from './cli/target.ts';

const USAGE = `Usage: herald <command> [options] [--json] [--stack NAME] [--region R]

Commands:
  org create      --name N --plan free|starter|team|agency --owner-email E
                  prints the owner's enrollment link (one use, 30 minutes): opened in a browser,
                  it registers their passkey for the console
  user add        --org ORG --email E --role owner|admin|member    prints the new user's enrollment
                  link (and e-mails it when a sender is configured)
  user enroll     --org ORG --id USER     a fresh enrollment link (a lost device)
  user list       --org ORG
  user role       --org ORG --id USER --role owner|admin|member
  user remove     --org ORG --id USER     (the last owner can be neither demoted nor removed)
  key mint        --org ORG --scopes s1,s2 [--name N]
  key revoke      --org ORG --id KEY_ID
  key list        --org ORG
  channel connect --org ORG --platform P [--credentials JSON] [--instance URL] [--channel CH]
                  [--account ID]  without --credentials: prints the platform's authorize URL and
                  waits until the connection ends (open it in a browser; --account picks one of
                  several accounts the grant covers); with them: verifies, then connects
  channel disconnect --org ORG --id CH
  channel sync    --org ORG --id CH
  platform-app set  --platform P --client-id ID --client-secret S [--scopes a,b] [--public-url URL]
                  [--audited yes|no]   TikTok: whether TikTok audited the app (default no: posts go
                  to the creator's TikTok inbox unless a variant asks post_mode direct); --audited
                  alone changes only that setting of the registered app
  platform-app list
  settings set    --org ORG [--dangerous-ops on|off] [--approval-required on|off]
                  [--landing-origins URL,URL]  the origins connection sessions may send people
                  back to (replaces the list; '' clears it; loopback needs none)
  plan set        --org ORG --plan P [--limits api_requests=N,burst=N,posts_per_month=N,channels=N,ai_credits=N]
  post approve    --org ORG --id POST_ID
  post reject     --org ORG --id POST_ID --reason TEXT   back to draft, never published; the
                  reason (at most 500 characters) is kept on the post and in the audit log
  audit list      --org ORG [--limit N] [--cursor C]   newest first; --cursor is the previous
                  page's next_cursor
  stack protect   --stack Herald-<stage>   sets the data stack's stack policy: no deploy may
                  replace or delete its table, keys, secret, buckets, queues, API or topic
  post get        --org ORG --id POST_ID   the post as the API returns it, and each delivery's
                  stage, attempts, last error, next attempt, claim and lease (post ids are found
                  only within their organization: --org is required)
  posts stuck     [--older-than 30m] [--lookback 14d]   across organizations: scheduled posts
                  whose time passed, deliveries whose lease expired, retrying or waiting that
                  long; reads the due-work index, one small query per minute of --lookback
  channels failing   across organizations: channels reauth_required or in error, and those
                  whose last syncs failed (reads the channel-sync index and those channels)
  dlq list        every dead-letter queue, its depth, what consumes it and what a redrive does
  dlq show        --queue Q [--limit N]   peeks at up to N messages (default 10; nothing is
                  consumed, but each receive raises the message's receive count)
  dlq redrive     --queue Q [--wait]   moves the DLQ's messages back to their queue (not delivery,
                  not stream); Q is one of ${dlqNames().join(', ')}
  stream replay   [--dry-run] [--drop-lost]   hands each batch in the stream DLQ to the stream
                  relay again while the table stream has its records (24 hours)

The CLI acts as the operator, and the audit log records each change it makes so (the read-only
views — post get, posts stuck, channels failing, dlq list/show — write no entry). --by USER (on the commands of an
organization's people, keys, settings, posts and audit log) acts on behalf of that user instead:
they must be a user of the organization with the act's role.

Target: the local stack under $HERALD_DATA_DIR (default .herald) started by \`npm start\`;
with --stack NAME (or $HERALD_STACK) the deployed CloudFormation stack, using your AWS credentials.
Enrollment links point at the target's console (the local stack's, or the stack's ConsoleUrl
output; $HERALD_CONSOLE_URL when the target has none).`;

class UsageError extends Error {}

const options = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  stack: { type: 'string' },
  region: { type: 'string' },
  name: { type: 'string' },
  plan: { type: 'string' },
  'owner-email': { type: 'string' },
  org: { type: 'string' },
  email: { type: 'string' },
  role: { type: 'string' },
  by: { type: 'string' },
  scopes: { type: 'string' },
  id: { type: 'string' },
  platform: { type: 'string' },
  handle: { type: 'string' },
  credentials: { type: 'string' },
  instance: { type: 'string' },
  channel: { type: 'string' },
  account: { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret': { type: 'string' },
  'public-url': { type: 'string' },
  audited: { type: 'string' },
  timeout: { type: 'string' },
  limits: { type: 'string' },
  'dangerous-ops': { type: 'string' },
  'approval-required': { type: 'string' },
  'landing-origins': { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  reason: { type: 'string' },
  'older-than': { type: 'string' },
  lookback: { type: 'string' },
  queue: { type: 'string' },
  wait: { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'drop-lost': { type: 'boolean' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

function need(values: Values, name: keyof Values): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
  return v.trim();
}

/** An optional option: absent is undefined; given, it must not be empty. */
function opt(values: Values, name: keyof Values): string | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} needs a value`);
  return v.trim();
}

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function onOff(value: string | undefined, flag: string): boolean | undefined {
  if (value === undefined) return undefined;
  return oneOf(value, ['on', 'off'], flag) === 'on';
}

/** Points the SDK and the adapters at the target before any adapter module loads. */
async function connect(values: Values): Promise<Target> {
  const target = await resolveTarget({
    stack: values.stack ?? process.env.HERALD_STACK,
    region: values.region,
  });
  Object.assign(process.env, target.env);
  // The local stack's DynamoDB Local answers transactions before committing them (commits.ts).
  if (target.kind === 'local') {
    const { awaitLocalCommits } = await import('./local/commits.ts');
    awaitLocalCommits((await import('#shared/clients')).dynamo);
  }
  return target;
}

/** The target's console origin, for enrollment links; an error saying how to get one when unknown. */
function consoleUrlOf(target: Target, stack: string | undefined): string {
  const url = process.env.HERALD_CONSOLE_URL?.trim();
  if (url) return url;
  throw new Error(
    target.kind === 'local'
      ? 'the local stack does not say where its console is (it is from an older Herald): restart it with `npm start`'
      : `stack ${stack} has no ConsoleUrl output (deployed by an older Herald): deploy this version, or set HERALD_CONSOLE_URL to the console's origin`,
  );
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) throw new UsageError('');
  const command = positionals.slice(0, 2).join(' ');
  const known = [
    'org create',
    'user add',
    'user enroll',
    'user list',
    'user role',
    'user remove',
    'key mint',
    'key revoke',
    'key list',
    'channel connect',
    'channel disconnect',
    'channel sync',
    'platform-app set',
    'platform-app list',
    'settings set',
    'plan set',
    'post approve',
    'post reject',
    'audit list',
    'stack protect',
    ...INSPECT_COMMANDS,
    'dlq list',
    'dlq show',
    'dlq redrive',
    'stream replay',
  ];
  if (!known.includes(command) || positionals.length > 2)
    throw new UsageError(`unknown command: ${positionals.join(' ')}`);
  // The operator's own acts: there is nobody to act on behalf of.
  const operatorOnly = ['org create', 'plan set', 'platform-app set', 'platform-app list', 'stack protect'];
  if (values.by !== undefined && (operatorOnly.includes(command) || command.startsWith('channel ')))
    throw new UsageError(`${command} is the operator's act: it takes no --by`);

  // On the CloudFormation stack itself, not on the table.
  if (command === 'stack protect') {
    if (!values.stack)
      throw new UsageError('stack protect needs --stack NAME (the data stack, Herald-<stage>)');
    const { protectStack } = await import('./cli/stack-protect.ts');
    return protectStack({ stack: values.stack, region: values.region });
  }

  // The operator's read-only views (bin/cli/inspect.ts).
  if ((INSPECT_COMMANDS as readonly string[]).includes(command)) {
    const view = inspectJob(command as InspectCommand, values, (m) => new UsageError(m));
    await connect(values);
    return view(await import('#usecases/cli/inspect'));
  }
  if (command.startsWith('dlq ') || command === 'stream replay') return queueCommand(command, values);

  // Validate everything before touching the target.
  const job = (() => {
    switch (command) {
      case 'org create': {
        const args = {
          name: need(values, 'name'),
          plan: oneOf(need(values, 'plan'), PLANS, 'plan'),
          ownerEmail: email(need(values, 'owner-email')),
        };
        return (a: Admin, c: Context) => a.createOrg({ ...args, consoleUrl: c.consoleUrl() });
      }
      case 'user add': {
        const args = {
          orgId: need(values, 'org'),
          email: email(need(values, 'email')),
          role: oneOf(need(values, 'role'), ROLES, 'role'),
          by: opt(values, 'by'),
        };
        return (a: Admin, c: Context) => a.addOrgUser({ ...args, consoleUrl: c.consoleUrl() });
      }
      case 'user enroll': {
        const args = { orgId: need(values, 'org'), userId: need(values, 'id'), by: opt(values, 'by') };
        return (a: Admin, c: Context) => a.enrollUser({ ...args, consoleUrl: c.consoleUrl() });
      }
      case 'user list': {
        const args = { orgId: need(values, 'org'), by: opt(values, 'by') };
        return (a: Admin) => a.listUsers(args);
      }
      case 'user role': {
        const args = {
          orgId: need(values, 'org'),
          userId: need(values, 'id'),
          role: oneOf(need(values, 'role'), ROLES, 'role'),
          by: opt(values, 'by'),
        };
        return (a: Admin) => a.setUserRole(args);
      }
      case 'user remove': {
        const args = { orgId: need(values, 'org'), userId: need(values, 'id'), by: opt(values, 'by') };
        return (a: Admin) => a.removeUser(args);
      }
      case 'key mint': {
        const scopes = need(values, 'scopes')
          .split(',')
          .map((s) => oneOf(s.trim(), SCOPES, 'scopes')) as Scope[];
        const args = { orgId: need(values, 'org'), by: opt(values, 'by'), scopes, name: values.name };
        return (a: Admin) => a.mintKey(args);
      }
      case 'key revoke': {
        const args = { orgId: need(values, 'org'), by: opt(values, 'by'), keyId: need(values, 'id') };
        return (a: Admin) => a.revokeKey(args);
      }
      case 'key list': {
        const args = { orgId: need(values, 'org'), by: opt(values, 'by') };
        return (a: Admin) => a.listKeys(args);
      }
      case 'audit list': {
        const limit = opt(values, 'limit');
        if (limit !== undefined && !/^[1-9][0-9]*$/.test(limit))
          throw new UsageError('--limit is a whole number from 1 to 100');
        const args = {
          orgId: need(values, 'org'),
          by: opt(values, 'by'),
          limit: limit === undefined ? undefined : Number(limit),
          cursor: opt(values, 'cursor'),
        };
        return (a: Admin) => a.auditLog(args);
      }
      case 'channel connect': {
        const orgId = need(values, 'org');
        const platform = oneOf(need(values, 'platform'), PLATFORMS, 'platform');
        if (values.credentials !== undefined) {
          let credentials: unknown;
          try {
            credentials = JSON.parse(values.credentials);
          } catch {
            throw new UsageError('--credentials must be a JSON object');
          }
          const args = { orgId, platform, credentials, channelId: values.channel };
          return (a: Admin) => a.connectChannel(args);
        }
        if (platform === 'bluesky')
          throw new UsageError('bluesky connects with an app password: give --credentials');
        if (platform === 'mastodon' && !values.instance)
          throw new UsageError('mastodon needs --instance https://your.instance');
        const timeoutMs = values.timeout === undefined ? 10 * 60_000 : Number(values.timeout) * 1000;
        if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
          throw new UsageError('--timeout is a number of seconds');
        return (a: Admin) =>
          connectInBrowser(a, {
            orgId,
            platform,
            instance: values.instance,
            channelId: values.channel,
            account: values.account,
            timeoutMs,
          });
      }
      case 'channel disconnect': {
        const args = { orgId: need(values, 'org'), channelId: need(values, 'id') };
        return (a: Admin) => a.disconnect(args);
      }
      case 'channel sync': {
        const args = { orgId: need(values, 'org'), channelId: need(values, 'id') };
        return (a: Admin) => a.syncOne(args);
      }
      case 'platform-app set': {
        const audited =
          values.audited === undefined ? undefined : oneOf(values.audited, ['yes', 'no'], 'audited');
        const alone =
          audited !== undefined && values['client-id'] === undefined && values['client-secret'] === undefined;
        const args = {
          platform: oneOf(need(values, 'platform'), PLATFORMS, 'platform'),
          clientId: alone ? undefined : need(values, 'client-id'),
          clientSecret: alone ? undefined : need(values, 'client-secret'),
          audited: audited === undefined ? undefined : audited === 'yes',
          scopes: values.scopes
            ?.split(',')
            .map((x) => x.trim())
            .filter(Boolean),
          publicUrl: values['public-url'],
        };
        return (a: Admin) => a.setPlatformApp(args);
      }
      case 'platform-app list':
        return (a: Admin) => a.platformApps();
      case 'settings set': {
        const patch: Partial<OrgSettings> = {};
        const d = onOff(values['dangerous-ops'], 'dangerous-ops');
        const r = onOff(values['approval-required'], 'approval-required');
        if (d !== undefined) patch.dangerous_ops = d;
        if (r !== undefined) patch.approval_required = r;
        const origins = values['landing-origins'];
        if (origins !== undefined) patch.landing_origins = landingOrigins(origins);
        if (!Object.keys(patch).length)
          throw new UsageError(
            'give --dangerous-ops on|off, --approval-required on|off and/or --landing-origins URL,URL',
          );
        const args = { orgId: need(values, 'org'), by: opt(values, 'by'), patch };
        return (a: Admin) => a.setSettings(args);
      }
      case 'plan set': {
        const args = {
          orgId: need(values, 'org'),
          plan: oneOf(need(values, 'plan'), PLANS, 'plan'),
          limits: values.limits === undefined ? undefined : parseLimits(values.limits),
        };
        return (a: Admin) => a.setPlan(args);
      }
      case 'post reject': {
        const args = {
          orgId: need(values, 'org'),
          by: opt(values, 'by'),
          postId: need(values, 'id'),
          reason: need(values, 'reason'),
        };
        return (a: Admin) => a.rejectPost(args);
      }
      default: {
        const args = { orgId: need(values, 'org'), by: opt(values, 'by'), postId: need(values, 'id') };
        return (a: Admin) => a.approvePost(args);
      }
    }
  })();

  const target = await connect(values);
  const admin = await import('#usecases/cli/admin');
  return job(admin, { consoleUrl: () => consoleUrlOf(target, values.stack ?? process.env.HERALD_STACK) });
}

/** `dlq list|show|redrive` and `stream replay`: on the queues and the stream, not the table. */
async function queueCommand(command: string, values: Values): Promise<unknown> {
  if (values.by !== undefined) throw new UsageError(`${command} is the operator's act: it takes no --by`);
  const queue =
    command === 'dlq show' || command === 'dlq redrive'
      ? oneOf(need(values, 'queue'), dlqNames(), 'queue')
      : undefined;
  const rawLimit = opt(values, 'limit');
  if (rawLimit !== undefined && !/^[1-9][0-9]*$/.test(rawLimit))
    throw new UsageError('--limit is a whole number from 1 to 100');
  const limit = rawLimit === undefined ? 10 : Number(rawLimit);
  if (limit > 100) throw new UsageError('--limit is a whole number from 1 to 100');
  if (command === 'dlq redrive' && (queue === STREAM_DLQ || queue === 'delivery')) {
    // Refused before touching the target (the reason is the command's own).
    const { redriveRefusal } = await import('./cli/dlq.ts');
    throw new UsageError(redriveRefusal(queue) ?? '');
  }
  const target = await connect(values);
  const ops = await resolveOps({ stack: values.stack ?? process.env.HERALD_STACK, region: values.region });
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  // fauxqs's queue URLs name a host that does not resolve (sqs.<region>.localhost): its endpoint.
  const sqs = new SQSClient(target.kind === 'local' ? { useQueueUrlAsEndpoint: false } : {});
  const dlq = await import('./cli/dlq.ts');
  if (command === 'dlq list') return dlq.listDlqs(sqs, ops);
  if (command === 'dlq show') return dlq.showDlq(sqs, ops, queue as string, limit);
  if (command === 'dlq redrive')
    return dlq.redriveDlq(sqs, ops, queue as string, {
      native: target.kind === 'stack',
      wait: Boolean(values.wait),
    });
  const [{ DynamoDBStreamsClient }, { LambdaClient }, { replayStream }] = await Promise.all([
    import('@aws-sdk/client-dynamodb-streams'),
    import('@aws-sdk/client-lambda'),
    import('./cli/stream-replay.ts'),
  ]);
  return replayStream({ sqs, streams: new DynamoDBStreamsClient({}), lambda: new LambdaClient({}) }, ops, {
    dryRun: Boolean(values['dry-run']),
    dropLost: Boolean(values['drop-lost']),
  });
}

type Admin = typeof import('#usecases/cli/admin');
/** What a command may need of its target besides the table. */
interface Context {
  consoleUrl(): string;
}

/**
 * `channel connect` without credentials: a connection session whose authorize URL the operator
 * opens; the person lands on a page this process serves on loopback, and the command ends with the
 * session (connected: the channel; failed or expired: exit 1 with the reason).
 */
async function connectInBrowser(
  admin: Admin,
  args: {
    orgId: string;
    platform: Platform;
    instance?: string | undefined;
    channelId?: string | undefined;
    account?: string | undefined;
    timeoutMs: number;
  },
) {
  const landing = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><meta charset="utf-8"><title>Herald</title><p>Done: return to the terminal.</p>');
  });
  await new Promise<void>((ok) => landing.listen(0, '127.0.0.1', ok));
  try {
    const redirectUri = `http://127.0.0.1:${(landing.address() as AddressInfo).port}/connected`;
    const { account, timeoutMs: _t, ...start } = args;
    const session = await admin.startConnection({ ...start, redirectUri });
    process.stderr.write(
      `Open this URL to connect the ${args.platform} account:\n\n  ${session.authorize_url}\n\nWaiting…\n`,
    );
    const deadline = Date.now() + args.timeoutMs;
    for (;;) {
      const now = await admin.connectionOf(args.orgId, session.id);
      if (now.status === 'selecting_account' && account)
        return (await admin.selectAccount(args.orgId, session.id, account)).channel;
      if (now.status === 'selecting_account')
        throw new Error(
          `the grant covers several accounts (${(now.accounts ?? []).map((a) => `${a.id} ${a.handle}`).join(', ')}): run again with --account ID, or pick one with POST /v1/channel-connections/${session.id}/select`,
        );
      if (now.status === 'connected') return now.channel;
      if (now.status === 'failed' || now.status === 'expired')
        throw new Error(
          `not connected: ${now.error ? `${now.error.code}: ${now.error.message}` : now.status}`,
        );
      if (Date.now() > deadline)
        throw new Error('gave up waiting (--timeout); the session stays open until it expires');
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    landing.close();
  }
}

/** `api_requests=5000,burst=10`: overrides of the plan's allowances, positive integers. */
function parseLimits(value: string): Partial<Limits> {
  const out: Partial<Limits> = {};
  for (const part of value.split(',').filter(Boolean)) {
    const [name, raw] = part.split('=').map((s) => s.trim());
    const key = oneOf(name ?? '', LIMIT_KEYS, 'limits');
    if (!raw || !/^[1-9][0-9]{0,8}$/.test(raw))
      throw new UsageError(`--limits ${key} must be a positive integer`);
    out[key] = Number(raw);
  }
  return out;
}

/** `https://app.example.com,http://localhost:5173`: each an origin, normalized; '' is none. */
function landingOrigins(value: string): string[] {
  const out = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((raw) => {
      const origin = landingOrigin(raw);
      if (!origin)
        throw new UsageError(
          `--landing-origins: ${raw} is not an origin; give scheme, host and port only, like https://app.example.com (no path, query, fragment or user name)`,
        );
      return origin;
    });
  return [...new Set(out)];
}

function email(value: string): string {
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) throw new UsageError(`not an email address: ${value}`);
  return value;
}

interface Shown {
  enrollment?: { url: string; expires_at: string };
  emailed?: boolean;
  email?: string;
  owner?: { email: string };
}

/** The result as JSON, and an enrollment link again on its own lines, where it is easy to copy. */
function human(result: unknown): string {
  if (result instanceof View) return result.render();
  const text = JSON.stringify(result, null, 2);
  const shown = (result ?? {}) as Shown;
  if (!shown.enrollment) return text;
  const who = shown.owner?.email ?? shown.email;
  return [
    text,
    '',
    `Enrollment link${who ? ` for ${who}` : ''} (works once, until ${shown.enrollment.expires_at}${shown.emailed ? '; also e-mailed' : ''}):`,
    '',
    `  ${shown.enrollment.url}`,
  ].join('\n');
}

const argv = process.argv.slice(2);
const json = argv.includes('--json');
run(argv).then(
  (result) => {
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${human(result)}\n`);
  },
  (err: unknown) => {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const message = err instanceof Error ? err.message : String(err);
    if (json)
      process.stderr.write(
        `${JSON.stringify({ error: message || 'usage', kind: usage ? 'usage' : ((err as { kind?: string }).kind ?? 'error') })}\n`,
      );
    else process.stderr.write(`${message ? `herald: ${message}\n` : ''}${usage ? `\n${USAGE}\n` : ''}`);
    process.exitCode = usage ? 2 : 1;
  },
);
