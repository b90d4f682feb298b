import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { benchScheduler } from './scheduler.ts';

// `npm run bench`: runs the benchmarks and writes their numbers into BENCHMARKS.md between the
// generated markers (the rest of the file is prose kept by hand).

const root = resolve(import.meta.dirname, '../..');
const n = Number(process.env.BENCH_POSTS ?? 1000);

const s = await benchScheduler(n);
const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`;
const section = `<!-- bench:scheduler:start -->
Measured ${new Date().toISOString().slice(0, 10)} on ${machine} by \`npm run bench\`
(test/bench/scheduler.ts): ${s.posts} posts scheduled for the same second to the Mastodon
contract fake on the local stack (created in ${s.createSeconds.toFixed(1)} s beforehand).

| Metric | Value |
|---|---:|
| Lateness p50 (delivery start − scheduled_at) | ${s.latenessMs.p50} ms |
| Lateness p90 | ${s.latenessMs.p90} ms |
| Lateness p99 | ${s.latenessMs.p99} ms |
| Lateness max | ${s.latenessMs.max} ms |
| Deliveries per second (reaching the fake) | ${s.deliveriesPerSecond.toFixed(0)} |
<!-- bench:scheduler:end -->`;
const file = join(root, 'BENCHMARKS.md');
const text = readFileSync(file, 'utf8');
const replaced = /<!-- bench:scheduler:start -->[\s\S]*<!-- bench:scheduler:end -->/.test(text)
  ? text.replace(/<!-- bench:scheduler:start -->[\s\S]*<!-- bench:scheduler:end -->/, section)
  : `${text.trimEnd()}\n\n## Scheduler lateness and delivery throughput\n\n${section}\n`;
writeFileSync(file, replaced);
console.log(JSON.stringify(s, null, 2));
