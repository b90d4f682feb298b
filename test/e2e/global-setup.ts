import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';

// Starts the real local stack (`npm start`'s entry) on a free port with a fresh data directory,
// hands its URL and data directory to the tests, and stops it afterwards.

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
    dataDir: string;
  }
}

let child: ChildProcess | undefined;
let dataDir: string | undefined;

export async function setup(project: TestProject) {
  dataDir = mkdtempSync(join(tmpdir(), 'herald-e2e-'));
  const root = resolve(import.meta.dirname, '../..');
  child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin/local.ts')], {
    cwd: root,
    env: { ...process.env, HERALD_DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const baseUrl = await new Promise<string>((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`local stack did not become ready in 60 s:\n${log}`)),
      60_000,
    );
    child?.stdout?.on('data', (d: Buffer) => {
      log += d.toString();
      const m = /herald ready (\S+)/.exec(log);
      if (m?.[1]) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    child?.stderr?.on('data', (d: Buffer) => {
      log += d.toString();
      if (process.env.HERALD_E2E_VERBOSE) process.stderr.write(d);
    });
    child?.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`local stack exited with ${code}:\n${log}`));
    });
  });
  project.provide('baseUrl', baseUrl);
  project.provide('dataDir', dataDir);
}

export async function teardown() {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child?.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}
