import type { Engagement, MetricsContext } from '../types.ts';
import { Auth, call } from './client.ts';
import { linkedinError } from './errors.ts';

interface SocialMetadata {
  reactionSummaries?: Record<string, { count?: number }>;
  commentSummary?: { count?: number; topLevelCount?: number };
}

// Reactions and comments per post from the socialMetadata API. Impressions and shares need the
// organization/member analytics products, which a plain posting app does not have: 0 here.
export async function metrics(ctx: MetricsContext): Promise<Record<string, Engagement>> {
  const auth = new Auth(ctx);
  const out: Record<string, Engagement> = {};
  for (const urn of ctx.externalIds) {
    const res = await call<SocialMetadata>(auth, 'GET', `/rest/socialMetadata/${encodeURIComponent(urn)}`);
    if (res.status === 404) continue;
    if (res.status !== 200) throw linkedinError(res, 'GET /rest/socialMetadata');
    const reactions = Object.values(res.body.reactionSummaries ?? {}).reduce((n, r) => n + (r.count ?? 0), 0);
    out[urn] = {
      impressions: 0,
      likes: reactions,
      comments: res.body.commentSummary?.count ?? 0,
      shares: 0,
      clicks: 0,
    };
  }
  return out;
}
