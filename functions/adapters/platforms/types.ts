import type { OptionsNote } from '#core/channel-options';
import type { DeliveryWarningCode } from '#core/constants';
import type { ErrorCategory } from '#core/delivery';
import type { InboxKind } from '#core/inbox';
import type { LinkCard } from '#core/link-cards';
import type { PaceScope } from '#core/pacing';
import type { MediaKind, Platform } from '#core/platforms';

// The contract every platform connector implements. A connector turns one variant into one post on
// its platform through the platform's documented public API, and reports failures in our error
// taxonomy (docs/api/posts.md, "Deliveries") so the delivery worker can decide: retry, fail, or ask for re-auth.

export type Credentials = Record<string, unknown>;

export interface MediaInput {
  type: MediaKind;
  alt: string;
  contentType: string;
  filename: string;
  sizeBytes: number;
  /** Public URL of the asset (Meta container flows fetch media by URL). */
  url: string;
  /** The whole asset, for images only (≤ 20 MiB): videos and audio go by `readRange` or `stream`. */
  read(): Promise<Uint8Array>;
  /** Bytes [start, end) of the asset (one ranged read): chunked uploads hold one chunk at a time. */
  readRange(start: number, end: number): Promise<Uint8Array>;
  /** The asset as a stream of `sizeBytes` bytes, for uploads that take one request body. */
  stream(): ReadableStream<Uint8Array>;
}

/**
 * A channel's tokens as a connector uses them. Renewing them is not the connector's business: the
 * worker passes a source that refreshes through the one OAuth client, under the credentials' lease.
 */
export interface TokenSource {
  /** The credentials as they are now (after any refresh). */
  readonly credentials: Credentials;
  /** A current access token, renewed first when it expires within a minute. */
  accessToken(): Promise<string>;
  /** After the platform refused the token: renew it once. False when that is not possible (again). */
  refreshAfter401(): Promise<boolean>;
}

/** Which part of a delivery a publish call makes: the root post, a thread item, or the first comment. */
export type Part = { kind: 'root' } | { kind: 'thread'; index: number } | { kind: 'comment' };

/** A part already on the platform, as a reply or a comment refers to it. */
export interface PublishedRef {
  externalId: string;
  url: string | null;
  /** What the platform needs besides the id (Bluesky's record cid); as the part's publish returned it. */
  ref?: Record<string, unknown> | null;
}

export interface PublishContext {
  /**
   * The part this call makes (absent: the root). A thread item is a reply to `replyTo.parent`
   * under `replyTo.root`; the first comment is made on `replyTo.parent` (the root, or a thread's
   * last item) — as a reply where the platform's comments are replies (X, Bluesky, Threads,
   * Mastodon), through its comment API elsewhere. `text`/`media` are the part's own.
   */
  part?: Part;
  replyTo?: { root: PublishedRef; parent: PublishedRef } | null;
  channel: { id: string; handle: string; platform: Platform };
  credentials: Credentials;
  text: string;
  title: string | null;
  options: Record<string, unknown>;
  media: MediaInput[];
  /** Stable for one (post, channel): the platform's idempotency key where it has one. */
  idempotencyKey: string;
  /** What a previous attempt of this delivery saved before an irreversible step, if anything. */
  checkpoint: Record<string, unknown> | null;
  /** Persist progress (a container id, an upload session) before the step that cannot be undone. */
  saveCheckpoint(checkpoint: Record<string, unknown>): Promise<void>;
  /** The channel's tokens (OAuth platforms), renewed when they expire or are refused. */
  tokens: TokenSource;
  /**
   * The start of the earliest attempt whose outcome is unknown (else of this attempt): platforms
   * that can be searched find a post an earlier attempt made from there.
   */
  attemptStartedAt: Date;
  /**
   * The root's preview card of the first URL in its text (Bluesky, LinkedIn; core/link-cards.ts),
   * read by the worker before the call; null or absent: no card (none asked, or the page gave none).
   */
  linkCard?: LinkCard | null;
  /** Note on the delivery what it did not do as asked without failing (its `warnings`). */
  warn?(code: DeliveryWarningCode, detail: string): void;
  /** The deployment's platform-app settings the connector honours (TikTok: `audited`). */
  app?: { audited?: boolean } | undefined;
  /**
   * The image asset `options.thumbnail_url` names (YouTube), read from the media bucket like the
   * part's media; absent when the variant names none.
   */
  thumbnail?: MediaInput | undefined;
}

