import { OAuthTokens } from '../oauth.ts';
import type { Engagement, MetricsContext } from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// videos.list part=statistics, up to 50 ids per request (1 quota unit each).
export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const tokens = await OAuthTokens.open(ctx);
  const out: Record<string, Engagement> = {};
  for (let i = 0; i < ctx.externalIds.length; i += 50) {
    const ids = ctx.externalIds.slice(i, i + 50);
    const q = new URLSearchParams({ part: 'statistics', id: ids.join(','), maxResults: '50' });
    const res = await authed<{ items?: { id?: string; statistics?: Record<string, string> }[] }>(
      tokens,
      api(`/youtube/v3/videos?${q}`),
      { method: 'GET' },
    );
    if (res.status !== 200) throw youtubeError(res, 'videos.list');
    for (const item of res.body.items ?? []) {
      if (!item.id) continue;
      const s = item.statistics ?? {};
      const n = (k: string) => Number(s[k] ?? 0) || 0;
      out[item.id] = {
        impressions: n('viewCount'),
        likes: n('likeCount'),
        comments: n('commentCount'),
        shares: 0,
        clicks: 0,
      };
    }
  }
  return out;
}
