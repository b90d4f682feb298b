import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { freePort } from '../../bin/local/services.ts';
import { PLATFORMS } from '../../functions/core/constants.ts';
import { type RunningStack, startLocalStack } from '../support/local-stack.ts';
import { ALL_SCOPES, CREDENTIALS } from './helpers.ts';

// A local stack of a crash test's own, on its own data directory and port, so the test can kill it
// (SIGKILL to its whole process group, DynamoDB Local's JVM included) and start it again on the
// same data. The shared stack of the other e2e files is never touched.

type Json = Record<string, unknown>;
const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const verbose = Boolean(process.env.HERALD_E2E_VERBOSE);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Tenant {
  key: string;
  orgId: string;
  channels: Record<string, string>;
}

export class CrashStack {
  dir = '';
  port = 0;
  stack!: RunningStack;

  /** Makes the data directory and picks the port; call once, before the first boot. */
  async open(prefix: string): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), prefix));
    this.port = await freePort();
  }

  /** Starts the stack (again) on the same data and port, pointed at the contract fakes. */
  async boot(env: Record<string, string> = {}): Promise<void> {
    const fakes = inject('fakesOrigin');
    this.stack = await startLocalStack(
      {
        ...Object.fromEntries(
          PLATFORMS.map((p) => [`HERALD_PLATFORM_${p.toUpperCase()}_URL`, `${fakes}/${p}`]),
        ),
        HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
        ...env,
      },
      verbose,
      { dataDir: this.dir, port: this.port, detached: true },
    );
  }

  async close(): Promise<void> {
    await this.stack?.kill();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }

  async call<T = Json>(method: string, path: string, key: string, body?: unknown) {
    const res = await fetch(`${this.stack.baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T, text };
  }

  /** The admin CLI on this stack's data directory. */
  async admin(...args: string[]): Promise<Json> {
    const { stdout } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args, '--json'], {
      env: { ...process.env, HERALD_DATA_DIR: this.dir },
      cwd: root,
    });
    return JSON.parse(stdout) as Json;
  }

  /** Polls `fn` until it returns a value; on timeout, fails with the stack's last output. */
  async until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await fn().catch(() => undefined);
      if (v !== undefined) return v;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}\n${this.stack.output().slice(-3000)}`);
      await sleep(200);
    }
  }

  /** An organization on the agency plan with dangerous ops on, a key of `scopes`, one channel per platform. */
  async tenant(platforms: string[], scopes = ALL_SCOPES): Promise<Tenant> {
    const created = await this.admin(
      'org',
      'create',
      '--name',
      'Crash',
      '--plan',
      'agency',
      '--owner-email',
      `o${Date.now()}@e2e.test`,
    );
    const orgId = (created.org as Json).id as string;
    const ownerId = (created.owner as Json).id as string;
    const key = (await this.admin('key', 'mint', '--org', orgId, '--by', ownerId, '--scopes', scopes))
      .key as string;
    await this.admin('settings', 'set', '--org', orgId, '--by', ownerId, '--dangerous-ops', 'on');
    const channels: Record<string, string> = {};
    for (const p of platforms)
      channels[p] = (
        await this.admin(
          'channel',
          'connect',
          '--org',
          orgId,
          '--platform',
          p,
          '--credentials',
          JSON.stringify(CREDENTIALS[p]),
        )
      ).id as string;
    return { key, orgId, channels };
  }
}
