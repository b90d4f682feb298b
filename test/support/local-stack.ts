import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// Starts `npm start`'s entry (the real local stack) on a free port with a fresh data directory;
// shared by the e2e global setup and the benchmarks.

export interface RunningStack {
  baseUrl: string;
  dataDir: string;
  /** The stack's process (with `detached`, also its process group). */
  pid: number;
  /** What it printed so far (stdout and stderr). */
  output(): string;
  /** kill -9 of its whole process group (needs `detached`): no shutdown, nothing flushed. */
  kill(): Promise<void>;
  /** A clean stop (SIGTERM), then removes the data directory unless it was given. */
  stop(): Promise<void>;
}

export interface StackOptions {
  /** Reuse this data directory (a restart); kept on stop. Default: a fresh temporary one. */
  dataDir?: string;
  /** Default: any free port. */
  port?: number;
  /** Its own process group, so kill() reaches DynamoDB Local's JVM too. */
  detached?: boolean;
}

/** How long a stack may take to print `herald ready` (a loaded 2-core machine starts the JVM slowly). */
const READY_TIMEOUT_MS = 90_000;

export async function startLocalStack(
  env: Record<string, string> = {},
  verbose = false,
  opts: StackOptions = {},
): Promise<RunningStack> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'herald-stack-'));
  const root = resolve(import.meta.dirname, '../..');
  // BENCH_STACK_NODE_ARGS: extra node flags for the stack's process (e.g. `--cpu-prof`, which
  // NODE_OPTIONS refuses), for profiling a benchmark.
  const nodeArgs = process.env.BENCH_STACK_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child: ChildProcess = spawn(
    process.execPath,
    [...nodeArgs, '--import', 'tsx', join(root, 'bin/local.ts')],
    {
      cwd: root,
      env: {
        ...process.env,
        ...env,
        HERALD_DATA_DIR: dataDir,
        PORT: String(opts.port ?? 0),
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: opts.detached ?? false,
    },
  );
  let log = '';
  const baseUrl = await new Promise<string>((ok, fail) => {
    // A stack that never got ready is stopped, JVM and all, rather than left running after the test.
    const timer = setTimeout(() => {
      if (child.pid && child.exitCode === null) {
        try {
          if (opts.detached) process.kill(-child.pid, 'SIGKILL');
          else child.kill('SIGKILL');
        } catch {
          // Gone already.
        }
      }
      fail(new Error(`local stack did not become ready in ${READY_TIMEOUT_MS / 1000} s:\n${log}`));
    }, READY_TIMEOUT_MS);
    child.stdout?.on('data', (d: Buffer) => {
      log += d.toString();
      if (verbose) process.stderr.write(d);
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
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const gone = () => new Promise<void>((r) => (exited() ? r() : child.once('exit', () => r())));
  return {
    baseUrl,
    dataDir,
    pid: child.pid as number,
    output: () => log,
    kill: async () => {
      if (!exited()) process.kill(-(child.pid as number), 'SIGKILL');
      await gone();
      // The JVM is in the group too; give the kernel a moment to release its port and files.
      await new Promise((r) => setTimeout(r, 200));
    },
    stop: async () => {
      if (!exited()) {
        child.kill('SIGTERM');
        await Promise.race([gone(), new Promise((r) => setTimeout(r, 10_000))]);
        if (!exited()) {
          // Its shutdown did not finish (e.g. after a burst): killed, it cannot stop DynamoDB
          // Local, whose JVM would run on, orphaned, under the next benchmark or test.
          child.kill('SIGKILL');
          await gone();
          killProcessesUsing(dataDir);
        }
      }
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** SIGKILLs every process whose command line names `dir` (the stack's DynamoDB Local: `-dbPath <dir>/…`). Linux. */
function killProcessesUsing(dir: string): void {
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${dir}/`))
        process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
}
