import type { Connector } from '../types.ts';
import { inbox } from './inbox.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// Bluesky through the AT Protocol (XRPC) on the account's PDS with an app password (client.ts):
// post records under a key we choose (publish.ts), their counts from the AppView (metrics.ts), the
// replies, mentions and direct messages that come back (inbox.ts).

export const connector: Connector = { publish, reconcile, metrics, unpublish, inbox };
