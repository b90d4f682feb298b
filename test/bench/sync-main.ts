import { benchSync, type SyncMode } from './sync.ts';

// Runs one side of the channel sync bench in a process of its own (its own DynamoDB Local, queues
// and fakes; KMS mocked, which must not leak into the in-process benches): `fanout` or `single-loop`.
const mode = (process.argv[2] ?? 'fanout') as SyncMode;
process.stdout.write(JSON.stringify(await benchSync(mode)));
process.exit(0);