export interface PublishResult {
  externalId: string;
  url: string | null;
  /** Kept with the part for the replies and comments made under it (Bluesky: `{ cid }`). */
  ref?: Record<string, unknown> | null;
}

/** What unpublishPost asks of a connector: remove one delivery's parts, replies first. */
export interface UnpublishContext {
  channel: { id: string; handle: string; platform: Platform };
  credentials: Credentials;
  tokens: TokenSource;
  /** Every published part of the delivery, last first (first comment, thread items, root). */
  parts: Array<PublishedRef & { kind: Part['kind'] }>;
}

/** One value a channel option may take, read live from the platform (a board, a playlist …). */
export interface Choice {
  value: string;
  label: string;
}

export interface ChoicesContext {
  channel: { id: string; handle: string; platform: Platform };
  credentials: Credentials;
  tokens: TokenSource;
  /** A fact the platform answered beside the choices (TikTok's longest video, its disabled interactions). */
  limit?(name: string, value: number | boolean | string): void;
  /** Why a list is empty or short (a grant the platform wants, a list cut at its page bound). */
  note?(note: OptionsNote): void;
}

export interface Engagement {
  impressions: number;
  likes: number;
  comments: number;
  shares: number;
  clicks: number;
}

export interface MetricsContext {
  channel: { id: string; handle: string; platform: Platform };
  credentials: Credentials;
  externalIds: string[];
  tokens: TokenSource;
}

/** One comment, mention or message as a platform answered it (the poller makes an InboxItem of it). */
export interface InboxFetched {
  kind: InboxKind;
  /** The platform's id of the comment, post or message: with the channel, what makes the item unique. */
  platformId: string;
  text: string;
  /** Where a person sees it on the platform, or null (messages). */
  url: string | null;
  author: { handle: string; name: string | null; avatar_url: string | null; platform_id: string };
  /** The platform id of what it answers (a post or a comment), or null. */
  inReplyTo: string | null;
  /** A message's conversation; a comment's root post. */
  conversationId: string | null;
  /** The platform id of the root post a comment or reply answers: Herald's own posts are found by it. */
  rootId: string | null;
  /** When it was made, on the platform (ISO 8601). */
  createdAt: string;
  /** What a reply needs besides the id (Bluesky: the item's and the root's uri and cid). */
  ref?: Record<string, unknown> | null;
}

export interface InboxPollContext {
  /** `accountId`: the channel's own account on the platform (its own items are not inbox items). */
  channel: { id: string; handle: string; platform: Platform; accountId: string | null };
  credentials: Credentials;
  tokens: TokenSource;
  /** The kinds this channel may read now (granted, and not turned off by the operator). */
  kinds: InboxKind[];
  /** What the previous page returned as its cursor (null: the first poll, a backfill from `since`). */
  cursor: Record<string, unknown> | null;
  /** Read nothing made before this (the first poll: 7 days back). */
  since: Date;
  /** Herald's recently published posts on this channel (platform ids), for platforms read post by post. */
  recentPosts: string[];
  /** Counts items the platform bills as reads (X), for the metrics and the bench. */
  billedReads(count: number): void;
}

/**
 * One page of a poll. The poller writes the items, then saves `cursor`, then asks again while
 * `more`: a poll killed between the two reads the page again (the items' ids dedupe it).
 */
export interface InboxPage {
  items: InboxFetched[];
  cursor: Record<string, unknown>;
  more: boolean;
}

export interface InboxReplyContext {
  channel: { id: string; handle: string; platform: Platform; accountId: string | null };
  credentials: Credentials;
  tokens: TokenSource;
  item: {
    kind: InboxKind;
    platformId: string;
    inReplyTo: string | null;
    conversationId: string | null;
    rootId: string | null;
    ref: Record<string, unknown> | null;
    author: { handle: string; platform_id: string };
  };
  text: string;
  /** The reply's id (`rpl_…`): the platform's idempotency key where it has one. */
  idempotencyKey: string;
  /** The first attempt's start: a lookup after a crash finds a reply made from there. */
  attemptStartedAt: Date;
}

