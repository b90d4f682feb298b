import { randomUUID } from 'node:crypto';
import { countAppRefusal } from '#adapters/app-refusals';
import { credentialRedactor, getChannelWithCredentials } from '#adapters/channel-credentials';
import { invokeFit } from '#adapters/fit-function';
import { getAssets } from '#adapters/media';
import { readObject, readRange, streamObject } from '#adapters/media-store';
import { paceDelivery, recordRateLimit } from '#adapters/pacing';
import { platformAppSettings } from '#adapters/platform-apps';
import { connectorFor } from '#adapters/platforms/index';
import {
  type Connector,
  type MediaInput,
  PlatformError,
  type PublishContext,
  type PublishResult,
} from '#adapters/platforms/types';
import { ConcurrentChangeError, getPost, putPost, writeDelivery } from '#adapters/posts';
import { sendDelayed } from '#adapters/queues';
import type { ChannelRecord } from '#core/accounts';
import type { Platform } from '#core/constants';
import {
  type ClaimOutcome,
  claimDelivery,
  type DeliveryPart,
  nextPart,
  nothingPosted,
  partFailed,
  partKey,
  partSucceeded,
  replyRefs,
  settledPost,
} from '#core/delivery';
import { type MediaAssetRecord, mediaIdFromUrl, mediaUrl } from '#core/media';
import { fitPlan, renditionKeyOf } from '#core/media-fit';
import type { DeliveryMessage } from '#core/messages';
import { deferredDelivery, type PaceDecision } from '#core/pacing';
import type { DeliveryRecord, DeliveryWarning, PostRecord, VariantRecord } from '#core/posts';
import { mediaBaseUrl } from '#shared/config';
import {
  type DeliveryFacts,
  deliveryFailed as deliveryFailedLine,
  deliveryPublished,
  deliveryRetrying,
} from '#shared/metrics';
import { recordChannelFailure } from '#usecases/support/channel-health';
import { channelTokens } from '#usecases/support/channel-tokens';
import { readLinkCard } from '#usecases/support/link-card';

/** The message could not be handled now; SQS redelivers it after its visibility timeout. */
export class RetryLaterError extends Error {}

export type DeliveryOutcome = 'published' | 'retrying' | 'failed' | 'skipped';

/**
 * Delivers one (post, channel, round). Primary course: claim the delivery under a lease (no other
 * worker can send it meanwhile; a dispatch's first claim also starts the scheduled post, in the
 * same write) → while an earlier attempt may have reached the platform unbeknown to us (it died
 * mid-send, or its answer was lost: `unresolved_since`), reconcile with the platform first → publish
 * through the channel's connector → record the outcome and the post's status. Duplicated or stale
 * messages find nothing to claim; a failed attempt is retried with backoff (the platform's hint
 * first) or fails for good. A refusal is recorded on the channel by who must act
 * (core/channel-health.ts): the person (reauth_required), the operator (counted for the channel
 * sync's alarm line), or time. Each outcome this attempt records is one INFO-or-above line that is
 * also its metric (shared/metrics.ts): published (with its lateness), retrying, failed.
 */
