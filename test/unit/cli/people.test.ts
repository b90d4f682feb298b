import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// The CLI's commands for an organization's people: bad usage is refused (exit 2) before the CLI
// looks for a target, and a command that issues an enrollment link fails clearly (exit 1) when the
// target does not say where its console is. No stack is needed here.

const run = promisify(execFile);
const root = join(import.meta.dirname, '../../..');
/** A data directory no local stack runs for. */
const nowhere = mkdtempSync(join(tmpdir(), 'herald-cli-'));

async function herald(dataDir: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, HERALD_DATA_DIR: dataDir };
  delete env.HERALD_CONSOLE_URL;
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

describe('herald: people, keys and the audit log', () => {
  it.each([
    [['user', 'enroll', '--org', 'org_x'], /--id is required/],
    [['user', 'role', '--org', 'org_x', '--id', 'usr_x', '--role', 'root'], /--role must be one of/],
    [['key', 'mint', '--org', 'org_x', '--scopes', 'posts:read', '--by', ' '], /--by needs a value/],
    [['audit', 'list', '--org', 'org_x', '--limit', '0'], /--limit is a whole number/],
    [['plan', 'set', '--org', 'org_x', '--plan', 'team', '--by', 'usr_x'], /plan set is the operator's act/],
    [['channel', 'sync', '--org', 'org_x', '--id', 'ch_x', '--by', 'usr_x'], /takes no --by/],
    [['post', 'reject', '--org', 'org_x', '--id', 'post_x'], /--reason is required/],
  ])('refuses %j as bad usage (exit 2)', async (args, message) => {
    const res = await herald(nowhere, ...args, '--json');
    expect(res.code).toBe(2);
    expect(JSON.parse(res.stderr)).toMatchObject({ kind: 'usage', error: expect.stringMatching(message) });
  });

  it('takes the commands without --by, and only then looks for the target', async () => {
    for (const args of [
      ['key', 'mint', '--org', 'org_x', '--scopes', 'posts:read'],
      ['settings', 'set', '--org', 'org_x', '--dangerous-ops', 'on'],
      ['post', 'approve', '--org', 'org_x', '--id', 'post_x'],
      ['post', 'reject', '--org', 'org_x', '--id', 'post_x', '--reason', 'Off-brand'],
      ['user', 'list', '--org', 'org_x'],
      ['audit', 'list', '--org', 'org_x', '--limit', '10'],
    ]) {
      const res = await herald(nowhere, ...args);
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toMatch(/no local stack is running/);
    }
  });

  it('documents the new commands and --by in its help', async () => {
    const res = await herald(nowhere, '--help');
    expect(res.code).toBe(2);
    for (const text of [
      'user enroll',
      'user list',
      'user role',
      'user remove',
      'audit list',
      'post reject',
      '--by USER',
    ])
      expect(res.stderr).toContain(text);
  });

  it('refuses to issue an enrollment link when the local stack does not say where its console is', async () => {
    // Arrange: a "running" local stack (this process) from before the console.
    const dir = mkdtempSync(join(tmpdir(), 'herald-cli-stack-'));
    writeFileSync(
      join(dir, 'stack.json'),
      JSON.stringify({
        pid: process.pid,
        baseUrl: 'http://127.0.0.1:1',
        dynamodbEndpoint: 'http://127.0.0.1:1',
        dynamodbCredentials: { accessKeyId: 'HERALDTESTKEY0000000', secretAccessKey: 's3cret' },
        sqsEndpoint: 'x',
        tableName: 'herald',
        cliEnv: {},
        queues: {},
      }),
    );

    // Act
    const res = await herald(
      dir,
      'org',
      'create',
      '--name',
      'A',
      '--plan',
      'free',
      '--owner-email',
      'a@a.test',
    );

    // Assert
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/does not say where its console is .* restart it/);
  });
});
