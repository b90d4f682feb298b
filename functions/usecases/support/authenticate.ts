import { getApiKeyByHash } from '#adapters/api-keys';
import { getOrg } from '#adapters/orgs';
import { type AuthContext, hashApiKey, looksLikeApiKey, type Org } from '#core/accounts';
import { ApiError } from '#core/errors';
import { effectiveLimits, type Feature, requireFeature } from '#core/plans';
import type { Scope } from '#core/vocabulary';
import type { Operation } from '#lib/operations';

// API-key authentication with a short per-container cache, so a warm request pays no extra
// DynamoDB round trip. The cache holds the key and its organization's plan; a plan change takes
// effect within CACHE_TTL_MS on every container. Revocation does not wait for the cache: it is
// written into the request gate (adapters/usage.ts), whose condition every API request passes, so
// the next request of a revoked key is refused on every container.
// Only keys found in the table are cached: a key unknown now may be minted a moment later and used
// at once. The price is one GetItem per request with an unknown key; such requests never reach the
// gate, so they cost no write.

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

const invalidKey = () => new ApiError('invalid_api_key', 'The API key is not valid.');

/** The SHA-256 of the presented key, or the 401 a request without a usable key gets. */
function presentedHash(headers: Record<string, string | undefined>): string {
  const key = presentedKey(headers);
  if (key === undefined) {
    throw new ApiError(
      'authentication_required',
      'Send an API key as `Authorization: Bearer <key>` or `x-api-key: <key>`.',
    );
  }
  if (!looksLikeApiKey(key)) throw invalidKey();
  return hashApiKey(key);
}

/** Reads the key and its organization (two sequential reads); null ctx for an unusable key. */
async function load(
  hash: string,
  consistent: boolean,
  now: number,
): Promise<{ ctx: AuthContext | null; org: Org | null }> {
  const rec = await getApiKeyByHash(hash, consistent);
  const org = rec && !rec.revoked_at ? await getOrg(rec.org_id) : null;
  const ctx =
    rec && org
      ? {
          orgId: rec.org_id,
          keyId: rec.id,
          scopes: new Set(rec.scopes),
          plan: org.plan,
          limits: effectiveLimits(org.plan, org.limits),
        }
      : null;
  // A revoked key stays revoked, so its refusal may be cached; a miss may not (above).
  if (rec) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(hash, { ctx, expires: now + CACHE_TTL_MS });
  }
  return { ctx, org };
}

/** The API request's key, from the per-container cache when it holds it. */
export async function authenticate(
  headers: Record<string, string | undefined>,
  now = Date.now(),
): Promise<AuthContext> {
  const hash = presentedHash(headers);
  const hit = cache.get(hash);
  const ctx = hit && hit.expires > now ? hit.ctx : (await load(hash, false, now)).ctx;
  if (!ctx) throw invalidKey();
  return ctx;
}

/**
 * The key and its organization read now, strongly consistent, bypassing the cache: for requests
 * that are not admitted through the request gate (MCP's protocol traffic), so a revoked key is
 * refused at once there too, and the organization's settings are current.
 */
export async function authenticateFresh(
  headers: Record<string, string | undefined>,
): Promise<{ auth: AuthContext; org: Org }> {
  const { ctx, org } = await load(presentedHash(headers), true, Date.now());
  if (!ctx || !org) throw invalidKey();
  return { auth: ctx, org };
}

export function requireScope(ctx: AuthContext, scope: Scope): void {
  if (!ctx.scopes.has(scope)) {
    throw new ApiError('insufficient_scope', `This API key lacks the ${scope} scope.`);
  }
}

export function requirePlanFeature(ctx: AuthContext, feature: Feature | undefined): void {
  if (feature) requireFeature(ctx.plan, feature);
}

/** The operation's scope and plan feature, checked against the key (403 otherwise). */
export function authorize(ctx: AuthContext, op: Operation): void {
  if (op.scope === null) return;
  requireScope(ctx, op.scope);
  requirePlanFeature(ctx, op.feature);
}

/** The gate refused `keyId` as revoked: this container stops serving it from its cache at once. */
export function forgetKey(keyId: string): void {
  for (const [hash, entry] of cache) if (entry.ctx?.keyId === keyId) cache.set(hash, { ...entry, ctx: null });
}

/** For tests: forget cached keys. */
export function clearAuthCache(): void {
  cache.clear();
}