export async function deliver(
  msg: DeliveryMessage,
  clock: () => Date = () => new Date(),
): Promise<DeliveryOutcome> {
  const claimId = randomUUID();
  const { outcome, post: seen } = await claim(msg, claimId, clock);
  if (!outcome || outcome.kind === 'skip') {
    if (outcome?.reason === 'not due yet') await requeueWhenDue(msg, seen ?? undefined, clock);
    return 'skipped';
  }
  if (outcome.kind === 'busy') throw new RetryLaterError('another worker holds this delivery');
  const { recovering, resumed } = outcome;
  const post = outcome.post;
  const attempt: Attempt = { msg, claimId, clock, latest: post };
  let delivery = post.deliveries[msg.channel_id] as DeliveryRecord;
  const variant = post.variants.find((v) => v.channel_id === msg.channel_id);

  /** The channel's credentials, and any the connector refreshed: never logged, never stored in errors. */
  const creds = credentialRedactor();
  /** The channel as read, while it is connected (its health is recorded against this read). */
  let connected: ChannelRecord | null = null;
  let tokens: ReturnType<typeof channelTokens> | undefined;
  let connector: Connector | undefined;
  let connectedCredentials: PublishContext['credentials'] | undefined;
  /** The platform app's settings the connector honours (TikTok: audited), read with the channel. */
  let appSettings: PublishContext['app'];
  /** The channel's platform once read: the outcome metrics' one dimension besides their totals. */
  let platform = 'unknown';
  /** Only the first part this attempt makes can have an unknown outcome (see core/delivery.ts). */
  let reconcileFirst = recovering;
  let part: DeliveryPart = nextPart(delivery) ?? { kind: 'root' };
  const facts = (after: PostRecord): DeliveryFacts => ({
    orgId: msg.org_id,
    postId: msg.post_id,
    channelId: msg.channel_id,
    platform,
    attempt: after.deliveries[msg.channel_id]?.attempts,
  });

  // The parts in order, each recorded before the next starts: the root, each thread item, the
  // first comment.
  for (;;) {
    let result: PublishResult | null = null;
    let failure: PlatformError | null = null;
    let wait: Extract<PaceDecision, { go: false }> | null = null;
    /** A connector call is under way: a failure now may have reached the platform. */
    let calling = false;
    /** This attempt's reconcile found that no earlier attempt posted this part. */
    let resolved = false;
    let maybeSent = false;
    /** What this part did not do as asked without failing: recorded with its success. */
    const warnings: DeliveryWarning[] = [];
    try {
      if (!variant)
        throw new PlatformError('system', `The post has no variant for channel ${msg.channel_id}.`, {
          retryable: false,
        });
      if (!connector || !connected) {
        const { channel, credentials, version } = await getChannelWithCredentials(msg.org_id, msg.channel_id);
        creds.remember(credentials);
        if (channel) platform = channel.platform;
        if (!channel || channel.status === 'disconnected') {
          // Disconnected by its owner: the post's scheduled deliveries to it fail until it is reconnected.
          throw new PlatformError(
            'auth_expired',
            'The channel is disconnected: connect it again to publish to it.',
            {
              retryable: false,
            },
          );
        }
        connected = channel;
        tokens = channelTokens({
          orgId: msg.org_id,
          channelId: msg.channel_id,
          platform: channel.platform,
          credentials,
          version,
          remember: creds.remember,
        });
        connector = await connectorFor(channel.platform);
        connectedCredentials = credentials;
        appSettings = await platformAppSettings(channel.platform);
      }
      const channel = connected;
      const content = partContent(variant, part);
      // The root's thumbnail (YouTube) is read with the part's media, in the same BatchGet: the
      // reconcile needs it too (a video found uploaded has its steps finished there).
      const thumbnail =
        part.kind === 'root' && typeof variant.options.thumbnail_url === 'string'
          ? [thumbnailRef(variant.options.thumbnail_url)]
          : [];
      const media = await mediaOf(
        msg.org_id,
        content.media,
        fitFor(channel.platform, variant.options, warnings),
        thumbnail,
      );
      const ctx: PublishContext = {
        ...(part.kind === 'root' ? {} : { part, replyTo: replyRefs(delivery, part) }),
        channel: { id: channel.id, handle: channel.handle, platform: channel.platform },
        credentials: connectedCredentials as PublishContext['credentials'],
        text: content.body,
        title: post.title,
        options: variant.options,
        media: media.slice(0, content.media.length),
        idempotencyKey: partKey(`${post.id}.${channel.id}`, part),
        checkpoint: delivery.checkpoint ?? null,
        // While an earlier attempt is unresolved, lookups search from its start (a part's own:
        // attempt_started_at moves as each part is recorded).
        attemptStartedAt: new Date(
          delivery.unresolved_since ?? delivery.attempt_started_at ?? clock().toISOString(),
        ),
        saveCheckpoint: async (checkpoint) => {
          // Saved before the irreversible step: a failure here sent nothing.
          const held = await updateClaimed(attempt, (d) => ({ ...d, checkpoint })).catch((err: Error) => {
            throw new PlatformError('system', `The delivery's checkpoint could not be saved: ${err.message}`);
          });
          // Lost the claim (our lease ran out and another worker took over): stop before the
          // irreversible step rather than risk a second post.
          if (!held)
            throw new PlatformError('system', 'The delivery was taken over by another attempt.', {
              retryable: false,
            });
        },
        tokens: tokens as PublishContext['tokens'],
        warn: (code, detail) => {
          warnings.push({ code, detail });
        },
        app: appSettings,
        ...(thumbnail.length ? { thumbnail: media[content.media.length] } : {}),
      };
      if (reconcileFirst) {
        reconcileFirst = false;
        calling = true;
        result = await connector.reconcile(ctx);
        calling = false;
        resolved = !result;
      }
      if (!result) {
        // Every post-like part takes its pacing slot (a thread item, a reply-comment); a comment
        // through a comment API is not a post.
        const paced = part.kind !== 'comment' || REPLY_COMMENTS.has(channel.platform);
        const pace = paced
          ? await paceDelivery({ orgId: msg.org_id, channel, media: content.media.length }, clock())
          : ({ go: true } as const);
        if (pace.go) {
          // The root's link card, read only now that it is about to be published (never fails it).
          if (part.kind === 'root')
            ctx.linkCard = await readLinkCard(channel.platform, variant, (code, detail) =>
              warnings.push({ code, detail }),
            );
          calling = true;
          result = await connector.publish(ctx);
          calling = false;
        } else wait = pace;
      }
    } catch (err) {
      // An error the connector did not map (an answer it could not read, say) may have come after the
      // platform acted; a mapped one says whether it may have.
      maybeSent = calling && (!(err instanceof PlatformError) || err.maybeCarriedOut);
      const raw =
        err instanceof PlatformError
          ? err
          : new PlatformError('system', (err as Error).message ?? String(err));
      failure = new PlatformError(raw.category, creds.redact(tokens?.explain(raw) ?? raw.message), raw.opts);
    }

    // The earlier attempts as this one leaves them: settled when its reconcile found nothing posted.
    const settled = (d: DeliveryRecord) => (resolved ? nothingPosted(d) : d);
    if (wait) {
      const w = wait;
      const after = await updateClaimed(attempt, (d) =>
        deferredDelivery(settled(d), w, clock(), { undoClaim: !resumed }),
      );
      const d = after?.deliveries[msg.channel_id];
      if (d?.next_attempt_at) await sendAgain(msg, d.next_attempt_at, clock);
      if (after) deliveryRetrying(facts(after), { paced: w.reason }, d?.next_attempt_at);
      return 'retrying';
    }
    if (result) {
      const done = result;
      const at = part;
      const after = await updateClaimed(attempt, (d) =>
        partSucceeded(settled(d), at, done, clock(), warnings),
      );
      // Lost the claim: whoever holds it now finds this part by its reconcile.
      if (!after) return 'skipped';
      delivery = after.deliveries[msg.channel_id] as DeliveryRecord;
      if (delivery.stage === 'published') {
        // Counted by the attempt whose write recorded it (a worker that lost its claim counts nothing).
        deliveryPublished(facts(after), latenessSeconds(post, clock()));
        return 'published';
      }
      part = nextPart(delivery) ?? { kind: 'root' };
      continue;
    }
    return await recordFailure(failure as PlatformError);

    async function recordFailure(err: PlatformError): Promise<DeliveryOutcome> {
      let hint = err.opts.retryAfterSeconds;
      if (connected && err.category === 'rate_limited') {
        const paused = await recordRateLimit(
          {
            orgId: msg.org_id,
            channel: connected,
            refusal: { category: err.category, retryAfterSeconds: hint, scope: err.opts.scope },
          },
          clock(),
        );
        if (paused) hint = paused.retryAfterSeconds;
      }
      if (connected && (err.category === 'auth_expired' || err.opts.operator)) {
        const remedy = await recordChannelFailure(connected, err, clock(), { backoff: false });
        // Counted, not alarmed here: the channel sync's finder reports one line per platform.
        if (remedy === 'operator') await countAppRefusal(connected.platform, err.message);
      }
      const at = part;
      const after = await updateClaimed(attempt, (d) =>
        partFailed(
          settled(d),
          at,
          {
            category: err.category,
            message: err.message,
            retryable: err.retryable,
            retryAfterSeconds: hint,
            maybeSent,
          },
          clock(),
        ),
      );
      const d = after?.deliveries[msg.channel_id];
      const why = { category: err.category, error: err.message };
      if (d?.stage === 'retrying' && d.next_attempt_at) {
        await sendAgain(msg, d.next_attempt_at, clock);
        if (after) deliveryRetrying(facts(after), why, d.next_attempt_at);
        return 'retrying';
      }
      // A first comment that failed for good leaves the delivery published.
      if (after && d?.stage === 'published') {
        deliveryPublished(facts(after), latenessSeconds(post, clock()));
        return 'published';
      }
      if (after && d?.stage === 'failed')
        deliveryFailedLine(facts(after), d.error_category ?? err.category, d.error ?? err.message);
      return 'failed';
    }
  }
}

