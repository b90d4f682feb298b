import { getApiKeyByHash, getOrg } from '#adapters/accounts';
import { hashApiKey, looksLikeApiKey } from '#core/accounts';
import { ApiError } from '#core/errors';
import { effectiveLimits, type Feature, type Limits, type PlanName, requireFeature } from '#core/plans';
import type { Scope } from '#lib/operations';

// API-key authentication with a short per-container cache, so a warm request pays no extra
// DynamoDB round trip. The cache holds the key and its organization's plan: a revoked key stops
// working, and a plan change takes effect, within CACHE_TTL_MS on every container.

export interface AuthContext {
  orgId: string;
  keyId: string;
  scopes: ReadonlySet<Scope>;
  plan: PlanName;
  limits: Limits;
}

export const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 1_000;
const cache = new Map<string, { ctx: AuthContext | null; expires: number }>();

/** The presented key from `Authorization: Bearer` or `x-api-key`; undefined when none was sent. */
export function presentedKey(headers: Record<string, string | undefined>): string | undefined {
  const auth = headers.authorization;
  if (auth !== undefined) {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(auth);
    if (m?.[1]) return m[1];
  }
  const x = headers['x-api-key']?.trim();
  if (x) return x;
  return auth !== undefined && auth.trim() !== '' ? '' : undefined;
}

export async function authenticate(
  headers: Record<string, string | undefined>,
  now = Date.now(),
): Promise<AuthContext> {
  const key = presentedKey(headers);
  if (key === undefined) {
    throw new ApiError(
      'authentication_required',
      'Send an API key as `Authorization: Bearer <key>` or `x-api-key: <key>`.',
    );
  }
  const invalid = () => new ApiError('invalid_api_key', 'The API key is not valid.');
  if (!looksLikeApiKey(key)) throw invalid();
  const hash = hashApiKey(key);
  const hit = cache.get(hash);
  let ctx: AuthContext | null;
  if (hit && hit.expires > now) {
    ctx = hit.ctx;
  } else {
    const rec = await getApiKeyByHash(hash);
    const org = rec && !rec.revoked_at ? await getOrg(rec.org_id) : null;
    ctx =
      rec && org
        ? {
            orgId: rec.org_id,
            keyId: rec.id,
            scopes: new Set(rec.scopes),
            plan: org.plan,
            limits: effectiveLimits(org.plan, org.limits),
          }
        : null;
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(hash, { ctx, expires: now + CACHE_TTL_MS });
  }
  if (!ctx) throw invalid();
  return ctx;
}

export function requireScope(ctx: AuthContext, scope: Scope): void {
  if (!ctx.scopes.has(scope)) {
    throw new ApiError('insufficient_scope', `This API key lacks the ${scope} scope.`);
  }
}

export function requirePlanFeature(ctx: AuthContext, feature: Feature | undefined): void {
  if (feature) requireFeature(ctx.plan, feature);
}

/** For tests: forget cached keys. */
export function clearAuthCache(): void {
  cache.clear();
}
