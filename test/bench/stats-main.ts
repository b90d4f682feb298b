import { benchStats } from './stats.ts';

// Runs the counters bench in a process of its own: it loads the real relay against DynamoDB Local
// (TABLE_NAME is read when the handlers load), which must not share module state or SDK mocks with
// the in-process benches.
process.stdout.write(
  JSON.stringify(
    await benchStats({
      burst: Number(process.env.BENCH_STATS_BURST ?? 1000),
      isolated: Number(process.env.BENCH_STATS_ISOLATED ?? 20),
    }),
  ),
);
process.exit(0);