/**
 * Where a first comment is a reply, itself a post (core/platforms.ts CAPABILITIES.thread; not
 * imported, so the worker's bundle does not carry the request rules).
 */
const REPLY_COMMENTS: ReadonlySet<string> = new Set(['x', 'bluesky', 'threads', 'mastodon']);

/** The text and media a part publishes: the variant's own (the root), a thread item's, or the comment's. */
function partContent(variant: VariantRecord, part: DeliveryPart): Pick<VariantRecord, 'body' | 'media'> {
  if (part.kind === 'thread') {
    const item = variant.thread?.[part.index];
    if (!item)
      throw new PlatformError('system', `The variant has no thread item ${part.index}.`, {
        retryable: false,
      });
    return item;
  }
  if (part.kind === 'comment') {
    if (!variant.first_comment)
      throw new PlatformError('system', 'The variant has no first comment.', { retryable: false });
    return { body: variant.first_comment.body, media: [] };
  }
  return variant;
}

/**
 * Seconds from when this round's delivery was due to `publishedAt`: a dispatched round was due at
 * its scheduled time; any other (published now, approved, republished) when it started. Null for
 * a round started before posts recorded their start.
 */
export function latenessSeconds(post: PostRecord, publishedAt: Date): number | null {
  const due =
    post.dispatched?.round === post.round && post.dispatched.for ? post.dispatched.for : post.started_at;
  return due ? (publishedAt.getTime() - Date.parse(due)) / 1000 : null;
}

