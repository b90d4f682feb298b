import { OAuthTokens } from '../oauth.ts';
import type { Engagement, MetricsContext } from '../types.ts';
import { call } from './client.ts';
import { pinterestError } from './errors.ts';

/** Pin analytics reach 90 days back. */
const ANALYTICS_DAYS = 90;

// GET /v5/pins/{id}/analytics over the last 90 days. A save re-shares the Pin to another board, so saves count
// as shares; Pin clicks and outbound clicks are clicks. Pinterest has no likes or comments metric here.
export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const tokens = await OAuthTokens.open(ctx);
  const day = (d: Date) => d.toISOString().slice(0, 10);
  const end = new Date();
  const start = new Date(end.getTime() - (ANALYTICS_DAYS - 1) * 86_400_000);
  const out: Record<string, Engagement> = {};
  for (const id of ctx.externalIds) {
    const q = new URLSearchParams({
      start_date: day(start),
      end_date: day(end),
      metric_types: 'IMPRESSION,SAVE,PIN_CLICK,OUTBOUND_CLICK',
    });
    const res = await call<{ all?: { summary_metrics?: Record<string, number> } }>(
      tokens,
      'GET',
      `/v5/pins/${encodeURIComponent(id)}/analytics?${q}`,
    );
    if (res.status === 404) continue; // deleted Pin
    if (res.status !== 200) throw pinterestError(res, 'pin analytics');
    const m = res.body.all?.summary_metrics ?? {};
    const n = (k: string) => (typeof m[k] === 'number' ? m[k] : 0);
    out[id] = {
      impressions: n('IMPRESSION'),
      likes: 0,
      comments: 0,
      shares: n('SAVE'),
      clicks: n('PIN_CLICK') + n('OUTBOUND_CLICK'),
    };
  }
  return out;
}
