import { createHash } from 'node:crypto';
import { deterministicId } from '#core/ids';
import type { Platform } from '#core/platforms';

// The inbox (docs/api/inbox.md): the comments, mentions and direct messages that come back to a
// connected account, polled from each platform, kept one item per (channel, platform id), read,
// marked and answered through the API, the MCP server and the console. Pure: no I/O.

export const INBOX_KINDS = ['comment', 'mention', 'message'] as const;
export type InboxKind = (typeof INBOX_KINDS)[number];

export const INBOX_STATUSES = ['unread', 'read', 'archived'] as const;
export type InboxStatus = (typeof INBOX_STATUSES)[number];

/** A reply's stages: queued by replyToInboxItem, sending under the worker's claim, then one of the last two. */
export const REPLY_STAGES = ['queued', 'sending', 'sent', 'failed'] as const;
export type ReplyStage = (typeof REPLY_STAGES)[number];

/** How often a channel is polled at most (each channel once per interval, spread over it). */
export const POLL_INTERVAL_SECONDS = 300;
/** A channel's first poll reads this far back. */
export const BACKFILL_DAYS = 7;
/** Items are kept this long after they were received, unless the deployment says otherwise. */
export const DEFAULT_RETENTION_DAYS = 90;
/** Replies one item may hold (a conversation goes on as new items, not as an endless list). */
export const MAX_REPLIES_PER_ITEM = 50;

export interface InboxAuthor {
  handle: string;
  name: string | null;
  avatar_url: string | null;
  platform_id: string;
}

export interface InboxReply {
  /** `rpl_…` */
  id: string;
  text: string;
  stage: ReplyStage;
  /** The reply's id on the platform once sent. */
  external_id: string | null;
  url: string | null;
  /** Why it failed (stage `failed`), in the delivery's error taxonomy: `{code, message}`. */
  error: { code: string; message: string } | null;
  created_at: string;
  /** Internal: who asked for it (`key_…` or `usr_…`), attempts and claim; never in the API's item. */
  requested_by?: string;
  attempts?: number;
  claim?: { token: string; until: string; started_at: string } | null;
  sent_at?: string | null;
  /** Internal: the start of an attempt whose outcome is unknown (its worker died mid-send): a lookup searches from it. */
  unresolved_since?: string | null;
  /** Internal: when a queued retry is due (the delivery's backoff, or a pacing pause's end). */
  next_attempt_at?: string | null;
}

/** An item as stored (entity `inbox_item`). */
export interface InboxItemRecord {
  /** `inb_…`: derived from (channel, platform id) and the platform's created_at (core/inbox.ts inboxItemId). */
  id: string;
  org_id: string;
  channel_id: string;
  platform: Platform;
  kind: InboxKind;
  status: InboxStatus;
  text: string;
  url: string | null;
  author: InboxAuthor;
  post_id: string | null;
  in_reply_to: string | null;
  conversation_id: string | null;
  platform_id: string;
  created_at: string;
  received_at: string;
  replies: InboxReply[];
  /** Internal: what a reply on the platform needs besides the id (Bluesky's uri and cid, root …). */
  ref?: Record<string, unknown> | null;
  /** Internal: the platform id of the root post a comment answers (how post_id was found). */
  root_id?: string | null;
  updated_at?: string;
  /** Optimistic-lock counter for status and reply writes. */
  version?: number;
}

/** The public InboxItem (the API, MCP, events). */
export type InboxItem = Omit<
  InboxItemRecord,
  'org_id' | 'ref' | 'root_id' | 'updated_at' | 'version' | 'replies'
> & {
  replies: Array<Pick<InboxReply, 'id' | 'text' | 'stage' | 'external_id' | 'url' | 'error' | 'created_at'>>;
};

export function toInboxItem(r: InboxItemRecord): InboxItem {
  return {
    id: r.id,
    channel_id: r.channel_id,
    platform: r.platform,
    kind: r.kind,
    status: r.status,
    text: r.text,
    url: r.url,
    author: r.author,
    post_id: r.post_id,
    in_reply_to: r.in_reply_to,
    conversation_id: r.conversation_id,
    platform_id: r.platform_id,
    created_at: r.created_at,
    received_at: r.received_at,
    replies: (r.replies ?? []).map((p) => ({
      id: p.id,
      text: p.text,
      stage: p.stage,
      external_id: p.external_id,
      url: p.url,
      error: p.error,
      created_at: p.created_at,
    })),
  };
}

