import type { Connector } from '../types.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// YouTube Data API v3: videos.insert through a resumable upload (publish.ts), video statistics
// (metrics.ts). Tokens are Google OAuth tokens (an hour): the channel's token source renews them
// (usecases/support/channel-tokens.ts, through the one OAuth client).

export const connector: Connector = { publish, reconcile, metrics, unpublish };
