import { sealPending } from '#adapters/channel-connection-secrets';
import { putConnection, sessionContext } from '#adapters/channel-connections';
import { authorizationUrl, newCodeVerifier, newState } from '#adapters/oauth';
import { getInstanceAppInfo } from '#adapters/platform-apps';
import { connectFor } from '#adapters/platforms/connect-registry';
import { AccountMismatchError, ForbiddenOriginError, PlatformError } from '#adapters/platforms/types';
import { type ChannelRecord, type Org, settingsOf, toChannel } from '#core/accounts';
import {
  CONNECTION_TTL_MS,
  type ConnectionRecord,
  isLoopback,
  landingAllowed,
  landingUrl,
  OAUTH_PLATFORMS,
  type OAuthPlatform,
  toConnection,
} from '#core/connections';
import { ApiError, type FieldError, ValidationError } from '#core/errors';
import { isId, newId } from '#core/ids';
import type { Platform } from '#core/platforms';
import type { CreateChannelConnectionInput } from '#core/requests';
import { configuredPublicUrl, publicUrl } from '#shared/config';
import {
  ConnectFailure,
  connectAccount,
  instanceApp,
  refused,
  requirePlatformApp,
  scopesFor,
  verifyCredentials,
} from '#usecases/support/channel-connect';

/**
 * createChannelConnection. Primary course (OAuth platforms): check the request (a `redirect_uri`
 * lands on this machine or on an origin the organization allows, read now) and that the operator
 * configured the platform's app, then store a session with a fresh `state` (and a PKCE
 * verifier where the platform supports it) and answer 201 with the `authorize_url` the person opens.
 * Mastodon: the app is Herald's own on the named instance, registered there on first use. Bluesky:
 * the app password is checked with the PDS at once and the session answers `connected`. With
 * `channel_id`, the session reconnects that channel in place.
 */
export async function createChannelConnection(args: {
  orgId: string;
  body: CreateChannelConnectionInput;
  requestHost: string | undefined;
  now: Date;
  admitted: () => Promise<unknown>;
}) {
  const { orgId, body, now } = args;
  const platform = body.platform as Platform;
  const problems = checkFields(body);
  if (problems.length) throw new ValidationError(problems);
  const landing = body.redirect_uri === undefined ? null : landingUrl(body.redirect_uri);
  const instance = platform === 'mastodon' ? instanceBase(String(body.instance)) : null;
  // The app is read alongside the session's context, so checking the landing origin adds no
  // sequential round trip; its 409 waits until the 400s are known.
  const operatorApp = isOAuth(platform) ? requirePlatformApp(platform) : null;
  const knownInstanceApp = instance ? getInstanceAppInfo(instance) : null;
  for (const read of [operatorApp, knownInstanceApp]) read?.catch(() => undefined);
  const context = await sessionContext(orgId, {
    org: landing !== null && !isLoopback(landing) && !ownOrigin(landing, args.requestHost),
    channelId: body.channel_id !== undefined && isId('channel', body.channel_id) ? body.channel_id : null,
  });
  const refusals = [
    ...(landing && ownOrigin(landing, args.requestHost) ? [] : landingProblems(landing, context.org)),
    ...channelProblems(body, context.channel),
  ];
  if (refusals.length) throw new ValidationError(refusals);
  const id = newId('connection');
  const at = now.toISOString();
  const base: ConnectionRecord = {
    id,
    org_id: orgId,
    platform,
    status: 'awaiting_authorization',
    redirect_uri: body.redirect_uri ?? null,
    authorize_url: null,
    callback_uri: null,
    channel_id: body.channel_id ?? null,
    instance: null,
    accounts: null,
    error: null,
    expires_at: new Date(now.getTime() + CONNECTION_TTL_MS).toISOString(),
    created_at: at,
    updated_at: at,
  };

  const connect = await connectFor(platform);
  if (connect.kind === 'app_password') {
    await args.admitted();
    const account = await verify(platform, body.credentials ?? {});
    let channel: Awaited<ReturnType<typeof connectAccount>>;
    try {
      channel = await connectAccount({
        orgId,
        platform,
        account,
        connectionId: id,
        reconnect: base.channel_id,
        grantedScopes: account.scopes ?? null,
        now,
      });
    } catch (err) {
      throw asProblem(err);
    }
    const rec: ConnectionRecord = { ...base, status: 'connected', channel_id: channel.id };
    await putConnection(rec, null, null);
    return toConnection(rec, now.getTime(), toChannel(channel));
  }

  const state = newState();
  const codeVerifier = newCodeVerifier();
  let rec: ConnectionRecord;
  if (platform === 'mastodon' && instance) {
    const ours = {
      uri: `${publicUrl(args.requestHost)}/oauth/callback/mastodon`,
      configured: configuredPublicUrl() !== undefined,
    };
    await args.admitted();
    const known = await knownInstanceApp;
    const app = await instanceApp(instance, ours, connect.scopes, known).catch((err: unknown) => {
      if (err instanceof ForbiddenOriginError) throw forbidden('/instance', err.message);
      throw err;
    });
    // The app's own callback, which may name another host than this request's.
    const callback = app.redirect_uri;
    const authorize = await authorizationUrl(
      connect.server(instance),
      { clientId: app.client_id, clientSecret: '', redirectUri: callback },
      { state, codeVerifier, scopes: connect.scopes },
    );
    rec = { ...base, instance, callback_uri: callback, authorize_url: authorize };
  } else {
    const app = await (operatorApp ?? requirePlatformApp(platform));
    const authorize = await authorizationUrl(
      connect.server(),
      { clientId: app.client_id, clientSecret: '', redirectUri: app.redirect_uri },
      { state, codeVerifier, scopes: scopesFor(app, connect) },
    );
    await args.admitted();
    rec = { ...base, callback_uri: app.redirect_uri, authorize_url: authorize };
  }
  await putConnection(rec, await sealPending(rec, { codeVerifier }), state);
  return toConnection(rec, now.getTime());
}

