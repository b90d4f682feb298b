import { listApiKeys, putApiKey, revokeApiKey } from '#adapters/api-keys';
import { getChannel } from '#adapters/channels';
import { createOrgWithOwner, getOrg, setOrgPlan, updateOrgSettings } from '#adapters/orgs';
import { listPlatformApps, putPlatformApp } from '#adapters/platform-apps';
import { PlatformError } from '#adapters/platforms/types';
import { getPostWithOrg, replacePost } from '#adapters/posts';
import { AlreadyExistsError, addUser, getUser } from '#adapters/users';
import {
  type ApiKeyRecord,
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
  settingsOf,
  toChannel,
  type User,
} from '#core/accounts';
import { landingOrigin, OAUTH_PLATFORMS } from '#core/connections';
import { CREDENTIALS, redactCredentials } from '#core/credentials';
import { ApiError } from '#core/errors';
import { newId } from '#core/ids';
import { billingPeriod, effectiveLimits, type Limits } from '#core/plans';
import type { Platform } from '#core/platforms';
import { decideApprove, toPost } from '#core/posts';
import { issuesToFieldErrors } from '#core/validation';
import type { Scope } from '#lib/operations';
import { syncChannel } from '#usecases/channel-sync';
import { createChannelConnection } from '#usecases/create-channel-connection';
import { disconnectChannel } from '#usecases/disconnect-channel';
import { getChannelConnection } from '#usecases/get-channel-connection';
import { selectChannelAccount } from '#usecases/select-channel-account';
import {
  ConnectFailure,
  connectAccount,
  refused,
  verifyCredentials,
} from '#usecases/support/channel-connect';
import { postCount, quotaAware, withRetry } from '#usecases/support/post-writes';

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

/**
 * Connects a channel with credentials pasted by the operator (sandboxes, tokens obtained
 * elsewhere): they are verified with the platform first — the handle, avatar, followers and account
 * id come from it — and nothing is stored when the platform refuses them. Connecting an account that
 * is already a channel reconnects that channel; `channelId` reconnects a given one in place.
 */
export async function connectChannel(args: {
  orgId: string;
  platform: Platform;
  credentials: unknown;
  channelId?: string | undefined;
}) {
  await requireOrg(args.orgId);
  const parsed = CREDENTIALS[args.platform].safeParse(args.credentials);
  if (!parsed.success) {
    const detail = issuesToFieldErrors(parsed.error.issues)
      .map((e) => `${e.pointer || '/'}: ${e.message}`)
      .join('; ');
    throw new AdminError(`invalid ${args.platform} credentials: ${detail}`);
  }
  const credentials = parsed.data as Record<string, unknown>;
  let account: Awaited<ReturnType<typeof verifyCredentials>>;
  try {
    account = await verifyCredentials(args.platform, credentials);
  } catch (err) {
    if (err instanceof PlatformError)
      throw new AdminError(
        `${args.platform} ${refused(err) ? 'refused the credentials' : 'could not check the credentials now'}: ${redactCredentials(err.message, credentials)}`,
      );
    throw err;
  }
  try {
    const channel = await connectAccount({
      orgId: args.orgId,
      platform: args.platform,
      account,
      connectionId: newId('connection'),
      reconnect: args.channelId ?? null,
      now: new Date(),
    });
    return toChannel(channel);
  } catch (err) {
    if (err instanceof ConnectFailure) throw new AdminError(err.message, 'conflict');
    throw err;
  }
}

/**
 * Starts an OAuth (or Mastodon) connection for the operator, as createChannelConnection does for
 * an API client: the session, with the authorize URL to open. The CLI then waits for it to end.
 */
export async function startConnection(args: {
  orgId: string;
  platform: Platform;
  redirectUri: string;
  instance?: string | undefined;
  channelId?: string | undefined;
}) {
  await requireOrg(args.orgId);
  try {
    return await createChannelConnection({
      orgId: args.orgId,
      body: {
        platform: args.platform,
        redirect_uri: args.redirectUri,
        ...(args.instance ? { instance: args.instance } : {}),
        ...(args.channelId ? { channel_id: args.channelId } : {}),
      },
      requestHost: undefined,
      now: new Date(),
      // The operator's own session: not an API request, nothing to meter.
      admitted: async () => undefined,
    });
  } catch (err) {
    if (err instanceof ApiError)
      throw new AdminError(
        [err.message, ...(err.errors ?? []).map((e) => `${e.pointer}: ${e.message}`)].join(' '),
        err.status === 409 ? 'conflict' : 'invalid',
      );
    throw err;
  }
}

export async function connectionOf(orgId: string, id: string) {
  return getChannelConnection(orgId, id, new Date());
}

export async function selectAccount(orgId: string, id: string, accountId: string) {
  try {
    return await selectChannelAccount(orgId, id, accountId, new Date(), async () => undefined);
  } catch (err) {
    if (err instanceof ApiError)
      throw new AdminError([err.message, ...(err.errors ?? []).map((e) => e.message)].join(' '), 'conflict');
    throw err;
  }
}

export async function disconnect(args: { orgId: string; channelId: string }) {
  await requireOrg(args.orgId);
  try {
    return await disconnectChannel(args.orgId, args.channelId, new Date(), async () => undefined);
  } catch (err) {
    if (err instanceof ApiError) throw new AdminError(err.message, 'not_found');
    throw err;
  }
}

