import type * as fs from 'node:fs';

// File-system faults for the local stack's durability tests: `vi.mock('node:fs', faultyFs)` makes
// the code under test call through this layer, which records each call (with the path, also for
// calls on a descriptor) and fails, delays or cuts short the ones a test asks for.

export interface Fault {
  /** The fs function, e.g. 'rename', 'write', 'fsyncSync'. */
  op: string;
  /** Matched against the call's path (the file a descriptor was opened on). */
  path: RegExp;
  /** How many calls it applies to. */
  times: number;
  /** Fails with this error code (default ENOSPC), unless `delayMs` or `partial`. */
  code?: string;
  /** Runs the call this much later instead. */
  delayMs?: number;
  /** A write that writes half its bytes, then fails on the next write to the same file. */
  partial?: boolean;
}

export const faultState = {
  faults: [] as Fault[],
  calls: [] as Array<{ op: string; path: string; to?: string }>,
  paths: new Map<number, string>(),
};

export function injectFault(fault: Fault): void {
  faultState.faults.push(fault);
}

export function clearFaults(): void {
  faultState.faults = [];
  faultState.calls = [];
}

const FD_OPS = new Set([
  'write',
  'writeSync',
  'fsync',
  'fsyncSync',
  'fdatasync',
  'ftruncate',
  'close',
  'closeSync',
]);
/** Calls by path, and the descriptor calls above: every one may fail, stall or half-complete. */
const WRAPPED = ['open', 'openSync', ...FD_OPS, 'rename', 'renameSync', 'unlink', 'rmSync', 'truncateSync'];

/** The factory for `vi.mock('node:fs', faultyFs)`. */
export async function faultyFs(importOriginal: () => Promise<typeof fs>): Promise<typeof fs> {
  const real = await importOriginal();
  const table = real as unknown as Record<string, (...args: unknown[]) => unknown>;
  const pathOf = (op: string, args: unknown[]) =>
    FD_OPS.has(op) ? (faultState.paths.get(args[0] as number) ?? `fd:${String(args[0])}`) : String(args[0]);
  const take = (op: string, path: string) => {
    const f = faultState.faults.find((x) => x.op === op && x.times > 0 && x.path.test(path));
    if (f) f.times--;
    return f;
  };
  const failure = (f: Fault, op: string, path: string) =>
    Object.assign(new Error(`${f.code ?? 'ENOSPC'}: injected fault, ${op} '${path}'`), {
      code: f.code ?? 'ENOSPC',
    });
  const wrapped: Record<string, unknown> = {};
  for (const op of WRAPPED) {
    const fn = table[op] as (...args: unknown[]) => unknown;
    const sync = op.endsWith('Sync');
    wrapped[op] = (...args: unknown[]) => {
      const path = pathOf(op, args);
      faultState.calls.push({
        op,
        path,
        ...(op.startsWith('rename') ? { to: String(args[1]) } : {}),
      });
      const f = take(op, path);
      if (sync) {
        if (f) throw failure(f, op, path);
        const out = fn(...args);
        if (op === 'openSync') faultState.paths.set(out as number, path);
        if (op === 'renameSync') renamed(path, String(args[1]));
        return out;
      }
      const cb = args.at(-1) as (err: unknown, value?: unknown) => void;
      const rest = args.slice(0, -1);
      const call = (more: unknown[] = rest) =>
        fn(...more, (err: unknown, value: unknown) => {
          if (!err && op === 'open') faultState.paths.set(value as number, path);
          if (!err && op === 'rename') renamed(path, String(rest[1]));
          cb(err, value);
        });
      if (!f) return call();
      if (f.delayMs !== undefined) return void setTimeout(() => call(), f.delayMs);
      if (f.partial && op === 'write') {
        // write(fd, buffer, offset, length, position): half of it, then the next write fails.
        const length = rest[3] as number;
        faultState.faults.push({ op: 'write', path: new RegExp(`^${literal(path)}$`), times: 1 });
        return call([rest[0], rest[1], rest[2], Math.max(1, Math.floor(length / 2)), rest[4]]);
      }
      process.nextTick(cb, failure(f, op, path));
    };
  }
  return { ...real, ...wrapped, default: { ...real, ...wrapped } } as typeof fs;
}

/** A descriptor follows its file through a rename. */
function renamed(from: string, to: string): void {
  for (const [fd, p] of faultState.paths) if (p === from) faultState.paths.set(fd, to);
}

const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
