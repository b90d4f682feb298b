// The clocks of publishing: how long a claim on a delivery lasts, when a publishing post is looked
// at again, and when a scheduled post's dispatch counts as lost. The sweeper, the dispatcher and
// the delivery worker read them here, so the rules they share cannot drift apart.

/** How long a claim protects a delivery being sent; shorter than the delivery queue's visibility timeout. */
export const LEASE_SECONDS = 90;
/** A publishing post is re-examined this long after its last change (lost messages, dead workers). */
export const WATCHDOG_SECONDS = 300;
/**
 * The watchdog part of a sweep runs at most this often. In AWS the sweeper runs every minute, so
 * every sweep runs it; the local stack sweeps every second for its dispatches, and reading the
 * watchdog's 25 minute buckets each second would be most of an idle stack's DynamoDB traffic.
 */
export const WATCHDOG_EVERY_SECONDS = 30;
/** The sweeper dispatches what falls due this far ahead (the SQS delay covers the rest). */
export const LOOKAHEAD_SECONDS = 120;
/**
 * A scheduled post the sweeper re-dispatched after its dispatch was lost is not re-dispatched
 * again for this long.
 */
export const REDISPATCH_SECONDS = 120;
