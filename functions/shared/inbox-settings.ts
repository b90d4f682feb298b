import { DEFAULT_RETENTION_DAYS } from '#core/inbox';
import { PLATFORMS, type Platform } from '#core/platforms';

// The deployment's inbox settings (docs/operator/settings.md: `inboxRetentionDays`,
// `inboxDisabledPlatforms`), passed to the inbox's functions as environment variables. Read per
// call: tests and the local stack set them after load.

export const INBOX_RETENTION_ENV = 'HERALD_INBOX_RETENTION_DAYS';
export const INBOX_DISABLED_ENV = 'HERALD_INBOX_DISABLED_PLATFORMS';

/** Days an item is kept after it was received (1–3650; the default when unset or invalid). */
export function inboxRetentionDays(): number {
  const n = Number(process.env[INBOX_RETENTION_ENV]);
  return Number.isInteger(n) && n >= 1 && n <= 3650 ? n : DEFAULT_RETENTION_DAYS;
}

/** Platforms whose inbox the operator turned off (X bills every read): comma-separated names. */
export function inboxDisabledPlatforms(): ReadonlySet<Platform> {
  const names = (process.env[INBOX_DISABLED_ENV] ?? '').split(',').map((s) => s.trim());
  return new Set(PLATFORMS.filter((p) => names.includes(p)));
}
