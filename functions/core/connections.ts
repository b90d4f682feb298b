import { PLATFORMS } from './constants.ts';
import type { Platform } from './platforms.ts';

// Channel connection sessions (docs/api/channels.md): the path from "connect a LinkedIn account" to a
// live channel. A session starts awaiting the person's consent at the platform (OAuth) — or is
// connected at once (Bluesky's app passwords) — may wait for the person to pick one of the accounts
// the grant covers, and ends connected (with the channel), failed (with a reason) or expired.

export const CONNECTION_STATUSES = [
  'awaiting_authorization',
  'selecting_account',
  'connected',
  'failed',
  'expired',
] as const;
export type ConnectionStatus = (typeof CONNECTION_STATUSES)[number];

/** How long a person has to consent at the platform and to pick an account. */
export const CONNECTION_TTL_MS = 10 * 60_000;

/** Platforms connected through OAuth (Bluesky uses app passwords; Mastodon registers per instance). */
export type OAuthPlatform = Exclude<Platform, 'bluesky' | 'mastodon'>;
export const OAUTH_PLATFORMS: readonly OAuthPlatform[] = PLATFORMS.filter(
  (p): p is OAuthPlatform => p !== 'bluesky' && p !== 'mastodon',
);

/** Why a session failed: the `error.code` of a failed session. */
export const CONNECTION_FAILURES = {
  consent_denied: 'The person declined the authorization at the platform.',
  authorization_failed: 'The platform refused the authorization request.',
  token_exchange_failed: 'The platform refused to exchange the authorization code for tokens.',
  missing_scopes: 'The grant lacks permissions publishing needs.',
  no_accounts: 'The grant covers no account Herald can publish to.',
  account_mismatch: 'The account chosen is not the one of the channel being reconnected.',
  channel_limit: "The organization is at its plan's channel bound.",
  platform_unavailable: 'The platform could not be reached; start a new connection.',
  server_error: 'Herald could not complete the connection; start a new one.',
} as const;
export type ConnectionFailure = keyof typeof CONNECTION_FAILURES;

/** An account the grant covers, as a session shows it while the person picks one. */
export interface ConnectionAccount {
  id: string;
  type: string;
  handle: string;
  name: string | null;
  avatar_url: string | null;
  followers: number;
}

export interface ConnectionRecord {
  id: string;
  org_id: string;
  platform: Platform;
  status: Exclude<ConnectionStatus, 'expired'>;
  /** Where the person's browser lands at the end (the client's page). */
  redirect_uri: string | null;
  /** The URL to send the person to (OAuth sessions awaiting authorization). */
  authorize_url: string | null;
  /** The redirect URI registered at the platform, sent with the authorization and the exchange. */
  callback_uri: string | null;
  /** The channel to reconnect in place, or (once connected) the channel. */
  channel_id: string | null;
  /** Mastodon: the instance's origin. */
  instance: string | null;
  accounts: ConnectionAccount[] | null;
  error: { code: ConnectionFailure; message: string } | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
}

export function connectionStatus(rec: ConnectionRecord, now: number): ConnectionStatus {
  const open = rec.status === 'awaiting_authorization' || rec.status === 'selecting_account';
  return open && Date.parse(rec.expires_at) <= now ? 'expired' : rec.status;
}

/** The public ChannelConnection resource. `channel` is the connected channel, when there is one. */
export function toConnection(rec: ConnectionRecord, now: number, channel: unknown = null) {
  const status = connectionStatus(rec, now);
  return {
    id: rec.id,
    platform: rec.platform,
    status,
    redirect_uri: rec.redirect_uri,
    authorize_url: status === 'awaiting_authorization' ? rec.authorize_url : null,
    channel_id: rec.channel_id,
    accounts: status === 'selecting_account' ? (rec.accounts ?? []) : null,
    channel: status === 'connected' ? channel : null,
    error: rec.error,
    expires_at: rec.expires_at,
    created_at: rec.created_at,
    updated_at: rec.updated_at,
  };
}

const LOOPBACK = new Set(['localhost', '[::1]']);

/**
 * `raw` as a URL a person may land on at all: http(s), no user name, password or fragment. Whether
 * its origin is allowed is landingAllowed's question. Null when it cannot be one.
 */
export function landingUrl(raw: string): URL | null {
  if (!URL.canParse(raw)) return null;
  const url = new URL(raw);
  if (!/^https?:$/.test(url.protocol) || url.username || url.password || url.hash) return null;
  return url;
}

/**
 * This machine (a CLI, a development server): localhost, 127.0.0.0/8, [::1], any port. The URL
 * parser writes every IPv4 form as four decimal octets, so `127.evil.example` is no IPv4 here.
 */
export const isLoopback = (url: URL): boolean =>
  LOOPBACK.has(url.hostname) || /^127(\.\d{1,3}){3}$/.test(url.hostname);

/**
 * Whether a session may send the person to `url`: loopback, or an origin the organization allows
 * (scheme, host and port equal), so a key cannot turn Herald's domain into a redirector.
 */
export const landingAllowed = (url: URL, allowed: readonly string[]): boolean =>
  isLoopback(url) || allowed.includes(url.origin);

/**
 * An entry of the organization's landing origins: `raw`'s origin (lower-cased, default port
 * dropped) when it is an http(s) origin and nothing more — no path, query, fragment or user info.
 */
export function landingOrigin(raw: string): string | null {
  if (!URL.canParse(raw)) return null;
  const url = new URL(raw);
  if (!/^https?:$/.test(url.protocol) || url.username || url.password) return null;
  if (url.pathname !== '/' || url.search || url.hash) return null;
  return url.origin;
}

/** The landing URL with the outcome: `?connection_id=…&status=…` (and `error` when it failed). */
export function landing(rec: ConnectionRecord, now: number): string | null {
  if (!rec.redirect_uri) return null;
  const url = new URL(rec.redirect_uri);
  url.searchParams.set('connection_id', rec.id);
  url.searchParams.set('status', connectionStatus(rec, now));
  if (rec.error) url.searchParams.set('error', rec.error.code);
  return url.toString();
}
