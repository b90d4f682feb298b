import type {
  Credentials,
  InboxConnector,
  InboxFetched,
  InboxPollContext,
  InboxReplyContext,
} from '#adapters/platforms/types';
import type { InboxKind } from '#core/inbox';
import type { Platform } from '#core/platforms';
import { memoryTokens } from './context.ts';

// Fixtures of the Meta inbox tests: a poll context as the poller builds it, a full poll (every page
// until `more` is false, the cursor carried over as the poller saves it), and a reply context.

export interface Channel {
  id: string;
  handle: string;
  platform: Platform;
  accountId: string | null;
}

export function pollContext(
  channel: Channel,
  credentials: Credentials,
  o: { kinds: InboxKind[]; cursor?: Record<string, unknown> | null; since?: Date; recentPosts?: string[] },
): InboxPollContext {
  return {
    channel,
    credentials,
    tokens: memoryTokens(channel.platform, credentials, []),
    kinds: o.kinds,
    cursor: o.cursor ?? null,
    since: o.since ?? new Date(Date.now() - 7 * 86400_000),
    recentPosts: o.recentPosts ?? [],
    billedReads: () => {},
  };
}

/** Every page of one poll, as the poller asks them; the items and the cursor it saves last. */
export async function pollAll(
  inbox: InboxConnector,
  base: InboxPollContext,
): Promise<{ items: InboxFetched[]; cursor: Record<string, unknown>; pages: number }> {
  const items: InboxFetched[] = [];
  let cursor = base.cursor;
  for (let pages = 1; pages <= 10; pages++) {
    const page = await inbox.poll({ ...base, cursor });
    items.push(...page.items);
    cursor = page.cursor;
    if (!page.more) return { items, cursor, pages };
  }
  throw new Error('the poll never ended');
}

export function replyContext(
  channel: Channel,
  credentials: Credentials,
  item: InboxFetched,
  text: string,
  attemptStartedAt = new Date(),
): InboxReplyContext {
  return {
    channel,
    credentials,
    tokens: memoryTokens(channel.platform, credentials, []),
    item: {
      kind: item.kind,
      platformId: item.platformId,
      inReplyTo: item.inReplyTo,
      conversationId: item.conversationId,
      rootId: item.rootId,
      ref: item.ref ?? null,
      author: { handle: item.author.handle, platform_id: item.author.platform_id },
    },
    text,
    idempotencyKey: 'rpl_unit',
    attemptStartedAt,
  };
}
