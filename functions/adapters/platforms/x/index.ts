import type { Connector } from '../types.ts';
import { inbox } from './inbox.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// X (API v2) with an OAuth 2.0 user token (credentials access_token, refresh_token, expires_at,
// account_id = the user id). Access tokens live two hours; the channel's token source renews them
// (usecases/support/channel-tokens.ts, through the one OAuth client) when they expire or X refuses one.
// The mentions and direct messages that come back: inbox.ts.

export const connector: Connector = { publish, reconcile, metrics, unpublish, inbox };