/**
 * A retry's own message, for `due` (the delivery's next_attempt_at): every later attempt's message
 * goes through here. It leaves the dispatcher's snapshot behind, which this attempt's writes made
 * stale (a claim against it would only fail its version check first).
 */
function sendAgain(msg: DeliveryMessage, due: string, clock: () => Date): Promise<void> {
  const { snapshot: _stale, ...rest } = msg;
  return sendDelayed('delivery', { ...rest, due }, (Date.parse(due) - clock().getTime()) / 1000);
}

/** This worker's attempt at one delivery, and the post as the attempt last wrote it. */
interface Attempt {
  msg: DeliveryMessage;
  claimId: string;
  clock: () => Date;
  /** Each write is tried against this delivery's state without a read first (only this worker writes it). */
  latest: PostRecord;
}

/** Writes before a delivery gives up on a post that keeps changing under it (another copy of it, an API write). */
const ATTEMPTS = 12;

/**
 * Claims the delivery. A dispatch's first claim starts the scheduled post: a write of the whole
 * post against the version read (its status, round and every delivery change at once). Any other
 * claim writes its one delivery (writeDelivery): siblings do not contend. Tried first against the
 * dispatcher's snapshot, if any, without a read; a refused write hands back the post as it is now,
 * and the claim is decided again on that. `post`: the post as claimed, or as last seen.
 */
