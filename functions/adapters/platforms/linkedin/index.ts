import { postOrComment } from '../support.ts';
import type { Connector } from '../types.ts';
import { choices } from './choices.ts';
import { publishComment, reconcileComment } from './comments.ts';
import { inbox } from './inbox.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// LinkedIn's versioned REST API: posts with images or videos (publish.ts, media.ts), documents, polls
// and link cards as articles (formats.ts), the first comment under
// one (comments.ts), reactions and comments (metrics.ts), the comments on an organization page's
// posts and the replies to them (inbox.ts). Tokens: the channel's token source renews
// them (usecases/support/channel-tokens.ts, through the one OAuth client).

export const connector: Connector = {
  ...postOrComment(
    'linkedin',
    { publish, reconcile },
    { publish: publishComment, reconcile: reconcileComment },
  ),
  metrics,
  choices,
  unpublish,
  inbox,
};
