import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from './errors.ts';

// Opaque, tamper-evident cursors: base64url(JSON payload) + '.' + base64url(HMAC-SHA256).
// The payload binds the list, the organization and the filter, so a cursor replayed against
// another list or organization fails like a forged one.

export interface CursorScope {
  list: string;
  orgId: string;
  /** Anything else that shapes the list (e.g. the status filter). */
  filter?: string;
}

interface Payload {
  l: string;
  o: string;
  f: string;
  k: string;
}

const b64 = (buf: Buffer | string) => Buffer.from(buf).toString('base64url');

function sign(secret: string, body: string): string {
  return b64(createHmac('sha256', secret).update(body).digest());
}

export function encodeCursor(secret: string, scope: CursorScope, lastKey: string): string {
  const payload: Payload = { l: scope.list, o: scope.orgId, f: scope.filter ?? '', k: lastKey };
  const body = b64(JSON.stringify(payload));
  return `${body}.${sign(secret, body)}`;
}

const badCursor = () =>
  new ApiError(
    'invalid_request',
    'The cursor is not valid for this list; pass a next_cursor from this list unchanged.',
  );

/** Returns the last key of the previous page, or throws invalid_request. */
export function decodeCursor(secret: string, scope: CursorScope, cursor: string): string {
  const [body, mac, extra] = cursor.split('.');
  if (!body || !mac || extra !== undefined) throw badCursor();
  const expected = Buffer.from(sign(secret, body));
  const given = Buffer.from(mac);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw badCursor();
  let payload: Payload;
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
  } catch {
    throw badCursor();
  }
  if (payload === null || typeof payload !== 'object') throw badCursor();
  if (payload.l !== scope.list || payload.o !== scope.orgId || payload.f !== (scope.filter ?? ''))
    throw badCursor();
  if (typeof payload.k !== 'string' || payload.k.length === 0) throw badCursor();
  return payload.k;
}

/** One page as an adapter reads it: `limit` items, and whether more follow. */
export interface Page<T> {
  items: T[];
  hasMore: boolean;
}

/**
 * Every paginated list's rules in one place: `after` is decoded (and must name a key `valid`
 * accepts, or it is `400 invalid_request`), and the answer is the list envelope whose
 * `next_cursor` carries the page's last key, bound to the list, the organization and the filter.
 */
export function paginate(
  secret: string,
  scope: CursorScope,
  after: string | undefined,
  valid: (key: string) => boolean,
) {
  const afterKey = after ? decodeCursor(secret, scope, after) : undefined;
  if (afterKey !== undefined && !valid(afterKey)) throw badCursor();
  return {
    afterKey,
    envelope<T, R>(page: Page<T>, toPublic: (item: T) => R, lastKey: (item: T) => string) {
      const last = page.items.at(-1);
      return {
        data: page.items.map(toPublic),
        has_more: page.hasMore,
        next_cursor: page.hasMore && last !== undefined ? encodeCursor(secret, scope, lastKey(last)) : null,
      };
    },
  };
}

/** The query parameters every paginated list takes. */
export interface PageQuery {
  limit?: number | undefined;
  after?: string | undefined;
}

/** Default and bounds of `limit` on every paginated list. */
export const PAGE_SIZE = { default: 25, max: 100 } as const;
