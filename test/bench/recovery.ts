import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { machine, ROOT, today } from './support.ts';

// Recovery after kill -9: runs the e2e crash tests (test/e2e/durability.test.ts), which kill the
// local stack's whole process group at the moments that matter and restart it on the same data,
// and reports what they measured: how long a restart takes, and how long after `herald ready`
// each kind of interrupted work was done.

export interface RecoveryResult {
  restartsMs: number[];
  afterReadyMs: Record<string, number>;
}

export async function benchRecovery(): Promise<RecoveryResult> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-recovery-'));
  const file = join(dir, 'report.json');
  try {
    await promisify(execFile)(
      process.execPath,
      [
        join(ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--project',
        'e2e',
        'test/e2e/durability.test.ts',
      ],
      { cwd: ROOT, env: { ...process.env, HERALD_RECOVERY_REPORT: file }, maxBuffer: 64 * 1024 * 1024 },
    );
    return JSON.parse(readFileSync(file, 'utf8')) as RecoveryResult;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function recoverySection(r: RecoveryResult): string {
  const sorted = [...r.restartsMs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  return [
    `Run of ${today()} on ${machine()}: the e2e crash tests (\`test/e2e/durability.test.ts\`), \`kill -9\``,
    'of the whole process group (DynamoDB Local’s JVM included), then `npm start` again on the same data.',
    `A restart to \`herald ready\`: median ${(median / 1000).toFixed(1)} s, ${(sorted[0] ?? 0) / 1000}–${(sorted.at(-1) ?? 0) / 1000} s over ${sorted.length} restarts.`,
    '',
    '| Interrupted work | Done after `herald ready` |',
    '| --- | --- |',
    ...Object.entries(r.afterReadyMs).map(([what, ms]) => `| ${what} | ${(ms / 1000).toFixed(1)} s |`),
    '',
    'Work in flight waits for its queue’s visibility timeout (120 s for deliveries and webhook',
    'attempts, counted from its receive before the crash), as on SQS; everything else resumes at once.',
  ].join('\n');
}
