import { type Engagement, PlatformError } from '../types.ts';
import type { GraphClient } from './client.ts';

// Insights of Graph posts: `{"data": [{"name", "values": [{"value"}]}]}` (or `total_value`).

export interface InsightsBody {
  data?: Array<{ name?: string; values?: Array<{ value?: unknown }>; total_value?: { value?: unknown } }>;
}

/** Insight values as name → number. */
export function insightNumbers(body: InsightsBody): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of body.data ?? []) {
    if (!m.name) continue;
    const v = m.values?.[0]?.value ?? m.total_value?.value;
    out[m.name] = typeof v === 'number' ? v : 0;
  }
  return out;
}

/** Engagement per post from its insights; posts that vanished or cannot be read are left out. */
export async function postInsights(
  client: GraphClient,
  ids: string[],
  metric: string,
  engagement: (n: Record<string, number>) => Partial<Engagement>,
): Promise<Record<string, Engagement>> {
  const out: Record<string, Engagement> = {};
  for (const id of ids) {
    try {
      const body = await client.get<InsightsBody>(`/${id}/insights`, { metric });
      out[id] = { ...noEngagement(), ...engagement(insightNumbers(body)) };
    } catch (err) {
      if (!skippable(err)) throw err;
    }
  }
  return out;
}

export const noEngagement = (): Engagement => ({
  impressions: 0,
  likes: 0,
  comments: 0,
  shares: 0,
  clicks: 0,
});

/** A post that vanished or cannot be read is left out of the metrics; auth, limits and outages are not. */
export function skippable(err: unknown): boolean {
  return (
    err instanceof PlatformError && (err.category === 'user_content' || err.category === 'platform_rejected')
  );
}
