import { startQueues } from '../../../../bin/local/services.ts';

// A process holding the local queues on a journal (argv[2]), for the crash tests: prints its
// endpoint and queue URLs as one JSON line, then serves until it is killed.
const queues = await startQueues(process.argv[2]);
process.stdout.write(`${JSON.stringify({ endpoint: queues.endpoint, queues: queues.queues })}\n`);
