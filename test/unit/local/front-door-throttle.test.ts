import { describe, expect, it } from 'vitest';
import { operations } from '#lib/operations';
import { tokenBucket } from '../../../bin/local/front-door.ts';

// The local front door throttles a route as API Gateway does (the manifest's `throttle`): a bucket
// of `burstLimit` requests, refilled at `rateLimit` per second.

describe('route throttle', () => {
  it('admits a burst, refuses the next, and admits again as the bucket refills', () => {
    let now = 0;
    const admit = tokenBucket({ rateLimit: 10, burstLimit: 20 }, () => now);
    const burst = Array.from({ length: 25 }, () => admit());
    expect(burst.filter(Boolean)).toHaveLength(20);
    now += 100; // one token back
    expect(admit()).toBe(true);
    expect(admit()).toBe(false);
    now += 10_000;
    expect(Array.from({ length: 21 }, () => admit()).filter(Boolean)).toHaveLength(20);
  });

  it('the public OAuth callback is the throttled route', () => {
    const callback = operations.find((op) => op.id === 'oauthCallback');
    expect(callback?.throttle).toEqual({ rateLimit: 10, burstLimit: 20 });
    expect(operations.filter((op) => op.scope !== null && op.throttle)).toEqual([]);
  });
});
