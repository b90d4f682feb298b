import { OAuthTokens } from '../oauth.ts';
import type { Engagement, MetricsContext } from '../types.ts';
import { api } from './client.ts';

interface VideoStats {
  id?: string;
  like_count?: number;
  comment_count?: number;
  share_count?: number;
  view_count?: number;
}

// Display API video query (scope video.list): up to 20 ids per request; ids without metrics are left out.
export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const tokens = await OAuthTokens.open(ctx);
  const out: Record<string, Engagement> = {};
  const ids = ctx.externalIds.filter((id) => /^\d+$/.test(id)); // publish_ids of private posts have none
  for (let i = 0; i < ids.length; i += 20) {
    const data = await api<{ videos?: VideoStats[] }>(
      tokens,
      '/v2/video/query/',
      { filters: { video_ids: ids.slice(i, i + 20) } },
      '?fields=id,like_count,comment_count,share_count,view_count',
    );
    for (const v of data.videos ?? []) {
      if (!v.id) continue;
      out[String(v.id)] = {
        impressions: v.view_count ?? 0,
        likes: v.like_count ?? 0,
        comments: v.comment_count ?? 0,
        shares: v.share_count ?? 0,
        clicks: 0,
      };
    }
  }
  return out;
}