/** Runs the channel sync for one channel now (renew a token ahead of expiry, read the profile). */
export async function syncOne(args: { orgId: string; channelId: string }) {
  await requireOrg(args.orgId);
  const result = await syncChannel(args.orgId, args.channelId, new Date());
  const channel = await getChannel(args.orgId, args.channelId);
  if (!channel)
    throw new AdminError(`no channel ${args.channelId} in organization ${args.orgId}`, 'not_found');
  return { result, channel: toChannel(channel) };
}

/** `herald platform-app set`: the operator's app on a platform (its secret sealed). */
export async function setPlatformApp(args: {
  platform: Platform;
  clientId: string;
  clientSecret: string;
  scopes?: string[] | undefined;
  publicUrl?: string | undefined;
}) {
  if (!(OAUTH_PLATFORMS as readonly string[]).includes(args.platform))
    throw new AdminError(
      args.platform === 'mastodon'
        ? 'mastodon needs no app: Herald registers one on each instance when an account there is first connected'
        : 'bluesky needs no app: accounts connect with app passwords',
    );
  const base = (args.publicUrl ?? process.env.HERALD_PUBLIC_URL ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+$/.test(base))
    throw new AdminError(
      'no public URL: pass --public-url https://api.example.com (the origin platforms send people back to)',
    );
  const app = {
    platform: args.platform,
    client_id: args.clientId,
    client_secret: args.clientSecret,
    redirect_uri: `${base}/oauth/callback/${args.platform}`,
    scopes: args.scopes?.length ? args.scopes : null,
    updated_at: nowIso(),
  };
  await putPlatformApp(app);
  const { client_secret: _secret, ...shown } = app;
  return { ...shown, configured: true };
}

/** `herald platform-app list`: every platform, whether it is configured and the redirect URI to register. */
export async function platformApps() {
  const base = (process.env.HERALD_PUBLIC_URL ?? '').replace(/\/+$/, '');
  const apps = await listPlatformApps(OAUTH_PLATFORMS);
  return {
    data: [
      ...OAUTH_PLATFORMS.map((platform, i) => {
        const app = apps[i];
        return {
          platform,
          configured: Boolean(app),
          client_id: app?.client_id ?? null,
          redirect_uri: app?.redirect_uri ?? (base ? `${base}/oauth/callback/${platform}` : null),
          scopes: app?.scopes ?? null,
        };
      }),
      {
        platform: 'mastodon',
        configured: true,
        client_id: null,
        redirect_uri: base ? `${base}/oauth/callback/mastodon` : null,
        scopes: null,
        note: 'registered on each instance automatically',
      },
      {
        platform: 'bluesky',
        configured: true,
        client_id: null,
        redirect_uri: null,
        scopes: null,
        note: 'app passwords',
      },
    ],
  };
}

/**
 * `herald settings set` (owners). `landing_origins` replaces the list; each entry must be an
 * http(s) origin and is stored normalized. Read on every createChannelConnection, so a change
 * applies from the next request.
 */
export async function setSettings(args: { orgId: string; by: string; patch: Partial<OrgSettings> }) {
  await requireRole(args.orgId, args.by, canChangeSettings, 'changing workspace settings');
  const patch = { ...args.patch };
  if (patch.landing_origins !== undefined) {
    const origins = patch.landing_origins.map((raw) => {
      const origin = landingOrigin(raw);
      if (!origin)
        throw new AdminError(
          `${raw} is not an origin: give scheme, host and port only, like https://app.example.com`,
        );
      return origin;
    });
    patch.landing_origins = [...new Set(origins)];
  }
  if (!Object.keys(patch).length)
    throw new AdminError(
      'nothing to set: give --dangerous-ops, --approval-required and/or --landing-origins',
    );
  const org = await updateOrgSettings(args.orgId, patch, nowIso());
  return { org_id: org.id, settings: settingsOf(org) };
}

/**
 * Sets the plan. Takes effect on every container within the auth cache's 30 s. `limits` are the
 * operator's overrides of the plan's allowances; omitting them restores the plan's own.
 */
export async function setPlan(args: { orgId: string; plan: Plan; limits?: Partial<Limits> | undefined }) {
  await requireOrg(args.orgId);
  const org = await setOrgPlan(args.orgId, args.plan, args.limits ?? null, nowIso());
  return { ...org, settings: settingsOf(org), effective_limits: effectiveLimits(org.plan, org.limits) };
}

/** needs_approval → scheduled or publishing (owners and admins). */
export async function approvePost(args: { orgId: string; by: string; postId: string }) {
  await requireRole(args.orgId, args.by, canApprovePosts, 'approving posts');
  const now = new Date();
  try {
    // The API's own write path: the same posts_per_month count, 429 and conflict retry.
    return await withRetry(async () => {
      const { org, post } = await getPostWithOrg(args.orgId, args.postId);
      if (!post || !org)
        throw new AdminError(`no post ${args.postId} in organization ${args.orgId}`, 'not_found');
      let approved: ReturnType<typeof decideApprove>;
      try {
        approved = decideApprove(post, now);
      } catch (err) {
        throw new AdminError((err as Error).message, 'conflict');
      }
      const postsPerMonth = effectiveLimits(org.plan, org.limits).posts_per_month;
      const { next, count } = postCount(approved, { admitted: async () => undefined, postsPerMonth }, now);
      return toPost(await quotaAware(() => replacePost(next, post.version, {}, count), now));
    });
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const period = billingPeriod(now.getTime());
    throw new AdminError(
      err.code === 'quota_exhausted'
        ? `${args.orgId} has used its posts_per_month for ${period.id}`
        : 'the post kept changing; try again',
      'conflict',
    );
  }
}
