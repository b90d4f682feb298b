import { once } from '#core/once';
import { webhookAddressPolicy } from '../webhooks/policy.ts';
import { safeFetch } from '../webhooks/safe-http.ts';

/**
 * Fetch for platforms whose server a user names (a Mastodon instance, a Bluesky PDS): the same
 * address policy as webhooks (no private, loopback, link-local or metadata addresses, resolved once
 * and pinned; https only in AWS), so a connection cannot make Herald call into its own network.
 */
export const userOriginFetch = /* @__PURE__ */ once(() => safeFetch(webhookAddressPolicy()));
