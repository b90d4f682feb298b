import type { Engagement, MetricsContext } from '../types.ts';
import { Auth, ok, type Tweet } from './client.ts';

export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const auth = new Auth(ctx);
  const out: Record<string, Engagement> = {};
  for (let i = 0; i < ctx.externalIds.length; i += 100) {
    const qs = new URLSearchParams({
      ids: ctx.externalIds.slice(i, i + 100).join(','),
      'post.fields': 'public_metrics',
    });
    const res = await ok<{ data?: Tweet[] }>(auth, 'GET', `/2/tweets?${qs}`);
    for (const t of res.data ?? []) {
      const m = t.public_metrics ?? {};
      out[t.id] = {
        impressions: m.impression_count ?? 0,
        likes: m.like_count ?? 0,
        comments: m.reply_count ?? 0,
        shares: (m.retweet_count ?? 0) + (m.quote_count ?? 0),
        clicks: 0,
      };
    }
  }
  return out;
}