async function claim(
  msg: DeliveryMessage,
  claimId: string,
  clock: () => Date,
): Promise<{ outcome: ClaimOutcome | undefined; post: PostRecord | null }> {
  // The dispatcher's read, if it sent one (see DeliveryMessage.snapshot): it may be stale.
  let post: PostRecord | null | undefined = msg.snapshot;
  let trusted = !post;
  for (let i = 0; i < ATTEMPTS; i++) {
    if (!post) {
      post = await getPost(msg.org_id, msg.post_id);
      trusted = true;
      if (!post) return { outcome: undefined, post: null };
    }
    const outcome = claimDelivery(post, msg.channel_id, msg.round, claimId, clock(), msg.start);
    if (outcome.kind !== 'claimed') {
      // Nothing to claim is decided on the post as it is, never on a snapshot.
      if (trusted) return { outcome, post };
      post = undefined;
      continue;
    }
    const delivery = outcome.post.deliveries[msg.channel_id] as DeliveryRecord;
    const res: { after: PostRecord } | { current: PostRecord | null } =
      post.status === 'scheduled'
        ? await putPost(post, outcome.post)
        : await writeDelivery(post, delivery, clock(), settledWith(post, delivery, clock()));
    if ('after' in res) {
      const after = post.status === 'scheduled' ? res.after : await settle(res.after, clock());
      return { outcome: { ...outcome, post: after }, post: after };
    }
    // Refused: the post as it is now (the write's ALL_OLD) decides again.
    post = res.current;
    trusted = true;
    if (!post) return { outcome: undefined, post: null };
  }
  throw new ConcurrentChangeError();
}

/** The post as a write of `delivery` settles it, seen from `post`: carried on that write (writeDelivery). */
function settledWith(post: PostRecord, delivery: DeliveryRecord, now: Date): PostRecord | null {
  return settledPost({ ...post, deliveries: { ...post.deliveries, [delivery.channel_id]: delivery } }, now);
}

/**
 * The post's aggregate after a delivery write, as the post is after it (ALL_NEW): usually settled
 * by that write itself (settledWith); left unsettled only when siblings went final meanwhile, each
 * seeing the other still pending. Then any writer that sees it due writes it, against the version
 * it saw; one that loses looks again at the post as it is now. A crash in between is finished by
 * the sweeper's watchdog (the watch time stands).
 */
async function settle(post: PostRecord, now: Date): Promise<PostRecord> {
  let current: PostRecord | null = post;
  for (let i = 0; i < ATTEMPTS && current; i++) {
    const next = settledPost(current, now);
    if (!next) return current;
    const res = await putPost(current, next);
    if ('after' in res) return res.after;
    current = res.current;
  }
  return current ?? post;
}

/**
 * Applies `change` to the delivery only while this worker's claim still holds it (its one
 * delivery, writeDelivery); null when it did not. The post's aggregate is settled after.
 */
async function updateClaimed(
  attempt: Attempt,
  change: (d: DeliveryRecord) => DeliveryRecord,
): Promise<PostRecord | null> {
  const { msg, claimId, clock } = attempt;
  let post: PostRecord | null = attempt.latest;
  for (let i = 0; i < ATTEMPTS && post; i++) {
    const d = post.deliveries[msg.channel_id];
    if (!d || d.claim_id !== claimId || post.status !== 'publishing' || post.round !== msg.round) return null;
    const next = change(d);
    const res = await writeDelivery(post, next, clock(), settledWith(post, next, clock()));
    if ('after' in res) {
      attempt.latest = await settle(res.after, clock());
      return attempt.latest;
    }
    post = res.current;
  }
  if (!post) return null;
  throw new ConcurrentChangeError();
}

/**
 * A retry not due yet (a long platform hint chained over SQS's 15-minute delay cap): its own message
 * waits on; any other copy (a duplicate, a watchdog's redrive, an older retry's) is dropped, or it
 * would come back at every later retry.
 */
async function requeueWhenDue(
  msg: DeliveryMessage,
  post: PostRecord | undefined,
  clock: () => Date,
): Promise<void> {
  const at = post?.deliveries[msg.channel_id]?.next_attempt_at;
  if (!at || msg.due !== at) return;
  await sendAgain(msg, at, clock);
}

/** `options.thumbnail_url` as a media reference: the url of an image asset (checked at createPost). */
const thumbnailRef = (url: string): VariantRecord['media'][number] => ({ type: 'image', url, alt: '' });

