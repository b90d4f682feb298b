// The clocks of publishing: how long a claim on a delivery lasts, when a publishing post is looked
// at again, and when a scheduled post's dispatch counts as lost. The sweeper, the dispatcher and
// the delivery worker read them here, so the rules they share cannot drift apart.

/** How long a claim protects a delivery being sent; shorter than the delivery queue's visibility timeout. */
export const LEASE_SECONDS = 90;
/** A publishing post is re-examined this long after its last change (lost messages, dead workers). */
export const WATCHDOG_SECONDS = 300;
/** A dispatch not acted on within this long is sent again (a lost message, a crashed sweeper). */
export const REDISPATCH_SECONDS = 120;
/**
 * A scheduled post already dispatched for its time leaves the sweeper's lookahead for this long
 * (past its time or its dispatch): sweeps skip it, and see it again only if it is still scheduled
 * then (a lost dispatch).
 */
export const REDISPATCH_AFTER_SECONDS = 180;
