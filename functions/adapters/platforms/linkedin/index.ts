import type { Connector } from '../types.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// LinkedIn's versioned REST API: posts with images or videos (publish.ts), reactions and comments
// (metrics.ts). Tokens: the channel's token source renews them (usecases/support/channel-tokens.ts, through the
// one OAuth client).

export const connector: Connector = { publish, reconcile, metrics, unpublish };
