import { benchManyChannels } from './many-channels.ts';

// Runs the many-channels bench in a process of its own: it loads the delivery worker against
// DynamoDB Local (TABLE_NAME is read when the modules load), which must not share module state or
// SDK mocks with the in-process benches.
const sizes = (process.env.BENCH_CHANNELS ?? '1,10,25,50').split(',').map(Number);
process.stdout.write(JSON.stringify(await benchManyChannels(sizes)));
process.exit(0);
