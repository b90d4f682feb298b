import { pageGraph } from '../meta/client.ts';
import { removeObjects } from '../meta/unpublish.ts';
import type { Connector } from '../types.ts';
import { inbox } from './inbox.ts';
import { metrics } from './metrics.ts';
import { publish, reconcile } from './publish.ts';

// Facebook Pages API (graph.facebook.com) with a Page access token: feed, photo and video posts and
// the first comment under one (publish.ts), reels and stories in their upload phases (formats.ts),
// engagement per post (metrics.ts), the
// Page's comments and messages (inbox.ts). Errors are the Graph
// API's (meta/errors.ts).

export const connector: Connector = {
  publish,
  reconcile,
  metrics,
  // DELETE /{page-post-id} with the Page token (Pages API, "Posts": pages_manage_posts, which every
  // connection asks for) → {"success": true}; a first comment is DELETE /{comment-id} the same way.
  unpublish: (ctx) => removeObjects(pageGraph('facebook', ctx.credentials).client, ctx),
  // The Page's comments and Messenger conversations (inbox.ts).
  inbox,
};
