import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { aligned, inspectJob, parseDuration, View } from '../../../bin/cli/inspect.ts';

// The operator's views on the command line: their options are checked before the CLI looks for a
// target (bad usage: exit 2), and what they print. The reads themselves: usecases/cli/inspect.test.ts
// and the e2e test on the local stack.

const run = promisify(execFile);
const root = join(import.meta.dirname, '../../..');
const nowhere = mkdtempSync(join(tmpdir(), 'herald-cli-'));

async function herald(...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, HERALD_DATA_DIR: nowhere };
  delete env.HERALD_STACK;
  try {
    const { stdout } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args], {
      cwd: root,
      env,
    });
    return { code: 0, stdout, stderr: '' };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const usage = (m: string) => new Error(m);

describe('herald post get, posts stuck, channels failing', () => {
  it.each([
    [
      ['post', 'get', '--id', 'post_x'],
      /--org is required \(post ids are found only within their organization\)/,
    ],
    [['post', 'get', '--org', 'org_x'], /--id is required/],
    [['posts', 'stuck', '--older-than', '30 minutes'], /--older-than is a duration like 30m/],
    [['posts', 'stuck', '--older-than=-5m'], /--older-than is a duration/],
    [['posts', 'stuck', '--lookback', '100d'], /--lookback is at most 90d/],
    [
      ['posts', 'stuck', '--older-than', '2d', '--lookback', '1d'],
      /--lookback must be longer than --older-than/,
    ],
    [['channels', 'failing', '--by', 'usr_x'], /takes no --by/],
    [['channels', 'failing', 'now'], /unknown command/],
  ])('refuses %j as bad usage (exit 2)', async (args, message) => {
    const res = await herald(...args, '--json');
    expect(res.code).toBe(2);
    expect(JSON.parse(res.stderr)).toMatchObject({ kind: 'usage', error: expect.stringMatching(message) });
  });

  it('takes good options, and only then looks for the target', async () => {
    for (const args of [
      ['post', 'get', '--org', 'org_x', '--id', 'post_x'],
      ['posts', 'stuck'],
      ['posts', 'stuck', '--older-than', '0m', '--lookback', '2h'],
      ['channels', 'failing'],
    ]) {
      const res = await herald(...args);
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toMatch(/no local stack is running/);
    }
  });

  it('reads durations in seconds, minutes, hours and days', () => {
    expect(parseDuration('45s', 'x', usage)).toBe(45_000);
    expect(parseDuration('30m', 'x', usage)).toBe(1_800_000);
    expect(parseDuration('2h', 'x', usage)).toBe(7_200_000);
    expect(parseDuration('1d', 'x', usage)).toBe(86_400_000);
    expect(parseDuration('0m', 'x', usage)).toBe(0);
    expect(() => parseDuration('1.5h', 'older-than', usage)).toThrow(/--older-than is a duration/);
    expect(() => parseDuration('m', 'x', usage)).toThrow();
  });

  it('prints aligned columns for a person and the data itself as JSON', () => {
    expect(
      aligned([
        ['ORG', 'POST', 'WHY'],
        ['org_1', 'post_22', null],
        ['org_333', 'post_4', 'lease_expired'],
      ]),
    ).toBe('ORG      POST     WHY\norg_1    post_22  -\norg_333  post_4   lease_expired');
    const view = View.of({ stuck: [1] }, (d) => `${d.stuck.length} stuck`);
    expect(JSON.stringify(view)).toBe('{"stuck":[1]}');
    expect(view.render()).toBe('1 stuck');
  });

  it("prints a person's lines: one row per stuck channel, one per failing channel, and a count", async () => {
    const finding = {
      org_id: 'org_1',
      post_id: 'post_1',
      status: 'publishing',
      channel_id: 'ch_1',
      stage: 'sending',
      why: 'lease_expired',
      since: '2030-06-10T09:00:00.000Z',
      attempts: 2,
      error_category: 'platform_error',
      error: 'HTTP 502\nBad gateway',
    };
    const uc = {
      stuckPosts: async () => ({
        now: '',
        older_than_seconds: 1800,
        lookback_seconds: 86_400,
        buckets_read: 1441,
        posts_read: 3,
        stuck: [finding],
      }),
      failingChannels: async () => ({ now: '', channels_read: 5, channels: [] }),
    } as unknown as Parameters<ReturnType<typeof inspectJob>>[0];

    const stuck = (await inspectJob('posts stuck', {}, usage)(uc)).render().split('\n');
    const failing = (await inspectJob('channels failing', {}, usage)(uc)).render();

    expect(stuck[0]).toMatch(/^ORG\s+POST\s+STATUS\s+CHANNEL\s+STAGE\s+WHY\s+SINCE\s+ATTEMPTS\s+ERROR$/);
    expect(stuck[1]).toMatch(
      /^org_1\s+post_1\s+publishing\s+ch_1\s+sending\s+lease_expired\s+2030-06-10T09:00:00.000Z\s+2\s+platform_error: HTTP 502 Bad gateway$/,
    );
    expect(stuck.at(-1)).toBe('1 stuck (older than 1800 s; 3 posts read from 1441 minute buckets)');
    expect(failing).toBe('0 failing (5 channels read)');
  });
});
