import { queues } from '../../lib/operations.ts';

// The names `herald dlq …` accepts, apart from the commands (bin/cli/dlq.ts loads the SQS client,
// which the CLI's usage text must not wait for).

/** The stream relay's on-failure queue, beside the manifest's queues. */
export const STREAM_DLQ = 'stream';

/** Every DLQ name the commands accept: the manifest's queues, then `stream`. */
export const dlqNames = (): string[] => [...queues.map((q) => q.name), STREAM_DLQ];