/** The inbox side of a connector (core/inbox.ts INBOX says which kinds each platform has). */
export interface InboxConnector {
  /** One page of new items since `cursor` (or `since`), of the kinds asked. */
  poll(ctx: InboxPollContext): Promise<InboxPage>;
  /** Answers the item: a reply to a comment or mention, a message in a message's conversation. */
  reply(ctx: InboxReplyContext): Promise<PublishResult>;
  /**
   * After an attempt whose outcome is unknown (its worker died, its answer was lost): the reply it
   * made, found on the platform, or null when there is none (sending again cannot double). Throw
   * (outcomeUnknown in support.ts) when the platform cannot tell.
   */
  findReply(ctx: InboxReplyContext): Promise<PublishResult | null>;
}

export interface Connector {
  publish(ctx: PublishContext): Promise<PublishResult>;
  /**
   * While an earlier attempt's outcome is unknown (its worker died mid-publish, or its answer was
   * lost): find the post it may have made (via the platform's idempotency, the saved checkpoint, or
   * a lookup from `attemptStartedAt`). null: no such post exists, and publish (which honours the
   * checkpoint) cannot make a second one. Throw when the outcome cannot be known (outcomeUnknown /
   * orOutcomeUnknown in support.ts: retryable when the cause was).
   */
  reconcile(ctx: PublishContext): Promise<PublishResult | null>;
  /** Engagement per external id, for platforms that expose metrics. */
  metrics?(ctx: MetricsContext): Promise<Record<string, Engagement>>;
  /**
   * Removes the parts from the platform (core/platforms.ts CAPABILITIES.unpublish). A part the
   * platform no longer has counts as removed: `alreadyGone` lists those external ids.
   */
  unpublish?(ctx: UnpublishContext): Promise<{ alreadyGone: string[] }>;
  /** The live values of the channel's options (getChannelOptions' `choices`), by option name. */
  choices?(ctx: ChoicesContext): Promise<Record<string, Choice[]>>;
  /** Reading and answering the channel's comments, mentions and messages (core/inbox.ts INBOX). */
  inbox?: InboxConnector;
}

export class PlatformError extends Error {
  constructor(
    readonly category: ErrorCategory,
    message: string,
    readonly opts: {
      retryable?: boolean;
      retryAfterSeconds?: number;
      status?: number;
      /** The platform refused the operator's app, not the person's grant (core/channel-health.ts). */
      operator?: boolean;
      /**
       * rate_limited: whose limit was spent — the account's (the default) or the whole platform
       * app's, which pauses every channel of the platform (core/pacing.ts).
       */
      scope?: PaceScope;
      /**
       * The platform may have acted without our learning how: the request left and no answer came
       * back (a timeout, a dropped connection), or a look for an earlier attempt's post could not tell.
       */
      unknownOutcome?: boolean;
    } = {},
  ) {
    super(message);
    this.name = 'PlatformError';
  }

  get retryable(): boolean {
    return this.opts.retryable ?? (this.category === 'rate_limited' || this.category === 'system');
  }

  /**
   * The platform may have carried the request out: the outcome is unknown, or the answer was a 5xx
   * (a proxy's 502/504 says nothing about what the server behind it did). A 4xx, a 429 or a refused
   * connection say it did not.
   */
  get maybeCarriedOut(): boolean {
    return this.opts.unknownOutcome === true || (this.opts.status !== undefined && this.opts.status >= 500);
  }
}

/** The server a user named resolves to an address Herald never calls (private, loopback, metadata …). */
/** The account a server signed in is not the one the person named (a server can claim any handle). */
export class AccountMismatchError extends PlatformError {
  constructor(message: string) {
    super('platform_rejected', message, { retryable: false });
    this.name = 'AccountMismatchError';
  }
}

export class ForbiddenOriginError extends PlatformError {
  constructor(platform: string, address: string) {
    super('platform_rejected', `${platform}: the server's address ${address} is not allowed`, {
      retryable: false,
    });
    this.name = 'ForbiddenOriginError';
  }
}
