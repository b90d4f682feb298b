import { getOrgUsage } from '#adapters/usage';
import type { Admission } from '#core/accounts';
import { ApiError } from '#core/errors';
import { billingPeriod, effectiveLimits } from '#core/plans';

/**
 * getUsage. Primary course: read the org and this month's meters while the request itself is
 * being admitted (one round trip in all); api_requests is the count after this request.
 */
export async function getUsage(orgId: string, admitted: () => Promise<Admission>, nowMs: number) {
  const period = billingPeriod(nowMs);
  const [admission, { org, counters }] = await Promise.all([admitted(), getOrgUsage(orgId, period.id)]);
  if (!org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  if (!admission.allowed) throw admission.error;
  const limits = effectiveLimits(org.plan, org.limits);
  const meter = (
    key: 'api_requests' | 'posts_per_month' | 'channels' | 'ai_credits',
    used: number,
    limit: number,
  ) => ({
    key,
    used,
    limit,
    remaining: Math.max(0, limit - used),
    period_starts_at: period.startsAt,
    period_ends_at: period.endsAt,
  });
  return {
    plan: org.plan,
    meters: [
      meter('api_requests', Math.max(admission.apiRequests, counters.api_requests), limits.api_requests),
      meter('posts_per_month', counters.posts_per_month, limits.posts_per_month),
      meter('channels', org.channel_count ?? 0, limits.channels),
      meter('ai_credits', counters.ai_credits, limits.ai_credits),
    ],
  };
}
