import { benchThreads } from './threads.ts';

// Runs the threads bench in a process of its own: it loads the delivery worker against DynamoDB
// Local (TABLE_NAME is read when the modules load), which must not share module state or SDK mocks
// with the in-process benches.
process.stdout.write(JSON.stringify(await benchThreads()));
process.exit(0);
