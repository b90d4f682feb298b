import type { ErrorCategory } from './delivery.ts';
import { conflict, type FieldError, ValidationError } from './errors.ts';
import { CAPABILITIES, type Platform } from './platforms.ts';
import type { Decision, DeliveryRecord, PartRecord, PostRecord } from './posts.ts';

// unpublishPost (docs/api/posts.md, "Unpublishing"): which deliveries of a post are taken down
// from their platforms, and how a removal ends. Pure: the use case and the worker persist.

/** A delivery's `error` on a platform that cannot take a post down (it stays `published`). */
export const UNPUBLISH_UNSUPPORTED = 'unpublish_unsupported';

/** Removal attempts before a retryable failure is reported (the delivery back to `published`). */
export const MAX_REMOVAL_ATTEMPTS = 5;

/**
 * What an unpublishPost request does to the post. `channelIds` absent: every channel published (or
 * being removed). Named channels must be variants of the post that published (400 otherwise,
 * pointer `/channel_ids/<i>`). Each chosen delivery `published` on a platform that can remove posts
 * goes `removing` (the stream relay sends its removal); one on a platform that cannot gets
 * `error: unpublish_unsupported` and stays published; one already `removing` or `removed` is left
 * as it is, so a repeated request changes nothing and sends nothing. A post that is publishing, or
 * with nothing published among the chosen, answers 409. A channel whose record is gone (platform
 * unknown) goes `removing` too: the worker reports why it could not be removed.
 */
export function decideUnpublish(
  post: PostRecord,
  channelIds: readonly string[] | undefined,
  platformOf: (channelId: string) => Platform | undefined,
  now: Date,
): Decision {
  if (post.status === 'publishing')
    throw conflict('The post is publishing; wait until it is published or failed, then unpublish it.');
  const inPost = new Set(post.variants.map((v) => v.channel_id));
  const delivery = (id: string) => (inPost.has(id) ? post.deliveries[id] : undefined);
  let chosen: DeliveryRecord[];
  if (channelIds) {
    const errors: FieldError[] = [];
    const seen = new Set<string>();
    channelIds.forEach((id, i) => {
      const pointer = `/channel_ids/${i}`;
      const d = delivery(id);
      if (seen.has(id)) errors.push({ pointer, code: 'duplicate_channel', message: 'Each channel once.' });
      else if (!inPost.has(id))
        errors.push({ pointer, code: 'not_in_post', message: 'The post has no variant for this channel.' });
      else if (!d || !TAKEN_DOWN_OR_UP.has(d.stage))
        errors.push({
          pointer,
          code: 'not_published',
          message: `Nothing was published to this channel (its delivery is ${d?.stage ?? 'not started'}).`,
        });
      seen.add(id);
    });
    if (errors.length) throw new ValidationError(errors);
    chosen = channelIds.map((id) => delivery(id) as DeliveryRecord);
  } else {
    chosen = post.variants.flatMap((v) => {
      const d = post.deliveries[v.channel_id];
      return d && (d.stage === 'published' || d.stage === 'removing') ? [d] : [];
    });
  }
  if (!chosen.some((d) => d.stage === 'published' || d.stage === 'removing'))
    throw conflict('Nothing of this post is published on those channels: there is nothing to remove.');

  const at = now.toISOString();
  let deliveries: Record<string, DeliveryRecord> | undefined;
  for (const d of chosen) {
    if (d.stage !== 'published') continue;
    const platform = platformOf(d.channel_id);
    const next: DeliveryRecord =
      platform && !CAPABILITIES[platform].unpublish
        ? { ...d, error: UNPUBLISH_UNSUPPORTED, error_category: null }
        : { ...d, stage: 'removing', error: null, error_category: null, removal_attempts: 0, updated_at: at };
    if (next.stage === d.stage && d.error === UNPUBLISH_UNSUPPORTED) continue;
    deliveries ??= { ...post.deliveries };
    deliveries[d.channel_id] = { ...next, updated_at: at };
  }
  if (!deliveries) return { unchanged: post };
  return { change: { ...post, deliveries, updated_at: at } };
}

const TAKEN_DOWN_OR_UP = new Set(['published', 'removing', 'removed']);

/** The published parts of a delivery as the connector removes them: last first, the root last. */
export function partsToRemove(d: DeliveryRecord): Array<{
  kind: 'root' | 'thread' | 'comment';
  externalId: string;
  url: string | null;
  ref?: PartRecord['ref'];
}> {
  const live = (p: PartRecord | null | undefined): p is PartRecord & { external_id: string } =>
    !!p && p.stage === 'published' && !!p.external_id;
  const parts: ReturnType<typeof partsToRemove> = [];
  const comment = d.first_comment;
  if (live(comment))
    parts.push({
      kind: 'comment',
      externalId: comment.external_id,
      url: comment.url,
      ref: comment.ref ?? null,
    });
  for (const item of [...(d.thread ?? [])].reverse())
    if (live(item))
      parts.push({ kind: 'thread', externalId: item.external_id, url: item.url, ref: item.ref ?? null });
  if (d.external_id) parts.push({ kind: 'root', externalId: d.external_id, url: d.url, ref: d.ref ?? null });
  return parts;
}

/** A removal done: the delivery and each of its published parts `removed` (ids kept, for the record). */
export function removalSucceeded(d: DeliveryRecord, now: Date): DeliveryRecord {
  const gone = (p: PartRecord): PartRecord => (p.stage === 'published' ? { ...p, stage: 'removed' } : p);
  return {
    ...d,
    stage: 'removed',
    error: null,
    error_category: null,
    removal_attempts: undefined,
    updated_at: now.toISOString(),
    ...(d.thread ? { thread: d.thread.map(gone) } : {}),
    ...(d.first_comment ? { first_comment: gone(d.first_comment) } : {}),
  };
}

/**
 * A removal that failed: retried (still `removing`, the attempt counted) while retryable and under
 * MAX_REMOVAL_ATTEMPTS; otherwise the delivery is back to `published` (it is still on the platform)
 * with the reason in `error`/`error_category`.
 */
export function removalFailed(
  d: DeliveryRecord,
  failure: { category: ErrorCategory; message: string; retryable: boolean },
  now: Date,
): DeliveryRecord {
  const attempts = (d.removal_attempts ?? 0) + 1;
  const at = now.toISOString();
  const error = `Removing it from the platform failed: ${failure.message}`;
  if (failure.retryable && attempts < MAX_REMOVAL_ATTEMPTS)
    return { ...d, removal_attempts: attempts, error, error_category: failure.category, updated_at: at };
  return {
    ...d,
    stage: 'published',
    removal_attempts: undefined,
    error,
    error_category: failure.category,
    updated_at: at,
  };
}

/** Whether any delivery of the post is being removed. */
export const removing = (post: PostRecord | undefined): boolean =>
  !!post && Object.values(post.deliveries).some((d) => d.stage === 'removing');
