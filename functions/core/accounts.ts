import { createHash, randomBytes } from 'node:crypto';
import type { ApiError } from './errors.ts';
import type { Limits, PlanName } from './plans.ts';
import type { Platform } from './platforms.ts';
import type { Scope } from './vocabulary.ts';

// Organizations, their users and API keys, and who may do what.

export type Plan = PlanName;
export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export interface OrgSettings {
  dangerous_ops: boolean;
  approval_required: boolean;
  /**
   * Origins (`https://app.example.com`) a connection session may send the person back to; loopback
   * needs no entry. Absent on organizations created before the setting existed: none.
   */
  landing_origins?: string[];
}

export interface Org {
  id: string;
  name: string;
  plan: Plan;
  /** Operator overrides of the plan's allowances (`herald plan set --limits`). */
  limits?: Partial<Limits> | null;
  /** Connected channels; kept with the org so the plan bound is checked atomically. */
  channel_count?: number;
  /**
   * Owners of the organization, kept with the org so "the last owner can be neither removed nor
   * demoted" is one transaction condition. Absent on organizations created before it existed:
   * counted from the users and set the first time an act touches an owner.
   */
  owner_count?: number;
  settings: OrgSettings;
  /** Counts the changes of `settings` (absent: none yet), so a form read before one is refused. */
  settings_version?: number;
  created_at: string;
  updated_at: string;
}

export interface User {
  id: string;
  org_id: string;
  email: string;
  role: Role;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  org_id: string;
  name: string | null;
  scopes: Scope[];
  created_by: string;
  created_at: string;
  revoked_at: string | null;
  /**
   * Set at revocation: the key's last admitted request as the gate knew it then (the gate's entry
   * becomes the revocation, and its months age out of the list's reach; this stays).
   */
  last_used_at?: string | null;
  /** First characters of the key, to recognise it in lists without revealing it. */
  prefix: string;
}

export interface ChannelRecord {
  id: string;
  org_id: string;
  platform: Platform;
  handle: string;
  avatar_url: string | null;
  followers: number;
  status: 'live' | 'reauth_required' | 'error' | 'disconnected';
  last_sync_at: string | null;
  last_error: string | null;
  created_at: string;
  /** The platform's id of the account the channel posts as (from the platform at connect). */
  account_id?: string | null;
  /**
   * The scopes the platform granted at the last connect (core/platforms.ts channelCapabilities):
   * absent on channels connected before Herald recorded them.
   */
  granted_scopes?: string[] | null;
  /** The connection that last (re)connected it: a new one emits channel.connected. */
  connection_id?: string | null;
  connected_at?: string | null;
  /** When the channel sync looks at it next (token refresh ahead of expiry, profile). */
  next_sync_at?: string | null;
  /** Failed syncs in a row (transient platform failures), for the backoff. */
  sync_failures?: number;
  updated_at?: string;
  /**
   * Internal (never in the API's channel): the platform refused this account with a rate limit and
   * Herald sends nothing to it before then (ISO 8601), and why (core/pacing.ts, adapters/pacing.ts).
   */
  pace_until?: string;
  pace_reason?: string;
}

export const KEY_PREFIX = 'svc_live_';

/** A new plaintext key: the prefix and 32 random bytes. Shown once, stored only as its hash. */
export function generateApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** Keys are 256-bit random, so a fast hash is enough: no dictionary to protect against. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export const looksLikeApiKey = (key: string) =>
  key.startsWith(KEY_PREFIX) && key.length > KEY_PREFIX.length + 20 && key.length < 200;

export const canMintKeys = (role: Role) => role === 'owner' || role === 'admin';
export const canChangeSettings = (role: Role) => role === 'owner';
export const canApprovePosts = (role: Role) => role === 'owner' || role === 'admin';
export const canManageMembers = (role: Role) => role === 'owner';
export const canReadAuditLog = (role: Role) => role === 'owner';
/** Connecting, reconnecting and disconnecting channels from the console. */
export const canManageChannels = (role: Role) => role === 'owner' || role === 'admin';
/** Creating, changing, testing, re-enabling and deleting webhook endpoints from the console. */
export const canManageWebhooks = (role: Role) => role === 'owner' || role === 'admin';
/** Rescheduling, publishing and deleting posts from the console (the API's own rules still apply). */
export const canActOnPosts = (role: Role) => role === 'owner' || role === 'admin';
/** Seeing the workspace (keys without secrets, members, settings): every member. */
export const anyRole = (_role: Role) => true;

export const defaultSettings = (): Required<OrgSettings> => ({
  dangerous_ops: false,
  approval_required: false,
  landing_origins: [],
});

/** Every setting of the organization, the defaults standing in for those it was created without. */
export const settingsOf = (org: Pick<Org, 'settings'>): Required<OrgSettings> => ({
  ...defaultSettings(),
  ...org.settings,
});

export function toChannel(rec: ChannelRecord) {
  return {
    id: rec.id,
    platform: rec.platform,
    handle: rec.handle,
    avatar_url: rec.avatar_url,
    followers: rec.followers,
    status: rec.status,
    last_sync_at: rec.last_sync_at,
    last_error: rec.last_error,
    created_at: rec.created_at,
  };
}

/** Who an API request acts for: its key, the key's scopes, and the organization's plan and limits. */
export interface AuthContext {
  orgId: string;
  keyId: string;
  scopes: ReadonlySet<Scope>;
  plan: PlanName;
  limits: Limits;
}

/** The request gate's answer for one request (usecases/support/admission.ts). */
export type Admission =
  | {
      allowed: true;
      headers: Record<string, string>;
      apiRequests: number;
      period: string;
      /** The gate's write also counted one post against posts_per_month (asked with PostsToCount). */
      postCounted?: boolean;
    }
  | {
      allowed: false;
      headers: Record<string, string>;
      error: ApiError;
      /** Refused only because the post it was asked to count would exceed posts_per_month. */
      postsRefused?: boolean;
    };

/** A post to count against posts_per_month in the gate's own write: in `period` (YYYY-MM), under `limit`. */
export interface PostsToCount {
  period: string;
  limit: number;
}
