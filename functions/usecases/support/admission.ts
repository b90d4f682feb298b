import { admitRequest, uncountRequest } from '#adapters/usage';
import type { Admission, AuthContext, PostsToCount } from '#core/accounts';
import { ApiError } from '#core/errors';
import { billingPeriod, burstWindow, rateLimitHeaders } from '#core/plans';

/**
 * Admits one authenticated request. Primary course: one conditional write to the organization's
 * gate item for the month counts it in the key's burst window and in api_requests, unless the key
 * was revoked (401 invalid_api_key, on every container at once), its burst is spent (429
 * rate_limited, Retry-After: to the window's end) or the month is (429 quota_exhausted,
 * Retry-After: to the month's end). DynamoDB shedding load on the gate item is a 429 rate_limited
 * with Retry-After: 1, never a 500. The rate-limit headers describe the burst window.
 */
export async function admit(auth: AuthContext, nowMs: number, posts?: PostsToCount): Promise<Admission> {
  const window = burstWindow(nowMs);
  const period = billingPeriod(nowMs);
  // The count rides on the gate's write only in the month the gate writes to (a request straddling
  // midnight at a month's end counts its post on its own, in the month the post names).
  const count = posts?.period === period.id ? { limit: posts.limit } : undefined;
  const gate = await admitRequest({
    keyId: auth.keyId,
    orgId: auth.orgId,
    windowId: window.id,
    burstLimit: auth.limits.burst,
    period: period.id,
    monthlyLimit: auth.limits.api_requests,
    posts: count,
  });
  const used =
    gate.outcome === 'admitted' || gate.outcome === 'quota' || gate.outcome === 'posts'
      ? gate.burstCount
      : auth.limits.burst;
  const headers = rateLimitHeaders(auth.limits.burst, auth.limits.burst - used, window.resetSeconds);
  const refuse = (error: ApiError, retryAfter: number): Extract<Admission, { allowed: false }> => ({
    allowed: false,
    headers: { ...headers, 'retry-after': String(retryAfter) },
    error,
  });
  switch (gate.outcome) {
    case 'admitted':
      return {
        allowed: true,
        headers,
        apiRequests: gate.apiRequests,
        period: period.id,
        ...(count ? { postCounted: true } : {}),
      };
    case 'posts':
      // Refused before anything was counted: neither the post nor the request.
      return { ...refuse(postsQuotaExhausted(nowMs), period.secondsLeft), postsRefused: true };
    case 'revoked':
      return {
        allowed: false,
        headers: {},
        error: new ApiError('invalid_api_key', 'The API key is not valid.'),
      };
    case 'burst':
      return refuse(
        new ApiError(
          'rate_limited',
          `This key is limited to ${auth.limits.burst} requests per minute; retry after ${window.resetSeconds} s.`,
          { headers: { 'retry-after': String(window.resetSeconds) } },
        ),
        window.resetSeconds,
      );
    case 'throttled':
      return refuse(
        new ApiError('rate_limited', 'Too many requests for this organization at once; retry after 1 s.', {
          headers: { 'retry-after': '1' },
        }),
        1,
      );
    case 'quota':
      return refuse(
        new ApiError(
          'quota_exhausted',
          `The organization has used its ${auth.limits.api_requests} API requests for ${period.id}; the allowance resets at ${period.endsAt}.`,
          { headers: { 'retry-after': String(period.secondsLeft) } },
        ),
        period.secondsLeft,
      );
  }
}

/**
 * A request the gate admitted and the operation then refused with a 429 (posts_per_month spent) is
 * not an API request either: it is taken back out of api_requests. The only path with a second write.
 */
export async function unmeter(auth: AuthContext, admission: Admission): Promise<void> {
  if (admission.allowed) await uncountRequest(auth.orgId, admission.period);
}

/**
 * The 429 of a post over posts_per_month, whether the gate refused its count or a count of its own
 * did (docs/api/limits.md).
 */
export function postsQuotaExhausted(nowMs: number): ApiError {
  const period = billingPeriod(nowMs);
  return new ApiError(
    'quota_exhausted',
    `The organization has scheduled or published its posts_per_month allowance for ${period.id}; it resets at ${period.endsAt}.`,
    { headers: { 'retry-after': String(period.secondsLeft) } },
  );
}
