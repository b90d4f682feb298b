import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// Starts `npm start`'s entry (the real local stack) on a free port with a fresh data directory;
// shared by the e2e global setup and the benchmarks.

export interface RunningStack {
  baseUrl: string;
  dataDir: string;
  stop(): Promise<void>;
}

export async function startLocalStack(
  env: Record<string, string> = {},
  verbose = false,
): Promise<RunningStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'herald-stack-'));
  const root = resolve(import.meta.dirname, '../..');
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin/local.ts')], {
    cwd: root,
    env: { ...process.env, ...env, HERALD_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const baseUrl = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`local stack did not become ready in 60 s:\n${log}`)),
      60_000,
    );
    child.stdout?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /herald ready (\S+)/.exec(log);
      if (m?.[1]) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    child.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      if (verbose) process.stderr.write(d);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`local stack exited with ${code}:\n${log}`));
    });
  });
  return {
    baseUrl,
    dataDir,
    stop: async () => {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
