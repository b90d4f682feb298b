import { queryInbox } from '#adapters/inbox';
import { encodeCursor, PAGE_SIZE, type PageQuery, paginate } from '#core/cursor';
import { isId } from '#core/ids';
import {
  type InboxItem,
  type InboxItemRecord,
  type InboxKind,
  type InboxStatus,
  toInboxItem,
} from '#core/inbox';

export interface ListInboxQuery extends PageQuery {
  status?: InboxStatus | undefined;
  kind?: InboxKind | undefined;
  channel_id?: string | undefined;
  post_id?: string | undefined;
}

/**
 * listInbox: the organization's items, newest first (by created_at on the platform). Primary
 * course: decode the cursor (bound to the list, the organization and every filter) → one Query of
 * the org's items, or of the status's gsi1 partition → the list envelope. The other filters are
 * applied by DynamoDB as it reads, so a filtered page may come back short with `has_more`.
 */
export async function listInbox<R = InboxItem>(
  orgId: string,
  query: ListInboxQuery,
  cursorSecret: string,
  view: (item: InboxItemRecord) => R = toInboxItem as unknown as (item: InboxItemRecord) => R,
) {
  const filter = [query.status, query.kind, query.channel_id, query.post_id].map((f) => f ?? '').join('|');
  const scope = { list: 'inbox', orgId, filter };
  const page = paginate(cursorSecret, scope, query.after, (k) => isId('inbox', k));
  const res = await queryInbox(orgId, {
    limit: query.limit ?? PAGE_SIZE.default,
    afterId: page.afterKey,
    status: query.status,
    kind: query.kind,
    channelId: query.channel_id,
    postId: query.post_id,
  });
  return {
    data: res.items.map(view),
    has_more: res.hasMore,
    // The same signed cursor as every list; its key may be an item the filters skipped.
    next_cursor: res.hasMore && res.lastKey ? encodeCursor(cursorSecret, scope, res.lastKey) : null,
  };
}
