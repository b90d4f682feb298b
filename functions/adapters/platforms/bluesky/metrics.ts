import type { Engagement, MetricsContext } from '../types.ts';
import { Client } from './client.ts';

interface PostView {
  uri: string;
  likeCount?: number;
  repostCount?: number;
  replyCount?: number;
  quoteCount?: number;
}

export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const client = new Client(ctx.credentials);
  const out: Record<string, Engagement> = {};
  // app.bsky.feed.getPosts takes at most 25 URIs per call; the PDS proxies it to the AppView.
  for (let i = 0; i < ctx.externalIds.length; i += 25) {
    const uris = ctx.externalIds.slice(i, i + 25);
    const body = await client.ok<{ posts: PostView[] }>('app.bsky.feed.getPosts', { query: { uris } });
    for (const p of body.posts ?? []) {
      out[p.uri] = {
        impressions: 0,
        likes: p.likeCount ?? 0,
        comments: p.replyCount ?? 0,
        shares: (p.repostCount ?? 0) + (p.quoteCount ?? 0),
        clicks: 0,
      };
    }
  }
  return out;
}
