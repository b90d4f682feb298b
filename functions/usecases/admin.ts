import {
  AlreadyExistsError,
  addUser,
  ChannelLimitError,
  createOrgWithOwner,
  getOrg,
  getUser,
  listApiKeys,
  putApiKey,
  putChannel,
  revokeApiKey,
  setOrgPlan,
  updateOrgSettings,
} from '#adapters/accounts';
import { ConcurrentChangeError, getPostWithOrg, PostQuotaError, replacePost } from '#adapters/posts';
import {
  type ApiKeyRecord,
  type ChannelRecord,
  canApprovePosts,
  canChangeSettings,
  canMintKeys,
  defaultSettings,
  generateApiKey,
  hashApiKey,
  type Org,
  type OrgSettings,
  type Plan,
  type Role,
  toChannel,
  type User,
} from '#core/accounts';
import { CREDENTIALS } from '#core/credentials';
import { newId } from '#core/ids';
import { billingPeriod, effectiveLimits, type Limits } from '#core/plans';
import type { Platform } from '#core/platforms';
import { countedNow, decideApprove, toPost } from '#core/posts';
import { issuesToFieldErrors } from '#core/validation';
import type { Scope } from '#lib/operations';

// What `herald` (the admin CLI) does. The same code runs against the local stack and a deployment.

export class AdminError extends Error {
  constructor(
    message: string,
    readonly kind: 'not_found' | 'forbidden' | 'conflict' | 'invalid' = 'invalid',
  ) {
    super(message);
    this.name = 'AdminError';
  }
}

const nowIso = () => new Date().toISOString();

async function requireOrg(orgId: string): Promise<Org> {
  const org = await getOrg(orgId);
  if (!org) throw new AdminError(`no organization ${orgId}`, 'not_found');
  return org;
}

async function requireRole(
  orgId: string,
  userId: string,
  allowed: (r: Role) => boolean,
  what: string,
): Promise<User> {
  await requireOrg(orgId);
  const user = await getUser(orgId, userId);
  if (!user) throw new AdminError(`no user ${userId} in organization ${orgId}`, 'not_found');
  if (!allowed(user.role))
    throw new AdminError(`${what} needs a different role; ${userId} is ${user.role}`, 'forbidden');
  return user;
}

export async function createOrg(args: { name: string; plan: Plan; ownerEmail: string }) {
  const at = nowIso();
  const org: Org = {
    id: newId('org'),
    name: args.name,
    plan: args.plan,
    settings: defaultSettings(),
    created_at: at,
    updated_at: at,
  };
  const owner: User = {
    id: newId('user'),
    org_id: org.id,
    email: args.ownerEmail.toLowerCase(),
    role: 'owner',
    created_at: at,
  };
  await createOrgWithOwner(org, owner);
  return { org, owner };
}

export async function addOrgUser(args: { orgId: string; email: string; role: Role }) {
  await requireOrg(args.orgId);
  const user: User = {
    id: newId('user'),
    org_id: args.orgId,
    email: args.email.toLowerCase(),
    role: args.role,
    created_at: nowIso(),
  };
  try {
    await addUser(user);
  } catch (err) {
    if (err instanceof AlreadyExistsError)
      throw new AdminError(`${args.email} is already a user of ${args.orgId}`, 'conflict');
    throw err;
  }
  return user;
}

const publicKey = (rec: ApiKeyRecord) => ({
  id: rec.id,
  name: rec.name,
  scopes: rec.scopes,
  prefix: rec.prefix,
  created_by: rec.created_by,
  created_at: rec.created_at,
  revoked_at: rec.revoked_at,
});

/** Mints a key (owners and admins only). The plaintext is returned this once; only its hash is stored. */
export async function mintKey(args: {
  orgId: string;
  by: string;
  scopes: Scope[];
  name?: string | undefined;
}) {
  await requireRole(args.orgId, args.by, canMintKeys, 'minting API keys');
  const key = generateApiKey();
  const rec: ApiKeyRecord = {
    id: newId('key'),
    org_id: args.orgId,
    name: args.name ?? null,
    scopes: [...new Set(args.scopes)],
    created_by: args.by,
    created_at: nowIso(),
    revoked_at: null,
    prefix: key.slice(0, 13),
  };
  await putApiKey(hashApiKey(key), rec);
  return { id: rec.id, key, scopes: rec.scopes, name: rec.name, created_at: rec.created_at };
}

