import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { benchScheduler, type SchedulerResult } from './scheduler.ts';

// `npm run bench`: runs the benchmarks and writes their numbers into BENCHMARKS.md between the
// generated markers (the rest of the file is prose kept by hand).

const root = resolve(import.meta.dirname, '../..');
const sizes = (process.env.BENCH_POSTS ?? '100,1000').split(',').map(Number);

const results: SchedulerResult[] = [];
for (const n of sizes) results.push(await benchScheduler(n, n > 500 ? 60 : 20));

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
const row = (s: SchedulerResult) =>
  `| ${s.posts} | ${s.latenessMs.p50} | ${s.latenessMs.p90} | ${s.latenessMs.p99} | ${s.latenessMs.max} | ${s.deliveriesPerSecond.toFixed(0)} |`;
const section = `<!-- bench:scheduler:start -->
Measured ${new Date().toISOString().slice(0, 10)} on ${machine} by \`npm run bench\`
(test/bench/scheduler.ts): N posts scheduled for the same second to the Mastodon contract fake on
the local stack. Lateness = a delivery's start (its first claim by a worker) − scheduled_at, in ms.

| Posts due in the same second | p50 | p90 | p99 | max | deliveries/s reaching the fake |
|---:|---:|---:|---:|---:|---:|
${results.map(row).join('\n')}
<!-- bench:scheduler:end -->`;
const file = join(root, 'BENCHMARKS.md');
const text = readFileSync(file, 'utf8');
const marker = /<!-- bench:scheduler:start -->[\s\S]*<!-- bench:scheduler:end -->/;
writeFileSync(
  file,
  marker.test(text)
    ? text.replace(marker, section)
    : `${text.trimEnd()}\n\n## Scheduler lateness and delivery throughput\n\n${section}\n`,
);
console.log(JSON.stringify(results, null, 2));
