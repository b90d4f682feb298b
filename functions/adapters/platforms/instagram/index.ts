import { pageGraph } from '../meta/client.ts';
import { type CommentEdge, publishComment, reconcileComment } from '../meta/comments.ts';
import { postInsights } from '../meta/metrics.ts';
import { containerPublishing } from '../meta/publish.ts';
import { postOrComment } from '../support.ts';
import type { Connector, PublishContext } from '../types.ts';
import { inbox } from './inbox.ts';
import { instagramContainers } from './publish.ts';

// Instagram professional accounts (graph.facebook.com): publishing through media containers
// (publish.ts), the first comment through the media's comments edge (meta/comments.ts), engagement
// from each media's insights. Errors are the Graph API's (meta/errors.ts).
// The channel's token is a Facebook User (or Page) token; renewing it needs the app secret and a
// person, so an expired token is reported as auth_expired for re-authorization.

const posts = containerPublishing(instagramContainers);

/** POST /{ig-media-id}/comments (instagram_manage_comments); Instagram comments have no permalink. */
function comments(ctx: PublishContext): CommentEdge {
  const { client, accountId } = pageGraph('instagram', ctx.credentials);
  return {
    platform: 'instagram',
    client,
    accountId,
    handle: ctx.channel.handle,
    textField: 'text',
    timeField: 'timestamp',
    extraFields: 'from,username',
    url: () => null,
  };
}

export const connector: Connector = {
  ...postOrComment('instagram', posts, {
    publish: (ctx) => publishComment(comments(ctx), ctx),
    reconcile: (ctx) => reconcileComment(comments(ctx), ctx),
  }),

  async metrics(ctx) {
    // `impressions` is deprecated for media since v22.0; `views` replaces it.
    const { client } = pageGraph('instagram', ctx.credentials);
    return postInsights(client, ctx.externalIds, 'views,likes,comments,shares', (n) => ({
      impressions: n.views ?? 0,
      likes: n.likes ?? 0,
      comments: n.comments ?? 0,
      shares: n.shares ?? 0,
    }));
  },

  // Comments on the account's media, the media it is tagged in, and its messages (inbox.ts).
  inbox,
};