// The media of a variant as connectors need it: type, alt text, content type, size and the bytes —
// read from the media bucket by the asset's object key (not fetched through the public url). Videos
// and audio only ever go by ranged reads or a stream: one of them in memory whole (up to 1 GiB) would
// take the batch's other deliveries down with it.
// `also`: more items read in the same BatchGet (the thumbnail), returned after `media` and never fitted.
export async function mediaOf(
  orgId: string,
  media: VariantRecord['media'],
  fit?: MediaFit,
  also: VariantRecord['media'] = [],
): Promise<MediaInput[]> {
  const items = also.length ? [...media, ...also] : media;
  if (!items.length) return [];
  const assets = await getAssets(
    orgId,
    items.map((m) => mediaIdFromUrl(m.url) ?? ''),
  );
  // media_fit `auto`: the planned rendition of each item that needs one, made (or found) first.
  const renditions = fit
    ? await Promise.all(
        assets
          .slice(0, media.length)
          .map((a) => (a?.status === 'ready' ? rendition(a, fit, media.length > 1) : null)),
      )
    : [];
  const done = renditions.filter((r) => r !== null).map((r) => r.summary);
  if (fit && done.length) fit.note(done.join('; '));
  return items.map((m, i) => {
    const original = assets[i];
    const r = renditions[i];
    // The rendition stands in for the original: its key, type, size and public address.
    const asset = original && r ? { ...original, ...r.asset } : original;
    const key = () => {
      if (asset?.status !== 'ready') throw new Error(`media ${m.url} is not a ready asset`);
      return asset.object_key;
    };
    return {
      type: m.type,
      alt: m.alt,
      url: r ? r.url : m.url,
      contentType: asset?.content_type ?? 'application/octet-stream',
      filename: asset?.filename ?? 'media',
      sizeBytes: asset?.size_bytes ?? 0,
      read: async () => {
        const k = key();
        if (m.type !== 'image') throw new Error(`media ${m.url}: only images are read whole`);
        return readObject('media', k);
      },
      readRange: async (start, end) => readRange('media', key(), start, end),
      stream: () => streamObject('media', key()),
    };
  });
}

/** A variant's media_fit `auto` on its platform; `note` records what was done (one warning). */
export interface MediaFit {
  platform: Platform;
  note(detail: string): void;
}

function fitFor(platform: Platform, options: VariantRecord['options'], warnings: DeliveryWarning[]) {
  if ((options as { media_fit?: string } | undefined)?.media_fit !== 'auto') return undefined;
  return { platform, note: (detail: string) => warnings.push({ code: 'media_fitted', detail }) };
}

/** How long a delivery waits for a rendition before it tries again later (the fit goes on). */
const FIT_WAIT_MS = 30_000;
/** When it tries again: a 200 MB video takes minutes to re-encode (BENCHMARKS.md, media fitting). */
const FIT_RETRY_SECONDS = 180;

/**
 * The rendition the plan asks for, made by the fit function (or found made), as the fields of the
 * asset it stands in for; null when the asset is taken as it is (or cannot be fitted: createPost
 * refused that, and the platform decides for a post made before). Media that does not decode fails
 * the delivery for good; a rendition still being made retries it later.
 */
async function rendition(asset: MediaAssetRecord, fit: MediaFit, carousel: boolean) {
  const plan = fitPlan(fit.platform, asset, { carousel });
  if (!plan || 'error' in plan) return null;
  const target = renditionKeyOf(asset.object_key, plan);
  const later = (why: string) =>
    new PlatformError('system', `${why}; the delivery tries again.`, {
      retryable: true,
      retryAfterSeconds: FIT_RETRY_SECONDS,
    });
  let answer: Awaited<ReturnType<typeof invokeFit>>;
  try {
    answer = await invokeFit(
      { source_key: asset.object_key, target_key: target, kind: plan.kind, ops: plan.ops },
      { signal: AbortSignal.timeout(FIT_WAIT_MS) },
    );
  } catch (err) {
    if ((err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError')
      throw later(`The ${asset.kind} ${asset.id} is still being fitted for ${fit.platform}`);
    throw err;
  }
  if (!answer.ok && answer.in_progress)
    throw later(`The ${asset.kind} ${asset.id} is still being fitted for ${fit.platform}`);
  if (!answer.ok)
    throw new PlatformError('media_error', `media_fit: ${asset.id}: ${answer.message}`, { retryable: false });
  return {
    summary: `${asset.id} ${plan.summary} (${answer.size_bytes} bytes)`,
    url: mediaUrl(mediaBaseUrl(), answer.key),
    asset: {
      object_key: answer.key,
      content_type: answer.content_type,
      size_bytes: answer.size_bytes,
      filename: `${asset.filename.replace(/\.[A-Za-z0-9]+$/, '')}.${plan.ext}`,
    },
  };
}
