import { credentialRedactor, getChannelWithCredentials } from '#adapters/channel-credentials';
import { connectorFor } from '#adapters/platforms/index';
import { PlatformError } from '#adapters/platforms/types';
import { getPost, mutatePost } from '#adapters/posts';
import { sendDelayed } from '#adapters/queues';
import { retryDelaySeconds } from '#core/delivery';
import { MAX_DELAY_SECONDS, type UnpublishMessage } from '#core/messages';
import type { DeliveryRecord } from '#core/posts';
import { partsToRemove, removalFailed, removalSucceeded, UNPUBLISH_UNSUPPORTED } from '#core/unpublish';
import { logger } from '#shared/logger';
import { channelTokens } from '#usecases/support/channel-tokens';

export type RemovalOutcome = 'removed' | 'retrying' | 'failed' | 'skipped';

/**
 * Takes one delivery down from its platform (unpublishPost). Primary course: read the post; while
 * the delivery is still `removing`, ask the channel's connector to remove its published parts, last
 * first (first comment, thread items, root) → record it `removed`, parts too. A duplicate or stale
 * message finds the delivery no longer removing (or at another attempt) and does nothing. A crash
 * after the platform removed it and before the write leaves the message to come back: the platform's
 * delete is idempotent and a part already gone counts as removed (`alreadyGone`), so the second
 * pass ends the same. A retryable failure is retried with backoff by this worker's own delayed
 * message (the platform's hint first), up to MAX_REMOVAL_ATTEMPTS; any other ends the removal:
 * the delivery is back to `published` with the reason in its `error`. Removals are not pacing's
 * business: they post nothing.
 */
export async function removeDelivery(
  msg: UnpublishMessage,
  clock: () => Date = () => new Date(),
): Promise<RemovalOutcome> {
  const { post, delivery } = await current(msg);
  if (!post || !delivery) return 'skipped';
  // A platform's hint longer than SQS's delay cap: this retry waits on in a message of its own.
  const wait = msg.due ? (Date.parse(msg.due) - clock().getTime()) / 1000 : 0;
  if (wait > 0) {
    await sendDelayed('unpublish', msg, wait);
    return 'skipped';
  }
  const creds = credentialRedactor();
  let tokens: ReturnType<typeof channelTokens> | undefined;
  let failure: PlatformError;
  try {
    const { channel, credentials, version } = await getChannelWithCredentials(msg.org_id, msg.channel_id);
    creds.remember(credentials);
    if (!channel || channel.status === 'disconnected')
      throw new PlatformError(
        'auth_expired',
        'The channel is disconnected: connect it again, then unpublish the post again.',
        { retryable: false },
      );
    const connector = await connectorFor(channel.platform);
    if (!connector.unpublish)
      throw new PlatformError('platform_rejected', UNPUBLISH_UNSUPPORTED, { retryable: false });
    tokens = channelTokens({
      orgId: msg.org_id,
      channelId: msg.channel_id,
      platform: channel.platform,
      credentials,
      version,
      remember: creds.remember,
    });
    const parts = partsToRemove(delivery);
    const { alreadyGone } = parts.length
      ? await connector.unpublish({
          channel: { id: channel.id, handle: channel.handle, platform: channel.platform },
          credentials,
          tokens,
          parts,
        })
      : { alreadyGone: [] };
    const done = await record(msg, (d) => removalSucceeded(d, clock()));
    if (done)
      logger.info('delivery removed', {
        org_id: msg.org_id,
        post_id: msg.post_id,
        channel_id: msg.channel_id,
        platform: channel.platform,
        already_gone: alreadyGone.length,
      });
    return done ? 'removed' : 'skipped';
  } catch (err) {
    const raw =
      err instanceof PlatformError ? err : new PlatformError('system', (err as Error).message ?? String(err));
    failure = new PlatformError(raw.category, creds.redact(tokens?.explain(raw) ?? raw.message), raw.opts);
  }
  const failed = failure;
  const next = removalFailed(
    delivery,
    { category: failed.category, message: failed.message, retryable: failed.retryable },
    clock(),
  );
  const facts = {
    org_id: msg.org_id,
    post_id: msg.post_id,
    channel_id: msg.channel_id,
    error: failed.message,
  };
  if (next.stage === 'removing') {
    // The retry's message goes first, then the attempt is counted: a failure between them fails
    // this record, SQS brings this message back (still at its attempt), and the early retry,
    // finding the count unmoved, is dropped. No attempt is lost, none runs twice at once.
    const attempt = next.removal_attempts ?? 1;
    const delay = retryDelaySeconds(attempt, failed.opts.retryAfterSeconds);
    const due =
      delay > MAX_DELAY_SECONDS ? new Date(clock().getTime() + delay * 1000).toISOString() : undefined;
    const { due: _old, ...rest } = msg;
    await sendDelayed(
      'unpublish',
      { ...rest, attempt, ...(due ? { due } : {}) } satisfies UnpublishMessage,
      delay,
    );
    if (!(await record(msg, () => next))) return 'skipped';
    logger.warn('removal retrying', { ...facts, attempt, delay_seconds: delay });
    return 'retrying';
  }
  if (!(await record(msg, () => next))) return 'skipped';
  logger.error('removal failed', facts);
  return 'failed';
}

/** The post and the delivery this message is for, while it is still to be removed at its attempt. */
async function current(msg: UnpublishMessage) {
  const post = await getPost(msg.org_id, msg.post_id);
  const d = post?.deliveries[msg.channel_id];
  return { post, delivery: d && isFor(d, msg) ? d : undefined };
}

const isFor = (d: DeliveryRecord, msg: UnpublishMessage) =>
  d.stage === 'removing' && (d.removal_attempts ?? 0) === (msg.attempt ?? 0);

/** Writes the delivery's next state while it is still the one this message is for; null otherwise. */
async function record(
  msg: UnpublishMessage,
  change: (d: DeliveryRecord) => DeliveryRecord,
): Promise<DeliveryRecord | null> {
  let written: DeliveryRecord | null = null;
  await mutatePost(msg.org_id, msg.post_id, (post) => {
    written = null;
    const d = post.deliveries[msg.channel_id];
    if (!d || !isFor(d, msg)) return null;
    written = change(d);
    return {
      ...post,
      deliveries: { ...post.deliveries, [msg.channel_id]: written },
      updated_at: written.updated_at,
    };
  });
  return written;
}
