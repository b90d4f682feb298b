import { benchCost } from './cost.ts';

// Runs the cost bench in a process of its own: it loads the real handlers against DynamoDB Local,
// which must not share module state or SDK mocks with the in-process benches.
process.stdout.write(JSON.stringify(await benchCost()));
process.exit(0);
