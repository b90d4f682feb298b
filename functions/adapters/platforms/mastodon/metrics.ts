import type { Engagement, MetricsContext } from '../types.ts';
import { Api, type Status } from './client.ts';
import { mastodonError } from './errors.ts';

// Favourites, replies and boosts of each status.

export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const api = Api.of(ctx.credentials);
  const out: Record<string, Engagement> = {};
  for (const id of ctx.externalIds) {
    const res = await api.call<Status>('GET', `/api/v1/statuses/${encodeURIComponent(id)}`);
    if (res.status === 404) continue; // deleted since
    if (res.status !== 200) throw mastodonError(res, 'GET /api/v1/statuses/:id');
    out[id] = {
      impressions: 0,
      likes: res.body.favourites_count ?? 0,
      comments: res.body.replies_count ?? 0,
      shares: res.body.reblogs_count ?? 0,
      clicks: 0,
    };
  }
  return out;
}
