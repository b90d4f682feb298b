import { getChannel } from '#adapters/channels';
import { createOrgWithOwner, getOrg, setOrgPlan } from '#adapters/orgs';
import {
  AUDIT_PLATFORMS,
  getPlatformAppInfo,
  listPlatformApps,
  putPlatformApp,
  setPlatformAppAudited,
} from '#adapters/platform-apps';
import { PlatformError } from '#adapters/platforms/types';
import {
  defaultSettings,
  type Org,
  type OrgSettings,
  type Plan,
  type Role,
  settingsOf,
  toChannel,
  type User,
} from '#core/accounts';
import { OAUTH_PLATFORMS } from '#core/connections';
import { CREDENTIALS, redactCredentials } from '#core/credentials';
import { ApiError } from '#core/errors';
import { newId } from '#core/ids';
import { ActError, type Actor, OPERATOR } from '#core/people';
import { effectiveLimits, type Limits } from '#core/plans';
import type { Platform } from '#core/platforms';
import { issuesToFieldErrors } from '#core/validation';
import * as apiKeys from '#usecases/api-keys';
import * as approvals from '#usecases/approvals';
import { listAuditLog } from '#usecases/audit-log';
import { syncChannel } from '#usecases/channel-sync-worker';
import { createChannelConnection } from '#usecases/create-channel-connection';
import { disconnectChannel } from '#usecases/disconnect-channel';
import { getChannelConnection } from '#usecases/get-channel-connection';
import * as members from '#usecases/members';
import { selectChannelAccount } from '#usecases/select-channel-account';
import { updateSettings } from '#usecases/settings';
import { auditEntry, newEnrollmentLink, unmetered } from '#usecases/support/acts';
import {
  ConnectFailure,
  connectAccount,
  pastedScopes,
  refused,
  verifyCredentials,
} from '#usecases/support/channel-connect';

// What `herald` (the admin CLI) does. The same code runs against the local stack and a deployment.
// The CLI is the operator: what it does is recorded as the operator's act. `by` (the CLI's --by)
// makes it an act on behalf of that user, who must then exist with the act's role. The acts of an
// organization's people are the console's use cases, called with the operator as the actor.

const nowIso = () => new Date().toISOString();

/** The operator, on behalf of `by` when given. */
const actorOf = (by: string | undefined): Actor => (by ? { kind: 'operator', onBehalfOf: by } : OPERATOR);

async function requireOrg(orgId: string): Promise<Org> {
  const org = await getOrg(orgId);
  if (!org) throw new ActError(`no organization ${orgId}`, 'not_found');
  return org;
}

/**
 * A new organization with its owner (the org_created entry in the same transaction) and the owner's
 * enrollment link: opened in a browser, it registers their passkey for the console.
 */
export async function createOrg(args: { name: string; plan: Plan; ownerEmail: string; consoleUrl: string }) {
  const now = new Date();
  const at = now.toISOString();
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
  const enrollment = newEnrollmentLink({
    orgId: org.id,
    userId: owner.id,
    issuedBy: 'operator',
    consoleUrl: args.consoleUrl,
    now,
  });
  const audit = auditEntry(
    { orgId: org.id, actor: OPERATOR, user: null },
    'org_created',
    org.id,
    { name: org.name, plan: org.plan, owner_id: owner.id, owner_email: owner.email },
    now,
  );
  await createOrgWithOwner(org, owner, { enrollment, audit });
  return { org: { ...org, owner_count: 1 }, owner, enrollment: enrollment.link };
}

/** `herald user add`: invites a person (members.inviteMember) and answers the user, their link and whether it was mailed. */
export async function addOrgUser(args: {
  orgId: string;
  email: string;
  role: Role;
  consoleUrl: string;
  by?: string | undefined;
}) {
  const { user, enrollment, emailed } = await members.inviteMember({
    orgId: args.orgId,
    actor: actorOf(args.by),
    email: args.email,
    role: args.role,
    consoleUrl: args.consoleUrl,
    now: new Date(),
  });
  return { ...user, enrollment, emailed };
}

/** `herald user enroll`: a fresh enrollment link for a user (a lost device). */
export async function enrollUser(args: {
  orgId: string;
  userId: string;
  consoleUrl: string;
  by?: string | undefined;
}) {
  const enrollment = await members.issueEnrollment({
    orgId: args.orgId,
    actor: actorOf(args.by),
    userId: args.userId,
    consoleUrl: args.consoleUrl,
    now: new Date(),
  });
  return { org_id: args.orgId, user_id: args.userId, enrollment };
}

