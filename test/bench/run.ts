import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { awsModelInputs, awsModelSection, TODAY_INPUTS } from './aws-model.ts';
import { benchColdStart, coldStartSection } from './cold-start.ts';
import { type ConnectResult, connectSection } from './connect.ts';
import { type ConsoleResult, consoleSection } from './console.ts';
import { type CostResult, costSection } from './cost.ts';
import { type InboxRun, inboxSection } from './inbox.ts';
import { benchJournal, journalSection } from './journal.ts';
import { type ManyChannelsRow, manyChannelsSection } from './many-channels.ts';
import { benchMedia, mediaSection } from './media.ts';
import { benchMediaFit, mediaFitSection } from './media-fit.ts';
import { benchOverhead, overheadSection } from './overhead.ts';
import { benchRecovery, recoverySection } from './recovery.ts';
import { benchRoundTrips, type RoundTripsResult, roundTripsSection } from './round-trips.ts';
import { benchScheduler, type SchedulerResult, schedulerSection } from './scheduler.ts';
import { type StatsResult, statsSection } from './stats.ts';
import { apiWorld, machine, ROOT, timed } from './support.ts';
import { type SyncRun, syncSection } from './sync.ts';
import { type ThreadsRow, threadsSection } from './threads.ts';
import { benchThroughput, throughputSection } from './throughput.ts';

// `npm run bench`: every benchmark in one run, each written into BENCHMARKS.md between its
// generated markers (the rest of the file is prose kept by hand). BENCH_ONLY=a,b runs a subset
// (coldstart, overhead, roundtrips, throughput, cost, stats, awsmodel, connect, console, scheduler,
// manychannels, threads, recovery, journal, sync, media, mediafit, inbox); BENCH_RUNS, BENCH_ITERATIONS (overhead, console),
// BENCH_POSTS and BENCH_SECONDS shorten the parts (sync: BENCH_SYNC_* in sync.ts); BENCH_LEAD
// (seconds) gives the scheduler's posts more time to be created on a busy machine.

const run = promisify(execFile);
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const wants = (name: string) => !only || only.includes(name);
const started = performance.now();
const took: string[] = [];
/** Runs one part, logging how long it took. */
const part = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
  const { value, ms } = await timed(fn);
  took.push(`${name} ${(ms / 1000).toFixed(0)} s`);
  console.error(`bench: ${name} done in ${(ms / 1000).toFixed(1)} s`);
  return value;
};

const sections: Record<string, { title: string; body: string }> = {};

if (wants('coldstart')) {
  const r = await part('cold start', () => benchColdStart({ runs: Number(process.env.BENCH_RUNS ?? 21) }));
  sections.coldstart = {
    title: 'Cold start (bundles and module init) vs the floor',
    body: coldStartSection(r),
  };
}
let roundTrips: RoundTripsResult | undefined;
if (wants('overhead') || wants('roundtrips')) {
  if (wants('overhead')) {
    const r = await part('overhead', () =>
      benchOverhead({ iterations: Number(process.env.BENCH_ITERATIONS ?? 500) }),
    );
    sections.overhead = { title: 'Warm handler overhead', body: overheadSection(r) };
  }
  if (wants('roundtrips')) {
    roundTrips = await part('round trips', () => benchRoundTrips());
    sections.roundtrips = { title: 'Round trips on the critical path', body: roundTripsSection(roundTrips) };
  }
  await (await apiWorld()).close();
}
let cost: CostResult | undefined;
if (wants('cost')) {
  cost = await part('cost', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'cost-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as CostResult;
  });
  sections.cost = { title: 'Cost per million requests (AWS)', body: costSection(cost, roundTrips?.rows) };
}

