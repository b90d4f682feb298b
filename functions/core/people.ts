import { createHash, randomBytes } from 'node:crypto';
import type { Role, User } from './accounts.ts';

// The people of an organization in the console: who acts (a person signed in, or the operator's
// CLI), what they may do, and the records that let them in (enrollment links, passkeys, sessions)
// and remember what they did (the audit log).

/** Owners outrank admins, who outrank members. A session is ended when its user falls below it. */
export const ROLE_RANK: Record<Role, number> = { owner: 3, admin: 2, member: 1 };

/**
 * Who does an act. `person`: someone signed in to the console (their role is read again for every
 * act). `operator`: the admin CLI (IAM on AWS, the machine locally), allowed everything; with
 * `onBehalfOf` (the CLI's `--by`) that user must exist in the organization with the act's role.
 */
export type Actor =
  | { kind: 'person'; userId: string }
  | { kind: 'operator'; onBehalfOf?: string | undefined };

export const OPERATOR: Actor = { kind: 'operator' };

/** Why an act was refused; the console renders it as a page, the CLI prints it. */
export class ActError extends Error {
  constructor(
    message: string,
    readonly kind: 'not_found' | 'forbidden' | 'conflict' | 'invalid' | 'rate_limited' = 'invalid',
  ) {
    super(message);
    this.name = 'ActError';
  }
}

/** Enrollment links work once and for at most this long. */
export const ENROLLMENT_TTL_MS = 30 * 60_000;
/** A WebAuthn ceremony (options → answer) must finish within this. */
export const CEREMONY_TTL_MS = 5 * 60_000;
/** A session ends after this long without a request… */
export const SESSION_IDLE_MS = 60 * 60_000;
/** …and this long after sign-in whatever happens. */
export const SESSION_ABSOLUTE_MS = 12 * 60 * 60_000;
/** A session's last-seen time is written at most this often (not on every request). */
export const SESSION_TOUCH_MS = 5 * 60_000;
/** Sign-in and enrollment attempts allowed per source address and minute. */
export const ATTEMPTS_PER_MINUTE = 20;
/** Audit entries are kept this long. */
export const AUDIT_RETENTION_DAYS = 400;

export interface EnrollmentRecord {
  org_id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  /** Who issued it (audit): `operator` or a user id. */
  issued_by: string;
}

export interface PasskeyRecord {
  org_id: string;
  user_id: string;
  /** base64url credential id. */
  credential_id: string;
  /** base64url COSE public key. */
  public_key: string;
  counter: number;
  transports: string[];
  /** A name to tell passkeys apart ("Passkey added 2026-11-27" unless the person names it). */
  name: string;
  created_at: string;
  last_used_at: string | null;
}

export type CeremonyKind = 'enroll' | 'sign_in' | 'add_passkey';

export interface CeremonyRecord {
  id: string;
  kind: CeremonyKind;
  /** base64url challenge the answer must sign. */
  challenge: string;
  /** Known for enroll and add_passkey; sign-in learns it from the answer. */
  org_id: string | null;
  user_id: string | null;
  /** enroll: the link's token hash, spent when the passkey is saved. */
  enrollment_hash: string | null;
  expires_at: string;
}

export interface ConsoleSessionRecord {
  id: string;
  org_id: string;
  user_id: string;
  /** The role at sign-in: a user demoted below it loses the session. */
  role: Role;
  created_at: string;
  seen_at: string;
  expires_at: string;
  /** The credential id of the passkey that opened it: removing that passkey ends the session. */
  passkey?: string;
}

/**
 * What ends a person's sessions early, kept on their user item (which every request reads with the
 * session, so checking it costs no round trip): a "sign out everywhere" ends those opened up to
 * `validAfter`; a removed passkey ends those it opened (`endedPasskeys`), and those naming no
 * passkey (opened before sessions named theirs) that began before `passkeyRemovedAt`.
 */
export interface SessionCutoffs {
  validAfter: string | null;
  endedPasskeys: ReadonlySet<string>;
  passkeyRemovedAt: string | null;
}

/** The person a request is made by, as the console's handlers see it. */
export interface SignedIn {
  session: ConsoleSessionRecord;
  user: User;
}

export const AUDIT_ACTIONS = [
  'org_created',
  'member_invited',
  'member_role_changed',
  'member_removed',
  'enrollment_issued',
  'passkey_added',
  'passkey_removed',
  'signed_in',
  'signed_out',
  'signed_out_everywhere',
  'key_minted',
  'key_revoked',
  'settings_changed',
  'plan_changed',
  'post_approved',
  'post_rejected',
  'post_rescheduled',
  'post_published',
  'post_deleted',
  'post_edited',
  'post_unpublished',
  'inbox_replied',
  'channel_connected',
  'channel_reconnected',
  'channel_disconnected',
  'webhook_created',
  'webhook_updated',
  'webhook_tested',
  'webhook_secret_rotated',
  'webhook_enabled',
  'webhook_deleted',
  'act_refused',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  id: string;
  org_id: string;
  at: string;
  actor: {
    kind: 'person' | 'operator';
    /** The person, or the user the operator named with `--by`. */
    user_id: string | null;
    email: string | null;
  };
  action: AuditAction;
  /** What the act was on: a key, user, post id; null for the workspace itself. */
  target: string | null;
  /** What changed, in words and values; never a secret. */
  detail: Record<string, string | number | boolean | string[] | null>;
}

/** A secret for a link or a cookie: 256 random bits, base64url. Only its hash is ever stored. */
export function newSecretToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The SHA-256 (hex) under which a link's or a cookie's secret is stored. */
export function hashSecret(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