/**
 * The item's id: the same for the same (channel, platform id) whatever poll reads it, so two polls
 * that overlap write one item (a conditional put of this key). Its time part is the platform's
 * created_at, so the org's items sort newest first by id.
 */
export function inboxItemId(channelId: string, platformId: string, createdAt: string): string {
  const seed = createHash('sha256').update(`${channelId}\n${platformId}`).digest();
  const t = Date.parse(createdAt);
  return deterministicId('inbox', Number.isFinite(t) ? t : 0, seed);
}

/**
 * What each platform lets an app read, by kind: the grant (scope) it needs, or null where the
 * connection's own grant always allows it. A platform that offers nothing has no kinds and says why.
 * Sources: each connector's inbox.ts names the documents.
 */
export interface InboxSupport {
  kinds: Partial<Record<InboxKind, string | null>>;
  /** Why a platform (or an account type) has no inbox. */
  none?: string;
  /** Reads the platform bills per item (X): the operator may turn the platform's inbox off. */
  billedReads?: boolean;
  /** Kinds a reply can answer (messages answered in their conversation, comments and mentions by a reply). */
  replies: InboxKind[];
}

export const INBOX: Record<Platform, InboxSupport> = {
  bluesky: {
    // Direct messages only with an app password that allows them (its session's scope).
    kinds: { comment: null, mention: null, message: 'com.atproto.appPassPrivileged' },
    replies: ['comment', 'mention', 'message'],
  },
  mastodon: {
    kinds: { comment: 'read:notifications', mention: 'read:notifications', message: 'read:statuses' },
    replies: ['comment', 'mention', 'message'],
  },
  x: {
    kinds: { comment: 'tweet.read', mention: 'tweet.read', message: 'dm.read' },
    billedReads: true,
    replies: ['comment', 'mention', 'message'],
  },
  youtube: { kinds: { comment: 'https://www.googleapis.com/auth/youtube.force-ssl' }, replies: ['comment'] },
  facebook: {
    kinds: { comment: 'pages_read_user_content', message: 'pages_messaging' },
    replies: ['comment', 'message'],
  },
  instagram: {
    kinds: {
      comment: 'instagram_manage_comments',
      mention: 'instagram_manage_comments',
      message: 'instagram_manage_messages',
    },
    // Mentions are the media others tagged the account in: Meta lets no app comment on those.
    replies: ['comment', 'message'],
  },
  threads: {
    kinds: { comment: 'threads_read_replies', mention: 'threads_manage_mentions' },
    replies: ['comment', 'mention'],
  },
  linkedin: {
    kinds: { comment: 'r_organization_social' },
    replies: ['comment'],
  },
  tiktok: {
    kinds: {},
    none: "TikTok's Display and Content Posting APIs, which Herald connects through, offer no way to read or answer comments, mentions or messages.",
    replies: [],
  },
  pinterest: {
    kinds: {},
    none: 'Pinterest API v5 has no endpoint for the comments on Pins, for mentions or for messages.',
    replies: [],
  },
};

/** The channel's `inbox` (the API's channel): what it can read now, when it last did, and what is wrong. */
export interface ChannelInbox {
  available: boolean;
  kinds: InboxKind[];
  last_synced_at: string | null;
  error: string | null;
}

/** What the poller keeps per channel (entity `inbox_poll`), internal. */
export interface InboxPollRecord {
  org_id: string;
  channel_id: string;
  platform: Platform;
  /** The connector's own cursor (since_id, page tokens, per kind), saved after each page. */
  cursor: Record<string, unknown> | null;
  last_synced_at: string | null;
  error: string | null;
  /** Failed polls in a row, for the backoff; and no poll before this time. */
  failures: number;
  next_poll_at: string | null;
  created_at: string;
  updated_at: string;
}

/**
 * The channel's inbox state. LinkedIn member accounts (an `accountId` that is not an organization's
 * URN) have no comment API an app can read; organization pages do. `off`: the operator turned the
 * platform's inbox off.
 */
