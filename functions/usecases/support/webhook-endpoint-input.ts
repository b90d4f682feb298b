import type { EventType } from '#core/webhooks';

// What the webhook endpoint operations share. `admitted` resolves once the rate limiter admitted
// the request; every write waits for it, so a refused request changes nothing.

export type Admitted = () => Promise<unknown>;

export const unique = (types: readonly EventType[]) => [...new Set(types)];
