import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

// `herald settings set --landing-origins`: what is not an origin is bad usage (exit 2), refused
// before the CLI looks for a target, so no stack is needed here.

const run = promisify(execFile);
const root = join(import.meta.dirname, '../../..');
/** A data directory no local stack runs for: reaching the target fails with exit 1. */
const nowhere = mkdtempSync(join(tmpdir(), 'herald-cli-'));

async function herald(...args: string[]) {
  try {
    await run(process.execPath, [join(root, 'bin/herald.js'), ...args, '--json'], {
      cwd: root,
      env: { ...process.env, HERALD_DATA_DIR: nowhere },
    });
    return { code: 0, stderr: '' };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

const settings = (origins: string) =>
  herald('settings', 'set', '--org', 'org_x', '--by', 'usr_x', '--landing-origins', origins);

describe('herald settings set --landing-origins', () => {
  it.each([
    'https://app.example.com/connected',
    'https://app.example.com?x=1',
    'https://app.example.com,app.example.com',
    'https://user@app.example.com',
    'ftp://app.example.com',
  ])('refuses %s as bad usage (exit 2) and says what an origin is', async (origins) => {
    const res = await settings(origins);
    expect(res.code).toBe(2);
    expect(JSON.parse(res.stderr)).toMatchObject({
      kind: 'usage',
      error: expect.stringMatching(/--landing-origins: .* is not an origin; give scheme, host and port only/),
    });
  });

  it('takes origins (and the empty list) and only then looks for the target', async () => {
    for (const origins of ['https://app.example.com, http://localhost:5173', '']) {
      const res = await settings(origins);
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toMatch(/no local stack is running/);
    }
  });
});
