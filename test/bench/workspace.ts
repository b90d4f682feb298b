import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './support.ts';

// A benchmark workspace on a running local stack, made with the admin CLI as an operator would:
// an agency org whose limits never throttle the load, a key, and one Mastodon channel.

const run = promisify(execFile);

export interface BenchWorkspace {
  org: string;
  key: string;
  channel: string;
}

export async function benchWorkspace(
  dataDir: string,
  opts: { name: string; scopes: string; mastodonInstance: string; env?: Record<string, string> },
): Promise<BenchWorkspace> {
  const cli = async (...args: string[]) =>
    JSON.parse(
      (
        await run(process.execPath, [join(ROOT, 'bin/herald.js'), ...args, '--json'], {
          env: { ...process.env, ...opts.env, HERALD_DATA_DIR: dataDir },
        })
      ).stdout,
    ) as Record<string, unknown>;
  const email = `${opts.name.toLowerCase()}@example.com`;
  const created = (await cli(
    'org',
    'create',
    '--name',
    opts.name,
    '--plan',
    'agency',
    '--owner-email',
    email,
  )) as {
    org: { id: string };
    owner: { id: string };
  };
  const org = created.org.id;
  const owner = created.owner.id;
  await cli(
    'plan',
    'set',
    '--org',
    org,
    '--plan',
    'agency',
    '--limits',
    'burst=100000000,api_requests=999999999,posts_per_month=100000000',
  );
  const key = (await cli('key', 'mint', '--org', org, '--by', owner, '--scopes', opts.scopes)).key as string;
  const channel = (
    await cli(
      'channel',
      'connect',
      '--org',
      org,
      '--platform',
      'mastodon',
      '--handle',
      opts.name.toLowerCase(),
      '--credentials',
      JSON.stringify({ instance: opts.mastodonInstance, access_token: 'token' }),
    )
  ).id as string;
  return { org, key, channel };
}
