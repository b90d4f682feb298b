import { benchInbox } from './inbox.ts';

// Runs the inbox poller bench in a process of its own (its own DynamoDB Local, queues and fakes;
// KMS mocked, which must not leak into the in-process benches).
process.stdout.write(JSON.stringify(await benchInbox()));
process.exit(0);
