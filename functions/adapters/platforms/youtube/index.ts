import { postOrComment } from '../support.ts';
import type { Connector } from '../types.ts';
import { choices } from './choices.ts';
import { publishComment, reconcileComment } from './comments.ts';
import { inbox } from './inbox.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// YouTube Data API v3: videos.insert through a resumable upload (publish.ts) and its thumbnail and
// playlist after it (steps.ts), the first comment under the video (comments.ts), video statistics
// (metrics.ts), the comments on the channel's videos and the replies to them (inbox.ts). Tokens are
// Google OAuth tokens (an hour): the channel's token source renews them
// (usecases/support/channel-tokens.ts, through the one OAuth client).

export const connector: Connector = {
  ...postOrComment(
    'youtube',
    { publish, reconcile },
    { publish: publishComment, reconcile: reconcileComment },
  ),
  metrics,
  choices,
  unpublish,
  inbox,
};