if (wants('stats')) {
  const r = await part('stats', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'stats-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as StatsResult;
  });
  sections.stats = { title: 'Analytics counters: write units per post', body: statsSection(r) };
}
if (wants('connect')) {
  const r = await part('connect', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'connect-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as ConnectResult;
  });
  sections.connect = { title: 'Connecting accounts and the channel sync', body: connectSection(r) };
}
if (wants('console')) {
  const r = await part('console', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'console-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as ConsoleResult;
  });
  sections.console = { title: 'Console pages (server time, DynamoDB, size)', body: consoleSection(r) };
}
if (wants('throughput')) {
  const r = await part('throughput', () => benchThroughput(Number(process.env.BENCH_SECONDS ?? 10)));
  sections.throughput = {
    title: 'Local stack throughput and webhook fan-out',
    body: throughputSection(r),
  };
}
let schedulerResults: SchedulerResult[] | undefined;
if (wants('scheduler')) {
  const sizes = (process.env.BENCH_POSTS ?? '100,1000').split(',').map(Number);
  const results: SchedulerResult[] = [];
  for (const n of sizes)
    results.push(
      await part(`scheduler ${n}`, () =>
        benchScheduler(n, Number(process.env.BENCH_LEAD ?? 0) || (n > 500 ? 60 + Math.ceil(n / 40) : 20)),
      ),
    );
  sections.scheduler = {
    title: 'Scheduler lateness and delivery throughput',
    body: schedulerSection(results),
  };
  schedulerResults = results;
}
if (wants('manychannels')) {
  const after = await part('many channels', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'many-channels-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as ManyChannelsRow[];
  });
  // Main at 91db867 (every delivery write a whole-post Put on the version), measured by this same
  // bench once; kept beside the current figures for comparison.
  const before = JSON.parse(
    readFileSync(join(import.meta.dirname, 'many-channels-before.json'), 'utf8'),
  ) as ManyChannelsRow[];
  sections.manychannels = {
    title: 'Many channels per post (issue 31)',
    body: manyChannelsSection(after, before),
  };
}
if (wants('threads')) {
  const rows = await part('threads', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'threads-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as ThreadsRow[];
  });
  sections.threads = { title: 'Threads: delivering the parts (issue 34)', body: threadsSection(rows) };
}
if (wants('awsmodel')) {
  // Computed, not measured: from the cost and scheduler parts' results when they ran in this invocation.
  const input = await awsModelInputs(cost, schedulerResults);
  const before = await awsModelInputs(undefined, undefined, TODAY_INPUTS);
  sections.awsmodel = {
    title: 'AWS at scale: a model',
    body: `### After issue 24\n\n${awsModelSection(input)}\n\n### Before issue 24 (main at a30acac)\n\n${awsModelSection(before)}`,
  };
}

if (wants('sync')) {
  const side = async (mode: SyncRun['mode']) => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'sync-main.ts'), mode],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as SyncRun;
  };
  const after = await part('sync (fan-out)', () => side('fanout'));
  const before =
    process.env.BENCH_SYNC_BEFORE === '0'
      ? undefined
      : await part('sync (one loop)', () => side('single-loop'));
  sections.sync = { title: 'The channel sync at scale (issue 24)', body: syncSection(after, before) };
}

if (wants('recovery')) {
  const r = await part('recovery', () => benchRecovery());
  sections.recovery = { title: 'Recovery after kill -9', body: recoverySection(r) };
}

if (wants('journal')) {
  const r = await part('journal', () => benchJournal());
  sections.journal = {
    title: 'The local queue journal under a long-running install',
    body: journalSection(r),
  };
}

if (wants('media')) {
  const r = await part('media', () => benchMedia());
  sections.media = { title: 'Large videos: the worker’s memory while it uploads', body: mediaSection(r) };
}

if (wants('mediafit')) {
  const r = await part('media fit', () => benchMediaFit());
  sections.mediafit = { title: 'Media fitting (issue 36)', body: mediaFitSection(r) };
}
if (wants('inbox')) {
  const r = await part('inbox', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'inbox-main.ts')],
      {
        cwd: ROOT,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as InboxRun;
  });
  sections.inbox = { title: 'The inbox poller at scale (issue 35)', body: inboxSection(r) };
}

const file = join(ROOT, 'BENCHMARKS.md');
let text = readFileSync(file, 'utf8');
for (const [key, { title, body }] of Object.entries(sections)) {
  const start = `<!-- bench:${key}:start -->`;
  const end = `<!-- bench:${key}:end -->`;
  const block = `${start}\n${body}\n${end}`;
  const marker = new RegExp(`${start}[\\s\\S]*${end}`);
  text = marker.test(text)
    ? text.replace(marker, () => block)
    : `${text.trimEnd()}\n\n## ${title}\n\n${block}\n`;
}
writeFileSync(file, text);
console.error(
  `bench: all done in ${((performance.now() - started) / 60_000).toFixed(1)} min (${took.join(', ')}) on ${machine()}`,
);
