import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// `npm start` itself: ready line, clean shutdown on SIGINT/SIGTERM with nothing left running, and a
// clear message when Java is missing.

const root = resolve(import.meta.dirname, '../..');

function processesMentioning(text: string): string[] {
  return execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(text) && !line.includes('ps -eo'));
}

async function startStack(dataDir: string, env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin/local.ts')], {
    cwd: root,
    env: { ...env, HERALD_DATA_DIR: dataDir, PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, exited, output: () => out };
}

describe('npm start', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`stops everything it started on ${signal}`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'herald-life-'));
      try {
        const stack = await startStack(dir);
        const deadline = Date.now() + 45_000;
        while (!/herald ready http:\/\/127\.0\.0\.1:\d+/.test(stack.output()) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(stack.output()).toMatch(/^herald ready http:\/\/127\.0\.0\.1:\d+$/m);
        expect(existsSync(join(dir, 'stack.json'))).toBe(true);
        expect(processesMentioning(dir).length).toBeGreaterThan(0);

        stack.child.kill(signal);
        expect(await stack.exited).toBe(0);
        // DynamoDB Local (java, started with -dbPath under the data dir) is gone too.
        expect(processesMentioning(dir)).toEqual([]);
        expect(existsSync(join(dir, 'stack.json'))).toBe(false);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 90_000);
  }

  it('explains that Java 17+ is needed when java is missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'herald-nojava-'));
    try {
      // A PATH with node and nothing else.
      mkdirSync(join(dir, 'bin'));
      symlinkSync(process.execPath, join(dir, 'bin', 'node'));
      const stack = await startStack(dir, { ...process.env, PATH: join(dir, 'bin') });
      expect(await stack.exited).toBe(1);
      expect(stack.output()).toMatch(/needs Java 17 or newer/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
