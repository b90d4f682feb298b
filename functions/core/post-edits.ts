import { isDeepStrictEqual } from 'node:util';
import { conflict, type FieldError } from './errors.ts';
import type { DeliveryRecord, PostRecord, VariantRecord } from './posts.ts';

// updatePost's decision (docs/api/posts.md, "Editing a post"): what a PUT of a post's content makes
// of the post as read. Pure: the use case validates the content and writes the result.

/** The content a PUT replaces: title, body and the variants (the schedule is not part of it). */
export interface PostContentInput {
  title?: string | null | undefined;
  body?: string | null | undefined;
  variants: ReadonlyArray<{
    channel_id: string;
    body: string;
    media?:
      | ReadonlyArray<{ url: string; type: VariantRecord['media'][number]['type']; alt?: string | undefined }>
      | undefined;
    options?: Record<string, unknown> | undefined;
    thread?:
      | ReadonlyArray<{
          body: string;
          media?:
            | ReadonlyArray<{
                url: string;
                type: VariantRecord['media'][number]['type'];
                alt?: string | undefined;
              }>
            | undefined;
        }>
      | undefined;
    first_comment?: { body: string } | null | undefined;
  }>;
}

/** Statuses whose content may be edited. */
export const EDITABLE = new Set(['draft', 'scheduled', 'failed', 'needs_approval']);

/**
 * A scheduled post this close to its time may have been dispatched already (the dispatcher reads it
 * up to a second early, then its first delivery starts it): a channel added now could miss the
 * round's messages, so adding one is refused until it is rescheduled. Other edits are safe: the
 * round starts from the post as it is when its first delivery claims it.
 */
export const DISPATCH_MARGIN_MS = 5_000;

/** `publishing` and `published` posts keep their content: 409. */
export function assertEditable(post: PostRecord): void {
  if (EDITABLE.has(post.status)) return;
  throw conflict(
    post.status === 'publishing'
      ? 'The post is publishing; its content cannot change until it is published or failed.'
      : 'The post is published; its content can no longer change.',
  );
}

/** Field errors of an edit that depend on the post: a post past draft needs variants. */
export function editFieldErrors(post: PostRecord, input: PostContentInput): FieldError[] {
  if (post.status === 'draft' || input.variants.length > 0) return [];
  return [
    {
      pointer: '/variants',
      code: 'too_few_items',
      message: `A ${post.status.replace('_', ' ')} post needs at least one variant.`,
    },
  ];
}

/** A variant as the input gives it, with its record id (the channel's existing one, else a new one). */
function variantOf(v: PostContentInput['variants'][number], id: string): VariantRecord {
  const record: VariantRecord = {
    id,
    channel_id: v.channel_id,
    body: v.body,
    media: (v.media ?? []).map((m) => ({ url: m.url, type: m.type, alt: m.alt ?? '' })),
    options: v.options ?? {},
  };
  if (v.thread?.length)
    record.thread = v.thread.map((t) => ({
      body: t.body,
      media: (t.media ?? []).map((m) => ({ url: m.url, type: m.type, alt: m.alt ?? '' })),
    }));
  if (v.first_comment) record.first_comment = { body: v.first_comment.body };
  return record;
}

/** A variant's content, without its id: what "changed" compares. */
const contentOf = ({ id: _id, ...rest }: VariantRecord) => ({
  ...rest,
  thread: rest.thread ?? [],
  first_comment: rest.first_comment ?? null,
});

/** Whether a delivery put anything on its platform (its root, or any part). */
export function publishedAnything(d: DeliveryRecord | undefined): boolean {
  if (!d) return false;
  return (
    d.stage === 'published' ||
    d.external_id !== null ||
    (d.thread ?? []).some((p) => p.stage === 'published') ||
    d.first_comment?.stage === 'published'
  );
}

export type EditDecision = { unchanged: PostRecord } | { change: PostRecord };

/**
 * The post with its content replaced. `publishing`/`published` → 409. On a `failed` post, a
 * channel that published anything keeps its variant as it is (409 naming it), and so does one whose
 * last attempt's outcome is unknown (the old content may be on the platform). Same content →
 * unchanged (nothing written). With approval required, changed content of a `scheduled` or
 * `needs_approval` post goes (back) to `needs_approval`: what was approved is what publishes.
 */
export function decideUpdate(
  post: PostRecord,
  input: PostContentInput,
  opts: { approvalRequired: boolean; now: Date; newVariantId: () => string },
): EditDecision {
  assertEditable(post);
  const existing = new Map(post.variants.map((v) => [v.channel_id, v]));
  const variants = input.variants.map((v) =>
    variantOf(v, existing.get(v.channel_id)?.id ?? opts.newVariantId()),
  );
  const next = new Map(variants.map((v) => [v.channel_id, v]));
  const changed = (channelId: string) => {
    const was = existing.get(channelId);
    const now = next.get(channelId);
    return !was || !now || !isDeepStrictEqual(contentOf(was), contentOf(now));
  };

  for (const v of post.variants) {
    const d = post.deliveries[v.channel_id];
    if (!changed(v.channel_id) || !d) continue;
    if (publishedAnything(d))
      throw conflict(
        `Channel ${v.channel_id} already published this post; its variant cannot change or be removed (give it exactly as it is).`,
      );
    if (d.unresolved_since)
      throw conflict(
        `Channel ${v.channel_id}'s last attempt may have reached the platform (its outcome is unknown); its variant cannot change until that is settled.`,
      );
  }
  if (
    post.status === 'scheduled' &&
    post.scheduled_at &&
    Date.parse(post.scheduled_at) - opts.now.getTime() < DISPATCH_MARGIN_MS &&
    variants.some((v) => !existing.has(v.channel_id))
  )
    throw conflict('The post is due now and may be starting; reschedule it before adding a channel to it.');

  const title = input.title ?? null;
  const body = input.body ?? null;
  const contentChanged =
    title !== post.title ||
    body !== post.body ||
    variants.length !== post.variants.length ||
    variants.some((v, i) => post.variants[i]?.channel_id !== v.channel_id || changed(v.channel_id));
  if (!contentChanged) return { unchanged: post };

  // Deliveries follow the variants: a removed channel's is dropped (only an unpublished one can
  // be); a changed one forgets its checkpoint, which holds the old content's upload state.
  const deliveries: Record<string, DeliveryRecord> = {};
  for (const v of variants) {
    const d = post.deliveries[v.channel_id];
    if (!d) continue;
    deliveries[v.channel_id] = changed(v.channel_id) && d.checkpoint ? { ...d, checkpoint: null } : d;
  }
  const edited: PostRecord = {
    ...post,
    title,
    body,
    variants,
    deliveries,
    type: variants.some((v) => v.thread?.length) ? 'thread' : 'single',
    updated_at: opts.now.toISOString(),
  };
  if (opts.approvalRequired && (post.status === 'scheduled' || post.status === 'needs_approval')) {
    return {
      change: {
        ...edited,
        status: 'needs_approval',
        approval: post.status === 'scheduled' ? { mode: 'schedule' } : post.approval,
        // The last decision was about the content before this edit.
        decision: null,
      },
    };
  }
  return { change: edited };
}
