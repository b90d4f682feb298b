import type { OptionsNote } from '#core/channel-options';
import type { ErrorCategory } from '#core/delivery';
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
