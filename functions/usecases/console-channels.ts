import { createHash } from 'node:crypto';
import { putAudit } from '#adapters/audit-log';
import { getChannel } from '#adapters/channels';
import { listPlatformApps } from '#adapters/platform-apps';
import { queryPosts } from '#adapters/posts';
import { anyRole, canManageChannels, toChannel } from '#core/accounts';
import type { toChannelView } from '#core/channel-options';
import { OAUTH_PLATFORMS, type OAuthPlatform } from '#core/connections';
import { PLATFORMS } from '#core/constants';
import { ApiError } from '#core/errors';
import { deterministicId, isId } from '#core/ids';
import { ActError, type Actor } from '#core/people';
import type { Platform } from '#core/platforms';
import { CreateChannelConnectionBody } from '#core/requests';
import { issuesToFieldErrors } from '#core/validation';
import { CONSOLE_PATH } from '#core/vocabulary';
import { createChannelConnection } from '#usecases/create-channel-connection';
import { disconnectChannel } from '#usecases/disconnect-channel';
import { getChannelConnection } from '#usecases/get-channel-connection';
import { listChannelsOf } from '#usecases/list-channels';
import { selectChannelAccount } from '#usecases/select-channel-account';
import { auditEntry, authorizeAct, unmetered } from '#usecases/support/acts';

// The console's Channels page: the role check and the audit entry around the API's own channel use
// cases (listChannelsOf, createChannelConnection, getChannelConnection, selectChannelAccount,
// disconnectChannel), which keep every rule. A person looking or acting is not an API request:
// nothing is metered. The API's refusals come back as the console's (ActError, or a form's fields).

export type ChannelView = ReturnType<typeof toChannel>;
/** A channel as the list shows it: with what Herald does on it (listChannels' capabilities). */
export type ListedChannel = ReturnType<typeof toChannelView>;
export type ConnectionView = Awaited<ReturnType<typeof getChannelConnection>>;

/** Where the platforms' consent sends a console person back (the callback appends the session's id). */
export const CONNECTION_RETURN_PATH = `${CONSOLE_PATH}/channels/connections/return`;

/** How many of the workspace's scheduled posts the disconnect confirmation looks through (one query). */
export const SCHEDULED_LOOKED_AT = 100;

/** A field of the console's connect forms, and what is wrong with it. */
export type ConnectField = 'platform' | 'instance' | 'identifier' | 'app_password' | 'service' | 'account';

/** The form's input was refused: each field with its reason; nothing was stored. */
export class FieldsRefused extends Error {
  constructor(readonly fields: ReadonlyArray<{ field: ConnectField; message: string }>) {
    super(fields.map((f) => f.message).join(' '));
    this.name = 'FieldsRefused';
  }
}

export interface ChannelsOverview {
  channels: ListedChannel[];
  /** OAuth platforms, and whether the operator registered their app (the ones not set up say so). */
  oauth: Array<{ platform: OAuthPlatform; ready: boolean }>;
}

/**
 * Every channel of the workspace (listChannelsOf, as GET /v1/channels) and which OAuth platforms the
 * operator set up (one batch read of their apps, secrets left sealed). Every member.
 */
export async function channelsOverview(a: { orgId: string; actor: Actor }): Promise<ChannelsOverview> {
  const [, listed, apps] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing channels'),
    listChannelsOf(a.orgId),
    listPlatformApps(OAUTH_PLATFORMS),
  ]);
  return {
    channels: listed.data,
    oauth: OAUTH_PLATFORMS.map((platform, i) => ({ platform, ready: apps[i] != null })),
  };
}

/** What a connect form sends. */
export interface ConnectForm {
  platform: string;
  instance?: string | undefined;
  identifier?: string | undefined;
  app_password?: string | undefined;
  service?: string | undefined;
}

export type ConnectStarted =
  | { kind: 'consent'; connectionId: string }
  | { kind: 'connected'; channel: ChannelView; reconnected: boolean };

/**
 * Connects an account, or reconnects channel `channelId` in place (owners and admins), through
 * createChannelConnection: OAuth platforms and Mastodon get a session whose consent returns to the
 * console (CONNECTION_RETURN_PATH on the console's origin); Bluesky's app password is checked at
 * once and connects (audited here). Bad input: FieldsRefused, nothing stored.
 */
