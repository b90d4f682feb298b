import type { Connector } from '../types.ts';
import { inbox } from './inbox.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// Mastodon on the channel's own instance: statuses with media (publish.ts), their counts (metrics.ts),
// the mentions, replies and direct messages that come back (inbox.ts).
// Mastodon tokens do not expire, so there is nothing to refresh: a 401 means the user revoked the app.

export const connector: Connector = { publish, reconcile, metrics, unpublish, inbox };