export async function revokeKey(args: { orgId: string; by: string; keyId: string }) {
  await requireRole(args.orgId, args.by, canMintKeys, 'revoking API keys');
  const now = Date.now();
  const thisMonth = billingPeriod(now);
  const nextMonth = billingPeriod(Date.parse(thisMonth.endsAt));
  const rec = await revokeApiKey(args.orgId, args.keyId, new Date(now).toISOString(), [
    thisMonth.id,
    nextMonth.id,
  ]);
  if (!rec) throw new AdminError(`no key ${args.keyId} in organization ${args.orgId}`, 'not_found');
  return publicKey(rec);
}

export async function listKeys(orgId: string) {
  await requireOrg(orgId);
  return { data: (await listApiKeys(orgId)).map(publicKey) };
}

/** Connects a channel. Without credentials it is stored as reauth_required: it cannot publish yet. */
export async function connectChannel(args: {
  orgId: string;
  platform: Platform;
  handle: string;
  credentials?: unknown;
}) {
  const org = await requireOrg(args.orgId);
  let credentials: Record<string, unknown> = {};
  if (args.credentials !== undefined) {
    const parsed = CREDENTIALS[args.platform].safeParse(args.credentials);
    if (!parsed.success) {
      const detail = issuesToFieldErrors(parsed.error.issues)
        .map((e) => `${e.pointer || '/'}: ${e.message}`)
        .join('; ');
      throw new AdminError(`invalid ${args.platform} credentials: ${detail}`);
    }
    credentials = parsed.data as Record<string, unknown>;
  }
  const at = nowIso();
  const rec: ChannelRecord = {
    id: newId('channel'),
    org_id: args.orgId,
    platform: args.platform,
    handle: args.handle,
    avatar_url: null,
    followers: 0,
    status: args.credentials === undefined ? 'reauth_required' : 'live',
    last_sync_at: null,
    last_error:
      args.credentials === undefined ? 'No credentials yet: connect again with --credentials.' : null,
    created_at: at,
  };
  const limit = effectiveLimits(org.plan, org.limits).channels;
  try {
    await putChannel(rec, credentials, limit);
  } catch (err) {
    if (err instanceof ChannelLimitError) {
      throw new AdminError(
        `${args.orgId} is at its ${org.plan} plan's bound of ${limit} channels`,
        'conflict',
      );
    }
    throw err;
  }
  return toChannel(rec);
}

export async function setSettings(args: { orgId: string; by: string; patch: Partial<OrgSettings> }) {
  await requireRole(args.orgId, args.by, canChangeSettings, 'changing workspace settings');
  if (!Object.keys(args.patch).length)
    throw new AdminError('nothing to set: give --dangerous-ops and/or --approval-required');
  const org = await updateOrgSettings(args.orgId, args.patch, nowIso());
  return { org_id: org.id, settings: org.settings };
}

/**
 * Sets the plan. Takes effect on every container within the auth cache's 30 s. `limits` are the
 * operator's overrides of the plan's allowances; omitting them restores the plan's own.
 */
export async function setPlan(args: { orgId: string; plan: Plan; limits?: Partial<Limits> | undefined }) {
  await requireOrg(args.orgId);
  const org = await setOrgPlan(args.orgId, args.plan, args.limits ?? null, nowIso());
  return { ...org, effective_limits: effectiveLimits(org.plan, org.limits) };
}

/** needs_approval → scheduled or publishing (owners and admins). */
export async function approvePost(args: { orgId: string; by: string; postId: string }) {
  await requireRole(args.orgId, args.by, canApprovePosts, 'approving posts');
  for (let attempt = 0; attempt < 4; attempt++) {
    const { org, post } = await getPostWithOrg(args.orgId, args.postId);
    if (!post || !org)
      throw new AdminError(`no post ${args.postId} in organization ${args.orgId}`, 'not_found');
    let next: ReturnType<typeof decideApprove>;
    try {
      next = decideApprove(post, new Date());
    } catch (err) {
      throw new AdminError((err as Error).message, 'conflict');
    }
    const period = billingPeriod(Date.now());
    const counted = countedNow(next, period.id);
    const count = counted
      ? { period: period.id, limit: effectiveLimits(org.plan, org.limits).posts_per_month }
      : undefined;
    try {
      return toPost(await replacePost(counted ?? next, post.version, {}, count));
    } catch (err) {
      if (err instanceof PostQuotaError)
        throw new AdminError(`${args.orgId} has used its posts_per_month for ${period.id}`, 'conflict');
      if (!(err instanceof ConcurrentChangeError)) throw err;
    }
  }
  throw new AdminError('the post kept changing; try again', 'conflict');
}
