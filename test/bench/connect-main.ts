import { benchConnect } from './connect.ts';

// Runs the connect bench in a process of its own: it loads the real use cases against DynamoDB
// Local and mocks KMS, which must not leak into the in-process benches.
process.stdout.write(JSON.stringify(await benchConnect()));
process.exit(0);
