import { benchConsole } from './console.ts';

// Runs the console bench in a process of its own: it loads the real handlers against DynamoDB Local,
// which must not share module state or SDK mocks with the in-process benches.
process.stdout.write(JSON.stringify(await benchConsole(Number(process.env.BENCH_ITERATIONS ?? 200))));
process.exit(0);