export async function listUsers(args: { orgId: string; by?: string | undefined }) {
  return { data: await members.listMembers({ orgId: args.orgId, actor: actorOf(args.by) }) };
}

export async function setUserRole(args: {
  orgId: string;
  userId: string;
  role: Role;
  by?: string | undefined;
}) {
  return members.changeMemberRole({
    orgId: args.orgId,
    actor: actorOf(args.by),
    userId: args.userId,
    role: args.role,
    now: new Date(),
  });
}

export async function removeUser(args: { orgId: string; userId: string; by?: string | undefined }) {
  return members.removeMember({
    orgId: args.orgId,
    actor: actorOf(args.by),
    userId: args.userId,
    now: new Date(),
  });
}

/**
 * `herald audit list`. The console signs its cursors with HERALD_CURSOR_SECRET, which the CLI does
 * not have; the operator reads the table directly anyway, so the CLI signs its own with what it has.
 */
export async function auditLog(args: {
  orgId: string;
  limit?: number | undefined;
  cursor?: string | undefined;
  by?: string | undefined;
}) {
  return listAuditLog({
    orgId: args.orgId,
    actor: actorOf(args.by),
    limit: args.limit,
    cursor: args.cursor,
    cursorSecret: process.env.HERALD_CURSOR_SECRET ?? `herald-cli:${process.env.TABLE_NAME ?? ''}`,
  });
}

/** Mints a key (owners and admins). The plaintext is returned this once; only its hash is stored. */
export async function mintKey(args: {
  orgId: string;
  by?: string | undefined;
  scopes: string[];
  name?: string | undefined;
}) {
  return apiKeys.mintKey({
    orgId: args.orgId,
    actor: actorOf(args.by),
    scopes: args.scopes,
    name: args.name,
    now: new Date(),
  });
}

export async function revokeKey(args: { orgId: string; by?: string | undefined; keyId: string }) {
  const { last_used_at: _unknown, ...key } = await apiKeys.revokeKey({
    orgId: args.orgId,
    actor: actorOf(args.by),
    keyId: args.keyId,
    now: new Date(),
  });
  return key;
}

export async function listKeys(args: { orgId: string; by?: string | undefined }) {
  return { data: await apiKeys.listKeys({ orgId: args.orgId, actor: actorOf(args.by), now: new Date() }) };
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
    throw new ActError(`invalid ${args.platform} credentials: ${detail}`);
  }
  const credentials = parsed.data as Record<string, unknown>;
  let account: Awaited<ReturnType<typeof verifyCredentials>>;
  try {
    account = await verifyCredentials(args.platform, credentials);
  } catch (err) {
    if (err instanceof PlatformError)
      throw new ActError(
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
      grantedScopes: account.scopes ?? (await pastedScopes(args.platform, credentials)),
      now: new Date(),
    });
    return toChannel(channel);
  } catch (err) {
    if (err instanceof ConnectFailure) throw new ActError(err.message, 'conflict');
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
      admitted: unmetered,
    });
  } catch (err) {
    if (err instanceof ApiError)
      throw new ActError(
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
      throw new ActError([err.message, ...(err.errors ?? []).map((e) => e.message)].join(' '), 'conflict');
    throw err;
  }
}

export async function disconnect(args: { orgId: string; channelId: string }) {
  await requireOrg(args.orgId);
  try {
    return await disconnectChannel(args.orgId, args.channelId, new Date(), async () => undefined);
  } catch (err) {
    if (err instanceof ApiError) throw new ActError(err.message, 'not_found');
    throw err;
  }
}

/** Runs the channel sync for one channel now (renew a token ahead of expiry, read the profile). */
export async function syncOne(args: { orgId: string; channelId: string }) {
  await requireOrg(args.orgId);
  const result = await syncChannel(args.orgId, args.channelId, new Date());
  const channel = await getChannel(args.orgId, args.channelId);
  if (!channel) throw new ActError(`no channel ${args.channelId} in organization ${args.orgId}`, 'not_found');
  return { result, channel: toChannel(channel) };
}

/**
 * `herald platform-app set`: the operator's app on a platform (its secret sealed). `audited`
 * (TikTok): whether the platform audited the app; given alone, it changes only that setting of the
 * app already registered. Registering the app again without it keeps the current setting.
 */