const isOAuth = (platform: Platform): platform is OAuthPlatform =>
  (OAUTH_PLATFORMS as readonly string[]).includes(platform);

function checkFields(body: CreateChannelConnectionInput): FieldError[] {
  const out: FieldError[] = [];
  const field = (pointer: string, code: string, message: string) => out.push({ pointer, code, message });
  if (body.redirect_uri !== undefined && !landingUrl(body.redirect_uri))
    field(
      '/redirect_uri',
      'invalid_redirect_uri',
      'Must be an http or https URL without user name, password or fragment.',
    );
  if (body.platform === 'bluesky') {
    if (!body.credentials)
      field(
        '/credentials',
        'required',
        'Bluesky connects with an app password: send identifier and app_password.',
      );
  } else if (body.credentials !== undefined) {
    field(
      '/credentials',
      'not_applicable',
      `${body.platform} connects through its own consent page, not with credentials.`,
    );
  }
  if (body.platform === 'mastodon') {
    if (!body.instance)
      field('/instance', 'required', 'Name the Mastodon instance, e.g. https://mastodon.social.');
    else if (!instanceBase(body.instance))
      field('/instance', 'invalid_format', "The instance is the server's address: https://host.");
  } else if (body.instance !== undefined) {
    field('/instance', 'not_applicable', 'Only Mastodon takes an instance.');
  }
  return out;
}

/**
 * This deployment's own public origin (where its console is served on AWS) is always a landing: the
 * console sends people back to itself, and a landing on Herald's own origin redirects nowhere else.
 */
function ownOrigin(landing: URL, requestHost: string | undefined): boolean {
  const own = configuredPublicUrl() ?? (requestHost ? `https://${requestHost}` : undefined);
  return own !== undefined && URL.canParse(own) && new URL(own).origin === landing.origin;
}

/** The landing URL's origin must be loopback or one the organization allows (read just now). */
function landingProblems(landing: URL | null, org: Org | null): FieldError[] {
  if (!landing || isLoopback(landing)) return [];
  // The key authenticated a moment ago; an organization gone since has nothing to connect.
  if (!org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  if (landingAllowed(landing, settingsOf(org).landing_origins)) return [];
  return [
    {
      pointer: '/redirect_uri',
      code: 'origin_not_allowed',
      message: `${landing.origin} is not an allowed landing origin of this organization: the operator must allow it first (herald settings set --landing-origins). Loopback addresses need no allowing.`,
    },
  ];
}

/** The channel to reconnect must be one of the organization's, on the session's platform. */
function channelProblems(body: CreateChannelConnectionInput, channel: ChannelRecord | null): FieldError[] {
  if (body.channel_id === undefined) return [];
  if (!channel)
    return [
      {
        pointer: '/channel_id',
        code: 'unknown_channel',
        message: 'No channel with that id in this organization.',
      },
    ];
  if (channel.platform !== body.platform)
    return [
      {
        pointer: '/channel_id',
        code: 'platform_mismatch',
        message: `Channel ${channel.id} is a ${channel.platform} channel.`,
      },
    ];
  return [];
}

/**
 * A Mastodon server's base URL, normalized (no trailing slash), or '' when it is not one. Servers run
 * at the root of their host; a path prefix is kept for those behind a reverse proxy that adds one.
 */
function instanceBase(value: string): string {
  if (!URL.canParse(value)) return '';
  const url = new URL(value);
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.search || url.hash) return '';
  return url.origin + url.pathname.replace(/\/+$/, '');
}

const forbidden = (pointer: string, message: string) =>
  new ValidationError([{ pointer, code: 'forbidden_address', message }]);

/** Bluesky's app password, checked with the PDS: refused → 400 credentials_rejected. */
async function verify(platform: Platform, credentials: Record<string, unknown>) {
  try {
    return await verifyCredentials(platform, credentials);
  } catch (err) {
    if (err instanceof ForbiddenOriginError) throw forbidden('/credentials/service', err.message);
    if (err instanceof AccountMismatchError)
      throw new ValidationError([
        { pointer: '/credentials/identifier', code: 'identity_mismatch', message: err.message },
      ]);
    if (refused(err))
      throw new ValidationError([
        {
          pointer: '/credentials/app_password',
          code: 'credentials_rejected',
          message: `The platform refused these credentials: ${(err as PlatformError).message}`,
        },
      ]);
    if (err instanceof PlatformError)
      throw new ApiError(
        'platform_unavailable',
        `The platform could not check the credentials now: ${err.message}`,
      );
    throw err;
  }
}

/** A connection that cannot complete, as the API answers it. */
export function asProblem(err: unknown): unknown {
  if (!(err instanceof ConnectFailure)) return err;
  if (err.code === 'account_mismatch')
    return new ValidationError([{ pointer: '/channel_id', code: 'account_mismatch', message: err.message }]);
  return new ApiError('resource_conflict', err.message);
}