export async function startConnect(a: {
  orgId: string;
  actor: Actor;
  consoleOrigin: string;
  form: ConnectForm;
  channelId?: string | undefined;
  now: Date;
}): Promise<ConnectStarted> {
  const what = a.channelId ? 'reconnecting channels' : 'connecting channels';
  const by = await authorizeAct(a.orgId, a.actor, canManageChannels, what);
  const platform = a.form.platform;
  if (!(PLATFORMS as readonly string[]).includes(platform))
    throw new FieldsRefused([{ field: 'platform', message: 'Choose the platform to connect.' }]);
  const bluesky = platform === 'bluesky';
  const raw = {
    platform,
    ...(bluesky ? {} : { redirect_uri: `${a.consoleOrigin}${CONNECTION_RETURN_PATH}` }),
    ...(platform === 'mastodon' ? { instance: a.form.instance?.trim() ?? '' } : {}),
    ...(bluesky
      ? {
          credentials: {
            identifier: a.form.identifier?.trim() ?? '',
            app_password: a.form.app_password ?? '',
            ...(a.form.service?.trim() ? { service: a.form.service.trim() } : {}),
          },
        }
      : {}),
    ...(a.channelId ? { channel_id: a.channelId } : {}),
  };
  // The API's own request schema, then its use case: the same checks, field by field.
  const parsed = CreateChannelConnectionBody().safeParse(raw);
  if (!parsed.success) throw refusedFields(issuesToFieldErrors(parsed.error.issues), true);
  let session: Awaited<ReturnType<typeof createChannelConnection>>;
  try {
    session = await createChannelConnection({
      orgId: a.orgId,
      body: parsed.data,
      requestHost: new URL(a.consoleOrigin).host,
      now: a.now,
      admitted: unmetered,
    });
  } catch (err) {
    throw asConsoleError(err, platform as Platform);
  }
  if (session.status !== 'connected' || !session.channel)
    return { kind: 'consent', connectionId: session.id };
  const channel = session.channel as ChannelView;
  const reconnected = Boolean(a.channelId) || channel.created_at < session.created_at;
  await putAudit(
    auditEntry(
      { ...by, orgId: a.orgId },
      reconnected ? 'channel_reconnected' : 'channel_connected',
      channel.id,
      { platform: channel.platform, handle: channel.handle, connection_id: session.id },
      a.now,
    ),
  );
  return { kind: 'connected', channel, reconnected };
}

/**
 * A connection session as its person sees it on the console (getChannelConnection), every member.
 * Once connected, an owner's or admin's look records the act in the audit log — once per session:
 * the entry's id is derived from the session, so a reload or the second tab writes the same entry.
 */
export async function connectionOutcome(a: {
  orgId: string;
  actor: Actor;
  connectionId: string;
  now: Date;
}): Promise<ConnectionView> {
  const [by, session] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing channel connections'),
    getChannelConnection(a.orgId, a.connectionId, a.now).catch((err: unknown) => {
      throw asConsoleError(err, null);
    }),
  ]);
  if (session.status === 'connected' && session.channel && by.user && canManageChannels(by.user.role)) {
    const channel = session.channel as ChannelView;
    // A channel older than the session existed already: this session reconnected it.
    const reconnected = channel.created_at < session.created_at;
    const at = new Date(session.updated_at);
    const entry = auditEntry(
      { ...by, orgId: a.orgId },
      reconnected ? 'channel_reconnected' : 'channel_connected',
      channel.id,
      { platform: channel.platform, handle: channel.handle, connection_id: session.id },
      at,
    );
    const seed = createHash('sha256').update(`audit:${session.id}`).digest();
    await putAudit({ ...entry, id: deterministicId('audit', at.getTime(), seed) });
  }
  return session;
}

/** Connects the account the person picked among those the grant covers (owners and admins). */
export async function selectAccount(a: {
  orgId: string;
  actor: Actor;
  connectionId: string;
  accountId: string;
  now: Date;
}): Promise<ConnectionView> {
  await authorizeAct(a.orgId, a.actor, canManageChannels, 'connecting channels');
  if (!a.accountId)
    throw new FieldsRefused([{ field: 'account', message: 'Choose the account to connect.' }]);
  try {
    return await selectChannelAccount(a.orgId, a.connectionId, a.accountId, a.now, unmetered);
  } catch (err) {
    throw asConsoleError(err, null);
  }
}

/** A channel, and how many scheduled posts publish to it (among the first SCHEDULED_LOOKED_AT). */
export interface DisconnectPreview {
  channel: ChannelView;
  scheduled: { count: number; more: boolean };
}

/**
 * What the disconnect confirmation says (owners and admins): the channel, and its scheduled posts
 * counted in one query of the workspace's scheduled posts (the status index; never a scan); past
 * SCHEDULED_LOOKED_AT of them the count is a lower bound.
 */
export async function disconnectPreview(a: {
  orgId: string;
  actor: Actor;
  channelId: string;
}): Promise<DisconnectPreview> {
  const [, channel, scheduled] = await Promise.all([
    authorizeAct(a.orgId, a.actor, canManageChannels, 'disconnecting channels'),
    isId('channel', a.channelId) ? getChannel(a.orgId, a.channelId) : null,
    queryPosts(a.orgId, { limit: SCHEDULED_LOOKED_AT, status: 'scheduled' }),
  ]);
  if (!channel) throw new ActError('This workspace has no such channel.', 'not_found');
  if (channel.status === 'disconnected')
    throw new ActError('This channel is already disconnected.', 'conflict');
  const count = scheduled.posts.filter((p) => p.variants.some((v) => v.channel_id === channel.id)).length;
  return { channel: toChannel(channel), scheduled: { count, more: scheduled.hasMore } };
}

