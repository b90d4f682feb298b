import { type Connector, PlatformError, type PublishContext } from '../types.ts';
import { choices } from './choices.ts';
import { publishComment, reconcileComment } from './comments.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';
import { unpublish } from './unpublish.ts';

// YouTube Data API v3: videos.insert through a resumable upload (publish.ts), the first comment
// under the video (comments.ts), video statistics (metrics.ts). Tokens are Google OAuth tokens (an
// hour): the channel's token source renews them (usecases/support/channel-tokens.ts, through the one
// OAuth client).

function isComment(ctx: PublishContext): boolean {
  if (ctx.part?.kind === 'thread')
    throw new PlatformError('user_content', 'youtube: videos have no threads', { retryable: false });
  return ctx.part?.kind === 'comment';
}

export const connector: Connector = {
  async publish(ctx) {
    return isComment(ctx) ? publishComment(ctx) : publish(ctx);
  },
  async reconcile(ctx) {
    return isComment(ctx) ? reconcileComment(ctx) : reconcile(ctx);
  },
  metrics,
  choices,
  unpublish,
};
