import { postInsights } from '../meta/metrics.ts';
import { containerPublishing } from '../meta/publish.ts';
import { removeObjects } from '../meta/unpublish.ts';
import type { Connector } from '../types.ts';
import { open } from './client.ts';
import { inbox } from './inbox.ts';
import { threadsContainers } from './publish.ts';

// Threads API (graph.threads.net): publishing through media containers (publish.ts), engagement
// from each post's insights. Errors are the Graph API's (meta/errors.ts).

export const connector: Connector = {
  ...containerPublishing(threadsContainers),

  async metrics(ctx) {
    const { client } = await open(ctx);
    return postInsights(client, ctx.externalIds, 'views,likes,replies,reposts,quotes', (n) => ({
      impressions: n.views ?? 0,
      likes: n.likes ?? 0,
      comments: n.replies ?? 0,
      shares: (n.reposts ?? 0) + (n.quotes ?? 0),
    }));
  },

  // DELETE /{threads-media-id} (developers.facebook.com/docs/threads/posts/delete-posts: scope
  // threads_delete, at most 100 deletes a day per account) → {"success": true, "deleted_id"}.
  async unpublish(ctx) {
    const { client } = await open(ctx);
    return removeObjects(client, ctx);
  },

  // Replies to the account's posts and its mentions (inbox.ts).
  inbox,
};
