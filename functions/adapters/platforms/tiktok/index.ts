import type { Connector } from '../types.ts';
import { choices } from './choices.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';

// TikTok Content Posting API, Direct Post or the creator's inbox (publish.ts), and the Display API's video
// counts (metrics.ts).
// Tokens (a day; refresh tokens rotate): the channel's token source renews them (usecases/support/channel-tokens.ts,
// through the one OAuth client).

export const connector: Connector = { publish, reconcile, metrics, choices };
