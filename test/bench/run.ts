import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { benchColdStart, coldStartSection } from './cold-start.ts';
import { costSection, type OperationCost } from './cost.ts';
import { benchOverhead, overheadSection } from './overhead.ts';
import { benchRoundTrips, roundTripsSection } from './round-trips.ts';
import { benchScheduler, type SchedulerResult } from './scheduler.ts';
import { apiWorld } from './support.ts';
import { benchThroughput, throughputSection } from './throughput.ts';

// `npm run bench`: every benchmark in one run, each written into BENCHMARKS.md between its
// generated markers (the rest of the file is prose kept by hand). BENCH_ONLY=a,b runs a subset
// (coldstart, overhead, roundtrips, throughput, cost, scheduler); BENCH_RUNS, BENCH_ITERATIONS,
// BENCH_POSTS and BENCH_SECONDS shorten the parts.

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const wants = (name: string) => !only || only.includes(name);
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
const started = performance.now();
const took: string[] = [];
const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
  const t = performance.now();
  const out = await fn();
  took.push(`${name} ${((performance.now() - t) / 1000).toFixed(0)} s`);
  console.error(`bench: ${name} done in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return out;
};

const sections: Record<string, { title: string; body: string }> = {};

if (wants('coldstart')) {
  const r = await timed('cold start', () => benchColdStart({ runs: Number(process.env.BENCH_RUNS ?? 21) }));
  sections.coldstart = {
    title: 'Cold start (bundles and module init) vs the floor',
    body: coldStartSection(r),
  };
}
if (wants('overhead') || wants('roundtrips')) {
  if (wants('overhead')) {
    const r = await timed('overhead', () =>
      benchOverhead({ iterations: Number(process.env.BENCH_ITERATIONS ?? 500) }),
    );
    sections.overhead = { title: 'Warm handler overhead', body: overheadSection(r) };
  }
  if (wants('roundtrips')) {
    const r = await timed('round trips', () => benchRoundTrips());
    sections.roundtrips = { title: 'Round trips on the critical path', body: roundTripsSection(r) };
  }
  await (await apiWorld()).close();
}
if (wants('cost')) {
  const r = await timed('cost', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'cost-main.ts')],
      {
        cwd: root,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      },
    );
    return JSON.parse(stdout) as OperationCost[];
  });
  sections.cost = { title: 'Cost per million requests (AWS)', body: costSection(r, machine) };
}
if (wants('throughput')) {
  const r = await timed('throughput', () => benchThroughput(Number(process.env.BENCH_SECONDS ?? 10)));
  sections.throughput = {
    title: 'Local stack throughput and webhook fan-out',
    body: throughputSection(r, machine),
  };
}
if (wants('scheduler')) {
  const sizes = (process.env.BENCH_POSTS ?? '100,1000').split(',').map(Number);
  const results: SchedulerResult[] = [];
  for (const n of sizes)
    results.push(await timed(`scheduler ${n}`, () => benchScheduler(n, n > 500 ? 60 : 20)));
  const row = (s: SchedulerResult) =>
    `| ${s.posts} | ${s.latenessMs.p50} | ${s.latenessMs.p90} | ${s.latenessMs.p99} | ${s.latenessMs.max} | ${s.deliveriesPerSecond.toFixed(0)} |`;
  sections.scheduler = {
    title: 'Scheduler lateness and delivery throughput',
    body: `Measured ${new Date().toISOString().slice(0, 10)} on ${machine} by \`npm run bench\`
(test/bench/scheduler.ts): N posts scheduled for the same second to the Mastodon contract fake on
the local stack. Lateness = a delivery's start (its first claim by a worker) − scheduled_at, in ms.

| Posts due in the same second | p50 | p90 | p99 | max | deliveries/s reaching the fake |
|---:|---:|---:|---:|---:|---:|
${results.map(row).join('\n')}`,
  };
}

const file = join(root, 'BENCHMARKS.md');
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
  `bench: all done in ${((performance.now() - started) / 60_000).toFixed(1)} min (${took.join(', ')}) on ${machine}`,
);
