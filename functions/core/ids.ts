import { monotonicFactory } from 'ulid';

// Prefixed ULIDs (DECISIONS §2): sortable, so "newest first" is a descending key scan.
export const ID_PREFIXES = {
  org: 'org',
  user: 'usr',
  key: 'key',
  channel: 'ch',
  post: 'post',
  variant: 'var',
  media: 'med',
  webhook: 'whe',
  message: 'msg',
} as const;
export type IdKind = keyof typeof ID_PREFIXES;

const next = monotonicFactory();

export function newId(kind: IdKind, now = Date.now()): string {
  return `${ID_PREFIXES[kind]}_${next(now)}`;
}

const ULID = '[0-9A-HJKMNP-TV-Z]{26}';
const patterns = Object.fromEntries(
  Object.entries(ID_PREFIXES).map(([kind, prefix]) => [kind, new RegExp(`^${prefix}_${ULID}$`)]),
) as Record<IdKind, RegExp>;

export function isId(kind: IdKind, value: unknown): value is string {
  return typeof value === 'string' && patterns[kind].test(value);
}
