import { type ChildProcess, fork, spawn } from 'node:child_process';
import { join } from 'node:path';
import { patternSha256 } from './media-pattern.ts';
import { BENCH_ENV, machine, today } from './support.ts';

// Large media through the delivery path: the peak RSS of a worker process while a 1 GiB video goes to
// YouTube and a 500 MB one to X through the contract fakes, and while a batch of ten 100 MiB videos
// goes at once. The fakes and a generated-object S3 stand-in run in a second process
// (media-fakes-main.ts) and count and hash the bytes; each case runs in a fresh worker process
// (media-worker-main.ts) whose own peak RSS (getrusage maxRSS) is the figure. `whole` is the read
// every connector made before: the object read into memory, then sent.

const MiB = 1024 * 1024;

interface Case {
  name: string;
  platform: 'youtube' | 'x';
  size: number;
  count: number;
  mode: 'ranged' | 'whole';
}

export interface MediaRow extends Case {
  baselineMb: number;
  peakMb: number;
  ms: number;
  attempts: number[];
  verified: boolean;
}

const CASES: Case[] = [
  { name: '1 GiB video → YouTube', platform: 'youtube', size: 1024 * MiB, count: 1, mode: 'ranged' },
  { name: '500 MB video → X', platform: 'x', size: 500_000_000, count: 1, mode: 'ranged' },
  {
    name: 'batch of 10 × 100 MiB → YouTube, at once',
    platform: 'youtube',
    size: 100 * MiB,
    count: 10,
    mode: 'ranged',
  },
  {
    name: '1 GiB video → YouTube, read whole (before)',
    platform: 'youtube',
    size: 1024 * MiB,
    count: 1,
    mode: 'whole',
  },
];

function ask<T>(child: ChildProcess, msg: object, key: string): Promise<T> {
  return new Promise((ok) => {
    const on = (m: Record<string, unknown>) => {
      if (!m[key]) return;
      child.off('message', on);
      ok(m as T);
    };
    child.on('message', on);
    child.send(msg);
  });
}

function runWorker(env: Record<string, string>, c: Case): Promise<Omit<MediaRow, keyof Case | 'verified'>> {
  return new Promise((ok, fail) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'media-worker-main.ts')],
      {
        env: { ...env, BENCH_MEDIA_CASE: JSON.stringify(c) },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += String(d);
    });
    child.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return fail(new Error(`media bench worker (${c.name}) exited ${code}`));
      ok(JSON.parse(line));
    });
  });
}

export async function benchMedia(
  opts: { only?: string[] } = {},
): Promise<{ rows: MediaRow[]; fakesRssMb: number; machine: string; date: string }> {
  const fakes = fork(join(import.meta.dirname, 'media-fakes-main.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const urls = await new Promise<{ youtube: string; x: string; s3: string }>((ok) =>
    fakes.once('message', (m) => ok(m as { youtube: string; x: string; s3: string })),
  );
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    ...BENCH_ENV,
    HERALD_PLATFORM_YOUTUBE_URL: urls.youtube,
    HERALD_PLATFORM_X_URL: urls.x,
    AWS_ENDPOINT_URL_S3: urls.s3,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    HERALD_MEDIA_BUCKET: 'herald-bench-media',
  };
  const rows: MediaRow[] = [];
  let fakesRssMb = 0;
  try {
    for (const c of CASES.filter((k) => !opts.only || opts.only.includes(k.mode))) {
      await ask(fakes, { reset: true }, 'reset');
      const r = await runWorker(env, c);
      const state = await ask<{
        rssMb: number;
        youtube: Array<{ size: number; sha256: string }>;
        x: Array<{ size: number; sha256: string }>;
      }>(fakes, { state: true }, 'state');
      fakesRssMb = Math.max(fakesRssMb, state.rssMb);
      // Every delivery's bytes arrived whole and in order (seeds 1…count, as the worker names its objects).
      const got = new Set(state[c.platform].map((v) => `${v.size}:${v.sha256}`));
      const verified =
        state[c.platform].length === c.count &&
        Array.from({ length: c.count }, (_, i) => `${c.size}:${patternSha256(c.size, i + 1)}`).every((k) =>
          got.has(k),
        );
      rows.push({ ...c, ...r, verified });
      console.error(`bench: media ${c.name}: peak ${r.peakMb.toFixed(0)} MB, ${(r.ms / 1000).toFixed(1)} s`);
    }
  } finally {
    fakes.disconnect();
    fakes.kill();
  }
  return { rows, fakesRssMb, machine: machine(), date: today() };
}

export function mediaSection(r: Awaited<ReturnType<typeof benchMedia>>): string {
  const mb = (n: number) => `${n.toFixed(0)} MB`;
  const lines = [
    `${r.date}, ${r.machine}. Peak RSS of the worker process (getrusage maxRSS; MB = 2^20 bytes); the fakes ran in another process (its peak: ${mb(r.fakesRssMb)}).`,
    '',
    '| Case | Reads | Baseline RSS | Peak RSS | Peak − baseline | Time | Attempts | Bytes verified |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.rows.map(
      (x) =>
        `| ${x.name} | ${x.mode === 'ranged' ? 'ranged GETs' : 'whole object'} | ${mb(x.baselineMb)} | ${mb(x.peakMb)} | ${mb(x.peakMb - x.baselineMb)} | ${(x.ms / 1000).toFixed(1)} s | ${[...new Set(x.attempts)].join(', ')} | ${x.verified ? 'yes (SHA-256)' : '**no**'} |`,
    ),
  ];
  return lines.join('\n');
}
