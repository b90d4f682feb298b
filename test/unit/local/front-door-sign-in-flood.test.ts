import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ATTEMPTS_PER_MINUTE } from '#core/people';
import { dynamo } from '#shared/clients';
import { createFrontDoor } from '../../../bin/local/front-door.ts';
import { FakeDynamo } from '../faults/support/dynamo.ts';

// One client flooding the sign-in route must not lock everybody else out: the limit that bites is
// the use case's count per source address; the route's throttle is only a ceiling far above it.
// Real handler and use case, the table in memory; two loopback source addresses.

const table = new FakeDynamo();
table.install(dynamo);
const server = createFrontDoor(resolve(import.meta.dirname, '../../..'));
let port = 0;

beforeAll(async () => {
  table.reset([]);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  port = (server.address() as AddressInfo).port;
  vi.stubEnv('HERALD_CONSOLE_URL', `http://localhost:${port}`);
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await new Promise<void>((ok) => server.close(() => ok()));
});

/** POST /console/sign-in/options from `from` (a loopback address of this host); the status. */
function options(from: string): Promise<number> {
  return new Promise((ok, fail) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress: from,
        method: 'POST',
        path: '/console/sign-in/options',
        headers: {
          host: `localhost:${port}`,
          origin: `http://localhost:${port}`,
          'content-type': 'application/json',
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => ok(res.statusCode ?? 0));
      },
    );
    req.on('error', fail);
    req.end('{}');
  });
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

describe('sign-in under a flood from one address', () => {
  it('refuses the flooder past its own count, and another address still signs in meanwhile', async () => {
    // A burst, then 20 a second for 2.5 s (four times the old shared throttle's refill).
    const flood: Array<Promise<number>> = Array.from({ length: ATTEMPTS_PER_MINUTE }, () =>
      options('127.0.0.2'),
    );
    let flooding = true;
    const flooder = (async () => {
      while (flooding) {
        flood.push(options('127.0.0.2'));
        await sleep(50);
      }
    })();
    const others: number[] = [];
    for (const wait of [500, 500, 500, 500]) {
      await sleep(wait);
      others.push(await options('127.0.0.1'));
    }
    await sleep(500);
    flooding = false;
    await flooder;
    const statuses = await Promise.all(flood);

    expect(others).toEqual([200, 200, 200, 200]);
    // The count is per minute: a flood across a minute's turn gets one more minute's worth.
    const admitted = statuses.filter((s) => s === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(ATTEMPTS_PER_MINUTE);
    expect(admitted).toBeLessThanOrEqual(2 * ATTEMPTS_PER_MINUTE);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 429)).toBe(true);
    expect(statuses.length).toBeGreaterThan(2 * ATTEMPTS_PER_MINUTE);
  });
});
