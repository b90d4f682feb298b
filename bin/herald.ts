// The admin CLI (README, "The admin CLI"). It talks to the table directly, with the same use cases the
// handlers use: against the running local stack by default, or a deployment with --stack.
import { parseArgs } from 'node:util';
import { ROLES } from '#core/accounts';
import { PLATFORMS } from '#core/constants';
import { LIMIT_KEYS, type Limits, PLAN_NAMES as PLANS } from '#core/plans';
import { SCOPES, type Scope } from '#lib/operations';
import { resolveTarget } from './cli/target.ts';

const USAGE = `Usage: herald <command> [options] [--json] [--stack NAME] [--region R]

Commands:
  org create      --name N --plan free|starter|team|agency --owner-email E
  user add        --org ORG --email E --role owner|admin|member
  key mint        --org ORG --by USER --scopes s1,s2 [--name N]
  key revoke      --org ORG --by USER --id KEY_ID
  key list        --org ORG
  channel connect --org ORG --platform P --handle H [--credentials JSON]
  settings set    --org ORG --by USER [--dangerous-ops on|off] [--approval-required on|off]
  plan set        --org ORG --plan P [--limits api_requests=N,burst=N,posts_per_month=N,channels=N]
  post approve    --org ORG --by USER --id POST_ID

Target: the local stack under $HERALD_DATA_DIR (default .herald) started by \`npm start\`;
with --stack NAME (or $HERALD_STACK) the deployed CloudFormation stack, using your AWS credentials.`;

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
  limits: { type: 'string' },
  'dangerous-ops': { type: 'string' },
  'approval-required': { type: 'string' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

function need(values: Values, name: keyof Values): string {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new UsageError(`--${name} is required`);
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
async function connect(values: Values): Promise<void> {
  const target = await resolveTarget({
    stack: values.stack ?? process.env.HERALD_STACK,
    region: values.region,
  });
  Object.assign(process.env, target.env);
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) throw new UsageError('');
  const command = positionals.slice(0, 2).join(' ');
  const known = [
    'org create',
    'user add',
    'key mint',
    'key revoke',
    'key list',
    'channel connect',
    'settings set',
    'plan set',
    'post approve',
  ];
  if (!known.includes(command) || positionals.length > 2)
    throw new UsageError(`unknown command: ${positionals.join(' ')}`);

  // Validate everything before touching the target.
  const job = (() => {
    switch (command) {
      case 'org create': {
        const args = {
          name: need(values, 'name'),
          plan: oneOf(need(values, 'plan'), PLANS, 'plan'),
          ownerEmail: email(need(values, 'owner-email')),
        };
        return (a: Admin) => a.createOrg(args);
      }
      case 'user add': {
        const args = {
          orgId: need(values, 'org'),
          email: email(need(values, 'email')),
          role: oneOf(need(values, 'role'), ROLES, 'role'),
        };
        return (a: Admin) => a.addOrgUser(args);
      }
      case 'key mint': {
        const scopes = need(values, 'scopes')
          .split(',')
          .map((s) => oneOf(s.trim(), SCOPES, 'scopes')) as Scope[];
        const args = { orgId: need(values, 'org'), by: need(values, 'by'), scopes, name: values.name };
        return (a: Admin) => a.mintKey(args);
      }
      case 'key revoke': {
        const args = { orgId: need(values, 'org'), by: need(values, 'by'), keyId: need(values, 'id') };
        return (a: Admin) => a.revokeKey(args);
      }
      case 'key list': {
        const orgId = need(values, 'org');
        return (a: Admin) => a.listKeys(orgId);
      }
      case 'channel connect': {
        let credentials: unknown;
        if (values.credentials !== undefined) {
          try {
            credentials = JSON.parse(values.credentials);
          } catch {
            throw new UsageError('--credentials must be a JSON object');
          }
        }
        const args = {
          orgId: need(values, 'org'),
          platform: oneOf(need(values, 'platform'), PLATFORMS, 'platform'),
          handle: need(values, 'handle'),
          credentials,
        };
        return (a: Admin) => a.connectChannel(args);
      }
      case 'settings set': {
        const patch: Record<string, boolean> = {};
        const d = onOff(values['dangerous-ops'], 'dangerous-ops');
        const r = onOff(values['approval-required'], 'approval-required');
        if (d !== undefined) patch.dangerous_ops = d;
        if (r !== undefined) patch.approval_required = r;
        if (!Object.keys(patch).length)
          throw new UsageError('give --dangerous-ops on|off and/or --approval-required on|off');
        const args = { orgId: need(values, 'org'), by: need(values, 'by'), patch };
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
      default: {
        const args = { orgId: need(values, 'org'), by: need(values, 'by'), postId: need(values, 'id') };
        return (a: Admin) => a.approvePost(args);
      }
    }
  })();

  await connect(values);
  const admin = await import('#usecases/admin');
  return job(admin);
}

type Admin = typeof import('#usecases/admin');

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

function email(value: string): string {
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) throw new UsageError(`not an email address: ${value}`);
  return value;
}

function human(result: unknown): string {
  return JSON.stringify(result, null, 2);
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
