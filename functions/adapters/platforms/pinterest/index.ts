import type { Connector } from '../types.ts';
import { choices } from './choices.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// Pinterest API v5: one Pin per post (publish.ts), Pin analytics (metrics.ts). Tokens (30 days; continuous
// refresh rotates the refresh token): the channel's token source renews them (usecases/support/channel-tokens.ts,
// through the one OAuth client).

export const connector: Connector = { publish, reconcile, metrics, choices, unpublish };
