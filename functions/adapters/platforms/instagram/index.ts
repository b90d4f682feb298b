import { pageGraph } from '../meta/client.ts';
import { postInsights } from '../meta/metrics.ts';
import { containerPublishing } from '../meta/publish.ts';
import type { Connector } from '../types.ts';
import { instagramContainers } from './publish.ts';

// Instagram professional accounts (graph.facebook.com): publishing through media containers
// (publish.ts), engagement from each media's insights. Errors are the Graph API's (meta/errors.ts).
// The channel's token is a Facebook User (or Page) token; renewing it needs the app secret and a
// person, so an expired token is reported as auth_expired for re-authorization.

export const connector: Connector = {
  ...containerPublishing(instagramContainers),

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
};
