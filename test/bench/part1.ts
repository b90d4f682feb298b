import { benchColdStart, coldStartSection } from './cold-start.ts';
import { benchOverhead, overheadSection } from './overhead.ts';
import { benchRoundTrips, roundTripsSection } from './round-trips.ts';
import { apiWorld } from './support.ts';

// `npx tsx test/bench/part1.ts`: cold start, warm handler overhead and round trips, printed as the
// markdown sections BENCHMARKS.md takes (stdout), with each part's runtime on stderr.
// BENCH_RUNS, BENCH_ITERATIONS: fewer processes / invocations for a quick look.

const runs = Number(process.env.BENCH_RUNS ?? 15);
const iterations = Number(process.env.BENCH_ITERATIONS ?? 500);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const cold = await benchColdStart({ runs });
console.error(
  `cold start: ${seconds(cold.durationMs)} (bundling ${seconds(cold.buildMs)}, measuring ${seconds(cold.measureMs)})`,
);
const overhead = await benchOverhead({ iterations });
console.error(`overhead: ${seconds(overhead.durationMs)}`);
const trips = await benchRoundTrips();
console.error(`round trips: ${seconds(trips.durationMs)}`);
await (await apiWorld()).close();

console.log([coldStartSection(cold), overheadSection(overhead), roundTripsSection(trips)].join('\n'));
