import { expect, it } from 'vitest';
import { crashTrials } from '../../support/ddb-crash.ts';

// An acknowledged transaction survives `kill -9` of DynamoDB Local right after the answer, when the
// caller waits as the local stack's handlers do (awaitLocalCommits). Java restarts make this slow:
// TRIALS + 1 starts, ~15 s. The transactions are large (10 items of 300 KiB) so that the COMMIT
// DynamoDB Local runs after answering takes long: without the wait, 26 of 30 such transactions were
// lost (1-item ones: 7 of 30), so all TRIALS surviving without it has a chance of about 0.13^TRIALS.
// `npx tsx test/support/ddb-crash.ts 30 10 300` measures both variants.

const TRIALS = 6;

it(`keeps ${TRIALS} of ${TRIALS} acknowledged transactions through a kill -9 right after the answer`, async () => {
  const res = await crashTrials({ awaited: Array(TRIALS).fill(true), items: 10, kib: 300 });
  expect(res.trials.awaited).toBe(TRIALS);
  expect(res.lost.awaited).toBe(0);
}, 120_000);
