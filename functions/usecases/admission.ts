import { consumeRequest } from '#adapters/limits';
import { ApiError } from '#core/errors';
import { billingPeriod, burstWindow, rateLimitHeaders } from '#core/plans';
import type { AuthContext } from '#shared/auth';

export type Admission =
  | { allowed: true; headers: Record<string, string>; apiRequests: number }
  | { allowed: false; headers: Record<string, string>; error: ApiError };

/**
 * Admits one authenticated request. Primary course: count it in the key's burst window and in the
 * organization's api_requests for the month, in one round trip; over the burst → 429 rate_limited
 * (Retry-After: to the window's end), over the month → 429 quota_exhausted (Retry-After: to the
 * month's end). Either way the rate-limit headers describe the burst window.
 */
export async function admit(auth: AuthContext, nowMs: number): Promise<Admission> {
  const window = burstWindow(nowMs);
  const period = billingPeriod(nowMs);
  const consumed = await consumeRequest({
    keyId: auth.keyId,
    orgId: auth.orgId,
    windowId: window.id,
    windowEndsAt: window.endsAtSeconds,
    burstLimit: auth.limits.burst,
    period: period.id,
    monthlyLimit: auth.limits.api_requests,
  });
  const remaining = consumed.burstCount === null ? 0 : auth.limits.burst - consumed.burstCount;
  const headers = rateLimitHeaders(auth.limits.burst, remaining, window.resetSeconds);
  if (consumed.burstCount === null) {
    const retry = { 'retry-after': String(window.resetSeconds) };
    return {
      allowed: false,
      headers: { ...headers, ...retry },
      error: new ApiError(
        'rate_limited',
        `This key is limited to ${auth.limits.burst} requests per minute; retry after ${window.resetSeconds} s.`,
        {
          headers: retry,
        },
      ),
    };
  }
  if (consumed.apiRequests === null) {
    const retry = { 'retry-after': String(period.secondsLeft) };
    return {
      allowed: false,
      headers: { ...headers, ...retry },
      error: new ApiError(
        'quota_exhausted',
        `The organization has used its ${auth.limits.api_requests} API requests for ${period.id}; the allowance resets at ${period.endsAt}.`,
        { headers: retry },
      ),
    };
  }
  return { allowed: true, headers, apiRequests: consumed.apiRequests };
}