/**
 * Disconnects a channel (owners and admins) through disconnectChannel: the grant revoked at the
 * platform, the tokens erased, the channel kept as `disconnected`. Audited. Already disconnected:
 * a conflict, nothing written.
 */
export async function disconnect(a: {
  orgId: string;
  actor: Actor;
  channelId: string;
  now: Date;
}): Promise<ChannelView> {
  const [by, before] = await Promise.all([
    authorizeAct(a.orgId, a.actor, canManageChannels, 'disconnecting channels'),
    isId('channel', a.channelId) ? getChannel(a.orgId, a.channelId) : null,
  ]);
  if (!before) throw new ActError('This workspace has no such channel.', 'not_found');
  if (before.status === 'disconnected')
    throw new ActError('This channel is already disconnected.', 'conflict');
  let channel: ChannelView;
  try {
    channel = await disconnectChannel(a.orgId, a.channelId, a.now, unmetered);
  } catch (err) {
    throw asConsoleError(err, before.platform);
  }
  await putAudit(
    auditEntry(
      { ...by, orgId: a.orgId },
      'channel_disconnected',
      channel.id,
      { platform: channel.platform, handle: channel.handle },
      a.now,
    ),
  );
  return channel;
}

/** A channel of the workspace (reconnect's own checks: it must exist; the page decides the form). */
export async function channelOf(a: { orgId: string; actor: Actor; channelId: string }): Promise<ChannelView> {
  const [, channel] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing channels'),
    isId('channel', a.channelId) ? getChannel(a.orgId, a.channelId) : null,
  ]);
  if (!channel) throw new ActError('This workspace has no such channel.', 'not_found');
  return toChannel(channel);
}

const FIELD_OF: Record<string, ConnectField> = {
  '/platform': 'platform',
  '/instance': 'instance',
  '/credentials': 'identifier',
  '/credentials/identifier': 'identifier',
  '/credentials/app_password': 'app_password',
  '/credentials/service': 'service',
  '/account_id': 'account',
};

function refusedFields(errors: ReadonlyArray<{ pointer: string; message: string }>, schema = false): Error {
  const fields = errors.flatMap((e) => {
    const field = FIELD_OF[e.pointer];
    return field ? [{ field, message: schema ? fieldMessage(field, e.message) : e.message }] : [];
  });
  // Refusals of what the console itself sent (its landing, a channel id) are not the person's to fix.
  if (fields.length < errors.length) {
    const other = errors.find((e) => !FIELD_OF[e.pointer]);
    return new ActError(other?.message ?? 'The connection was refused.', 'conflict');
  }
  return new FieldsRefused(fields);
}

/** The schema's words are the API's (pointers, types); the console says what to type. */
function fieldMessage(field: ConnectField, message: string): string {
  const says: Partial<Record<ConnectField, string>> = {
    instance: 'Enter the Mastodon server’s address, e.g. https://mastodon.social.',
    identifier: 'Enter the Bluesky handle, e.g. you.bsky.social.',
    app_password: 'Enter an app password (Bluesky: Settings → Privacy and security → App passwords).',
    service: 'Enter the server’s address as https://host, or leave it empty for bsky.social.',
  };
  return says[field] ?? message;
}

const CREDENTIALS_REJECTED =
  'Bluesky did not accept this handle and app password. Check both (an app password from Settings → Privacy and security → App passwords, not your account password) and try again.';

/** The API use cases' errors as the console's: a form's fields, or a status page's kind. */
function asConsoleError(err: unknown, platform: Platform | null): unknown {
  if (!(err instanceof ApiError)) return err;
  if (err.code === 'validation_failed' && err.errors?.length)
    return refusedFields(
      err.errors.map((e) =>
        // The server's own refusal text ("…createSession 401 AuthenticationRequired…") is for the API.
        e.code === 'credentials_rejected' ? { ...e, message: CREDENTIALS_REJECTED } : e,
      ),
    );
  if (err.code === 'platform_not_configured')
    return new FieldsRefused([
      {
        field: 'platform',
        message: `${platform ?? 'This platform'} is not set up by your operator yet: ask them to register its app (herald platform-app set).`,
      },
    ]);
  if (err.code === 'platform_unavailable') {
    const field: ConnectField =
      platform === 'mastodon' ? 'instance' : platform === 'bluesky' ? 'identifier' : 'platform';
    return new FieldsRefused([{ field, message: `${err.message} Try again in a moment.` }]);
  }
  if (err.code === 'resource_not_found') return new ActError(err.message, 'not_found');
  if (err.status === 409) return new ActError(err.message, 'conflict');
  return new ActError(err.message, err.status >= 500 ? 'conflict' : 'invalid');
}