export function channelInbox(args: {
  platform: Platform;
  grantedScopes: readonly string[] | null | undefined;
  accountId: string | null | undefined;
  poll: Pick<InboxPollRecord, 'last_synced_at' | 'error'> | null;
  off?: boolean;
  /** The channel's status: only a live channel is polled. */
  status?: 'live' | 'reauth_required' | 'error' | 'disconnected';
}): ChannelInbox {
  const support = INBOX[args.platform];
  const base = { last_synced_at: args.poll?.last_synced_at ?? null };
  if (support.none) return { available: false, kinds: [], ...base, error: support.none };
  if (args.platform === 'linkedin' && !String(args.accountId ?? '').startsWith('urn:li:organization:'))
    return {
      available: false,
      kinds: [],
      ...base,
      error:
        'LinkedIn offers apps no API to read a member account’s comments or messages; connect an organization page.',
    };
  if (args.off)
    return {
      available: false,
      kinds: [],
      ...base,
      error: `The operator turned the ${args.platform} inbox off.`,
    };
  if (args.status === 'disconnected')
    return { available: false, kinds: [], ...base, error: 'The channel is disconnected.' };
  if (args.status === 'reauth_required')
    return {
      available: false,
      kinds: [],
      ...base,
      error: 'The platform refused the channel’s grant: reconnect it to read its inbox again.',
    };
  const kinds = inboxKinds(args.platform, args.grantedScopes);
  if (!kinds.length) {
    const needs = [...new Set(Object.values(support.kinds).filter((s): s is string => !!s))];
    return {
      available: false,
      kinds: [],
      ...base,
      error: `The channel’s grant lacks ${needs.join(', ')}: reconnect it to read its inbox.`,
    };
  }
  return { available: true, kinds, ...base, error: args.poll?.error ?? null };
}

/** Mastodon's top-level scopes cover their parts: a grant of `read` includes `read:notifications`. */
function covers(platform: Platform, granted: readonly string[], scope: string): boolean {
  if (granted.includes(scope)) return true;
  return platform === 'mastodon' && granted.includes(scope.split(':')[0] as string);
}

/** The kinds a grant lets the channel read (those that need no scope, and those whose scope was granted). */
export function inboxKinds(
  platform: Platform,
  grantedScopes: readonly string[] | null | undefined,
): InboxKind[] {
  const support = INBOX[platform];
  return INBOX_KINDS.filter((k) => {
    if (!(k in support.kinds)) return false;
    const scope = support.kinds[k];
    return scope === null || covers(platform, grantedScopes ?? [], scope as string);
  });
}

/** The longest direct message each platform takes (a reply to a comment or mention is a comment: commentMaxText). */
export const MESSAGE_MAX_TEXT: Partial<Record<Platform, number>> = {
  x: 10000,
  bluesky: 1000,
  mastodon: 500,
  facebook: 2000,
  instagram: 1000,
};

/** Seconds to wait before the next poll after `failures` failed polls in a row: 5 min doubling, at most 6 h. */
export function pollBackoffSeconds(failures: number): number {
  if (failures <= 0) return POLL_INTERVAL_SECONDS;
  return Math.min(6 * 3600, POLL_INTERVAL_SECONDS * 2 ** Math.min(failures, 10));
}

/**
 * An item's version (its ETag): an item the poller created and nothing wrote since has none and
 * counts as 1; every later write (a status, a reply) moves it with `if_not_exists(version, 1) + 1`.
 */
export const inboxItemVersion = (r: Pick<InboxItemRecord, 'version'>): number => r.version ?? 1;
/** The poll index's slots: the finder reads one a minute, so each channel comes round once per interval. */
export const POLL_SLOTS = POLL_INTERVAL_SECONDS / 60;

/** A channel's slot: a stable hash of its id (the same slot for its whole life), spread evenly. */
export function pollSlotOf(channelId: string): number {
  return createHash('sha256').update(channelId).digest().readUInt32BE(0) % POLL_SLOTS;
}

/** How far back a channel's first poll reads (BACKFILL_DAYS before `now`). */
export const backfillSince = (now: Date): Date => new Date(now.getTime() - BACKFILL_DAYS * 86_400_000);
