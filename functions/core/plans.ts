import { ApiError } from './errors.ts';
import { FEATURES, type Feature } from './vocabulary.ts';

export { FEATURES, type Feature };

// Plans, their allowances and features (docs/api/limits.md), and the calendar arithmetic of
// the meters: per-key burst windows are UTC minutes, monthly meters UTC calendar months.

export const PLAN_NAMES = ['free', 'starter', 'team', 'agency'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export interface Limits {
  /** API requests per calendar month, per organization. */
  api_requests: number;
  /** Requests per key per minute. */
  burst: number;
  /** Posts first scheduled or published per calendar month. */
  posts_per_month: number;
  /** Connected channels. */
  channels: number;
  /** AI generation credits per calendar month (one credit: 1,000 tokens, input and output). */
  ai_credits: number;
}
export const LIMIT_KEYS = [
  'api_requests',
  'burst',
  'posts_per_month',
  'channels',
  'ai_credits',
] as const satisfies ReadonlyArray<keyof Limits>;

export const PLANS: Record<PlanName, { limits: Limits; features: readonly Feature[] }> = {
  free: {
    limits: { api_requests: 1_000, burst: 30, posts_per_month: 30, channels: 3, ai_credits: 0 },
    features: ['analytics', 'mcp'],
  },
  starter: {
    limits: { api_requests: 10_000, burst: 60, posts_per_month: 300, channels: 10, ai_credits: 100 },
    features: FEATURES,
  },
  team: {
    limits: { api_requests: 50_000, burst: 120, posts_per_month: 1_500, channels: 25, ai_credits: 1_000 },
    features: FEATURES,
  },
  agency: {
    limits: { api_requests: 250_000, burst: 300, posts_per_month: 10_000, channels: 100, ai_credits: 5_000 },
    features: FEATURES,
  },
};

/** The plan's allowances with the organization's own overrides (set by the operator) on top. */
export function effectiveLimits(plan: PlanName, overrides?: Partial<Limits> | null): Limits {
  return { ...PLANS[plan].limits, ...(overrides ?? {}) };
}

export const hasFeature = (plan: PlanName, feature: Feature): boolean =>
  PLANS[plan].features.includes(feature);

export function requireFeature(plan: PlanName, feature: Feature): void {
  if (!hasFeature(plan, feature)) {
    throw new ApiError(
      'feature_not_enabled',
      `The ${plan} plan does not include ${feature}; upgrade the plan to use it.`,
    );
  }
}

export const WINDOW_SECONDS = 60;

/** The UTC minute a request falls in, and the seconds until it ends (at least 1). */
export function burstWindow(nowMs: number): { id: number; resetSeconds: number; endsAtSeconds: number } {
  const id = Math.floor(nowMs / 60_000);
  const endsAtSeconds = (id + 1) * 60;
  return { id, endsAtSeconds, resetSeconds: Math.max(1, Math.ceil(endsAtSeconds - nowMs / 1000)) };
}

/** The UTC calendar month a request falls in. */
export function billingPeriod(nowMs: number): {
  id: string;
  startsAt: string;
  endsAt: string;
  secondsLeft: number;
} {
  const now = new Date(nowMs);
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return {
    id: new Date(start).toISOString().slice(0, 7),
    startsAt: new Date(start).toISOString(),
    endsAt: new Date(end).toISOString(),
    secondsLeft: Math.max(1, Math.ceil((end - nowMs) / 1000)),
  };
}

/** RFC 9651 structured fields of the burst limit, plus the X- variants (docs/api/limits.md). */
export function rateLimitHeaders(
  limit: number,
  remaining: number,
  resetSeconds: number,
): Record<string, string> {
  const r = Math.max(0, remaining);
  return {
    'ratelimit-policy': `"per-key-minute";q=${limit};w=${WINDOW_SECONDS}`,
    ratelimit: `"per-key-minute";r=${r};t=${resetSeconds}`,
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(r),
    'x-ratelimit-reset': String(resetSeconds),
  };
}
