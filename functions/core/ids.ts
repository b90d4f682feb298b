import { monotonicFactory } from 'ulid';

// Prefixed ULIDs (docs/api/concepts.md): sortable, so "newest first" is a descending key scan.
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
  connection: 'conn',
  audit: 'aud',
  session: 'ses',
  inbox: 'inb',
  reply: 'rpl',
  generation: 'gen',
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

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A prefixed ULID that is the same every time for the same `seed`: the time part from `timeMs`, the
 * rest from a hash of the seed. Event ids are derived from the change that caused them, so a
 * retried relay emits the same id (and webhook receivers see one `webhook-id`).
 */
export function deterministicId(kind: IdKind, timeMs: number, seedHash: Uint8Array): string {
  let time = '';
  let t = Math.max(0, Math.floor(timeMs));
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let rand = '';
  for (let i = 0; i < 16; i++) rand += CROCKFORD[(seedHash[i] ?? 0) % 32];
  return `${ID_PREFIXES[kind]}_${time}${rand}`;
}
