import { pageGraph } from '../meta/client.ts';
import { type InsightsBody, insightNumbers, noEngagement, skippable } from '../meta/metrics.ts';
import { bestEffort } from '../meta/publish.ts';
import type { Engagement, MetricsContext } from '../types.ts';

// Reactions, comments and shares from the post node; views from its insights where the Page has them.

export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const { client } = pageGraph('facebook', ctx.credentials);
  const out: Record<string, Engagement> = {};
  for (const id of ctx.externalIds) {
    // Feed posts are `{page-id}_{post-id}`; video ids have no underscore and no `shares` field.
    const isPost = id.includes('_');
    try {
      const node = await client.get<{
        shares?: { count?: number };
        reactions?: { summary?: { total_count?: number } };
        comments?: { summary?: { total_count?: number } };
      }>(`/${id}`, {
        fields: [
          isPost ? 'shares' : '',
          'reactions.limit(0).summary(true)',
          'comments.limit(0).summary(true)',
        ]
          .filter(Boolean)
          .join(','),
      });
      // Page post insights replaced `post_impressions` by views (`post_media_view`) in November 2025.
      // Insights need a Page with enough followers; without them the post still has its counts.
      const insights = isPost
        ? await bestEffort(() =>
            client.get<InsightsBody>(`/${id}/insights`, {
              metric: 'post_media_view',
            }),
          )
        : null;
      out[id] = {
        ...noEngagement(),
        impressions: insights ? (insightNumbers(insights).post_media_view ?? 0) : 0,
        likes: node.reactions?.summary?.total_count ?? 0,
        comments: node.comments?.summary?.total_count ?? 0,
        shares: node.shares?.count ?? 0,
      };
    } catch (err) {
      if (!skippable(err)) throw err;
    }
  }
  return out;
}
