import type { ErrorCategory } from './delivery.ts';

// What a failed platform call means for a channel, and who has to act. Stated once here; the
// connect, sync, delivery and disconnect paths all ask `remedyOf` (docs/api/channels.md, "When a
// channel fails"):
//   reauthorize  the platform refused the person's grant (invalid_grant on a refresh, a documented
//                "token revoked / expired" answer), or refused the token and Herald cannot renew it
//                (no refresh token, no platform app). The channel becomes reauth_required (one
//                channel.reauth_required event); deliveries fail auth_expired. Only the person can fix it.
//   operator     the platform refused the operator's app (invalid_client, unauthorized_client after a
//                secret rotation, a malformed answer). The channel stays live with last_error set;
//                deliveries fail `system` and are retried; one alarm line and metric per platform.
//   retry        5xx, 429, the platforms' throttling codes, timeouts: try again later, channel live.

export type Remedy = 'reauthorize' | 'operator' | 'retry';

export interface ChannelFailure {
  category: ErrorCategory;
  /** The operator's app (its credentials or configuration) was refused, not the person's grant. */
  operator?: boolean;
}

export function remedyOf(failure: ChannelFailure): Remedy {
  if (failure.category === 'auth_expired') return 'reauthorize';
  return failure.operator ? 'operator' : 'retry';
}

/** How often the sync looks again at a channel waiting for re-authorization (a repaired app or a grant that was fine after all brings it back). */
export const REAUTH_RECHECK_MS = 3600_000;

/** The sync's wait after `failures` failed looks in a row: 1, 2, 4 … minutes, at most `capMs`. */
export function syncBackoffMs(failures: number, remedy: Remedy): number {
  // An operator's fix should be noticed within the hour; a flaky platform may take longer.
  const cap = remedy === 'operator' ? 3600_000 : 6 * 3600_000;
  return Math.min(cap, 60_000 * 2 ** Math.max(0, failures - 1));
}
