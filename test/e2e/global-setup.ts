import type { TestProject } from 'vitest/node';
import { allFakes } from '../fakes/index.ts';
import type { FakePlatforms } from '../fakes/server.ts';
import { type RunningStack, startLocalStack } from '../support/local-stack.ts';

// Starts the platforms' contract fakes and the real local stack (pointed at them through its
// local-only knobs), hands their addresses to the tests, and stops both afterwards.

declare module 'vitest' {
  export interface ProvidedContext {
    baseUrl: string;
    dataDir: string;
    fakesOrigin: string;
  }
}

/** Shared with the webhook tests, which compute the expected schedule from it. */
export const E2E_TIME_SCALE = 0.0001;

let stack: RunningStack | undefined;
let fakes: FakePlatforms | undefined;

export async function setup(project: TestProject) {
  fakes = await allFakes().start();
  stack = await startLocalStack(
    {
      ...fakes.env(),
      // Webhook receivers in the tests listen on loopback; a 72-hour failure ladder runs in ~26 s.
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      HERALD_TIME_SCALE: String(E2E_TIME_SCALE),
    },
    Boolean(process.env.HERALD_E2E_VERBOSE),
  );
  project.provide('baseUrl', stack.baseUrl);
  project.provide('dataDir', stack.dataDir);
  project.provide('fakesOrigin', fakes.origin);
}

export async function teardown() {
  await stack?.stop();
  await fakes?.stop();
}