export async function setPlatformApp(args: {
  platform: Platform;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  scopes?: string[] | undefined;
  publicUrl?: string | undefined;
  audited?: boolean | undefined;
}) {
  if (!(OAUTH_PLATFORMS as readonly string[]).includes(args.platform))
    throw new ActError(
      args.platform === 'mastodon'
        ? 'mastodon needs no app: Herald registers one on each instance when an account there is first connected'
        : 'bluesky needs no app: accounts connect with app passwords',
    );
  if (args.audited !== undefined && !AUDIT_PLATFORMS.includes(args.platform))
    throw new ActError(
      `--audited is a setting of ${AUDIT_PLATFORMS.join(', ')} apps only (what an unaudited app may post there)`,
    );
  if (args.clientId === undefined && args.clientSecret === undefined) {
    if (args.audited === undefined)
      throw new ActError('--client-id and --client-secret are required (or --audited alone)');
    const at = nowIso();
    if (!(await setPlatformAppAudited(args.platform, args.audited, at)))
      throw new ActError(
        `no ${args.platform} platform app is registered: set it with --client-id and --client-secret first`,
        'not_found',
      );
    const info = await getPlatformAppInfo(args.platform);
    return { ...info, configured: true };
  }
  if (!args.clientId || !args.clientSecret) throw new ActError('--client-id and --client-secret go together');
  const audited =
    args.audited ??
    (AUDIT_PLATFORMS.includes(args.platform)
      ? (await getPlatformAppInfo(args.platform))?.audited
      : undefined);
  const base = (args.publicUrl ?? process.env.HERALD_PUBLIC_URL ?? '').replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]+$/.test(base))
    throw new ActError(
      'no public URL: pass --public-url https://api.example.com (the origin platforms send people back to)',
    );
  const app = {
    platform: args.platform,
    client_id: args.clientId,
    client_secret: args.clientSecret,
    redirect_uri: `${base}/oauth/callback/${args.platform}`,
    scopes: args.scopes?.length ? args.scopes : null,
    ...(audited !== undefined ? { audited } : {}),
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
          ...(AUDIT_PLATFORMS.includes(platform) ? { audited: app?.audited === true } : {}),
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
 * `herald settings set` (owners): settings.updateSettings, as the operator (or for `by`). Applies
 * from the next request.
 */
export async function setSettings(args: {
  orgId: string;
  by?: string | undefined;
  patch: Partial<OrgSettings>;
}) {
  return updateSettings({ orgId: args.orgId, actor: actorOf(args.by), patch: args.patch, now: new Date() });
}

/**
 * Sets the plan (the operator's act, audited as plan_changed in the same transaction). Takes effect
 * on every container within the auth cache's 30 s. `limits` are the operator's overrides of the
 * plan's allowances; omitting them restores the plan's own.
 */
export async function setPlan(args: { orgId: string; plan: Plan; limits?: Partial<Limits> | undefined }) {
  const now = new Date();
  const before = await requireOrg(args.orgId);
  const limits = args.limits ?? null;
  const audit = auditEntry(
    { orgId: args.orgId, actor: OPERATOR, user: null },
    'plan_changed',
    null,
    {
      from: before.plan,
      to: args.plan,
      limits: limits ? Object.entries(limits).map(([k, v]) => `${k}=${v}`) : null,
    },
    now,
  );
  if (!(await setOrgPlan(args.orgId, args.plan, limits, now.toISOString(), audit)))
    throw new ActError(`no organization ${args.orgId}`, 'not_found');
  const org: Org = { ...before, plan: args.plan, limits, updated_at: now.toISOString() };
  return { ...org, settings: settingsOf(org), effective_limits: effectiveLimits(org.plan, org.limits) };
}

/** `herald post approve`: needs_approval → scheduled or publishing (approvals.approvePost). */
export async function approvePost(args: { orgId: string; by?: string | undefined; postId: string }) {
  return approvals.approvePost({
    orgId: args.orgId,
    actor: actorOf(args.by),
    postId: args.postId,
    now: new Date(),
  });
}

/** `herald post reject --reason`: needs_approval → draft, never published (approvals.rejectPost). */
export async function rejectPost(args: {
  orgId: string;
  by?: string | undefined;
  postId: string;
  reason: string;
}) {
  return approvals.rejectPost({
    orgId: args.orgId,
    actor: actorOf(args.by),
    postId: args.postId,
    reason: args.reason,
    now: new Date(),
  });
}
