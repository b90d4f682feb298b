import type { OrgSettings } from './accounts.ts';
import type { DeliveryWarningCode, MediaKind } from './constants.ts';
import { LIMITS, type PostStatus } from './constants.ts';
import { conflict, dangerousOpsDisabled, type FieldError } from './errors.ts';
import type { CreatePostInput } from './requests.ts';
import { WATCHDOG_SECONDS } from './timing.ts';

// The post state machine (docs/api/posts.md). Pure: it decides, the adapters persist.

export type DeliveryStage =
  | 'queued'
  | 'sending'
  | 'retrying'
  | 'published'
  | 'failed'
  // unpublishPost: the platform is asked to remove what this delivery published, then it is gone.
  | 'removing'
  | 'removed';

/** Follow-up items a variant's thread may carry (under its root). */
export const MAX_THREAD_ITEMS: number = LIMITS.threadItems;

/**
 * One part of a delivery beyond its root: a thread item or the first comment. Parts publish in
 * order, each written before the next starts, so the first part not `published` is the only one
 * whose outcome an interrupted attempt can leave unknown (the delivery's `unresolved_since`).
 */
export type PartStage = 'queued' | 'published' | 'failed' | 'removed';

export interface PartRecord {
  stage: PartStage;
  external_id: string | null;
  url: string | null;
  error: string | null;
  /** What the platform needs besides the id to refer to it (Bluesky's record cid). */
  ref?: Record<string, unknown> | null;
}

/**
 * Something a published delivery did not do as asked, which did not stop it (the post is on the
 * platform): a link card the page did not give, a rendition used in place of the asset.
 */
export interface DeliveryWarning {
  code: DeliveryWarningCode;
  detail: string;
}

export interface DeliveryRecord {
  channel_id: string;
  stage: DeliveryStage;
  external_id: string | null;
  url: string | null;
  error: string | null;
  error_category: string | null;
  attempts: number;
  updated_at: string;
  /** The publish round this delivery belongs to; a message of an older round is stale. */
  round: number;
  /** The attempt in flight: who holds it, until when, and since when. */
  claim_id?: string | undefined;
  lease_until?: string | undefined;
  attempt_started_at?: string | undefined;
  /**
   * The start of the earliest attempt that may have reached the platform without our learning the
   * outcome (its worker died, or its answer was lost). While set, every attempt first asks the
   * platform (the connector's reconcile) from this time on; cleared by a success, or by a reconcile
   * that finds nothing was posted.
   */
  unresolved_since?: string | undefined;
  /** When a retrying delivery is due again. */
  next_attempt_at?: string | undefined;
  /** What the connector saved before an irreversible step (container ids, upload sessions). */
  checkpoint?: Record<string, unknown> | null;
  /** The root's platform reference besides its id (Bluesky's cid), for the replies under it. */
  ref?: Record<string, unknown> | null;
  /** One entry per thread item of the variant, in order (absent: the variant has no thread). */
  thread?: PartRecord[];
  /** What the delivery did not do as asked without failing (absent: nothing). */
  warnings?: DeliveryWarning[];
  /** The variant's first comment (absent or null: none asked for). */
  first_comment?: PartRecord | null;
  /** Internal: removal attempts that failed and are retried (unpublishPost; while `removing`). */
  removal_attempts?: number | undefined;
  /**
   * Internal: a fresh token on every write that changes this delivery (adapters/posts.ts). A
   * delivery write is conditioned on it, not on the post's version, so channels do not contend.
   */
  rev?: string | undefined;
}

export interface VariantRecord {
  id: string;
  channel_id: string;
  body: string;
  media: { url: string; type: MediaKind; alt: string }[];
  options: Record<string, unknown>;
  /** Follow-up items published as replies under this variant's own body and media, in order. */
  thread?: { body: string; media: { url: string; type: MediaKind; alt: string }[] }[];
  /** Text posted by the same account right after the post (under a thread's last item). */
  first_comment?: { body: string } | null;
}

export interface PostRecord {
  id: string;
  org_id: string;
  status: PostStatus;
  /** `thread` when any variant carries a thread. */
  type: 'single' | 'thread';
  title: string | null;
  body: string | null;
  scheduled_at: string | null;
  published_at: string | null;
  created_at: string;
  updated_at: string;
  variants: VariantRecord[];
  deliveries: Record<string, DeliveryRecord>;
  /** Incremented every time the post starts publishing. */
  round: number;
  /** Optimistic-concurrency version; every writer increments it. */
  version: number;
  /** What a needs_approval post asked for. */
  approval: { mode: 'schedule' | 'publish' } | null;
  /** The month (YYYY-MM) whose posts_per_month counted this post; null until first scheduled or published. */
  counted_period: string | null;
  /** While publishing: when the sweeper re-examines the post for lost messages or dead workers. */
  watch_at?: string | null;
  /**
   * When the current round started publishing (asked for now, approved, or a dispatch's first
   * claim): a round without a dispatch was due then (the delivery worker's PublishLateness).
   */
  started_at?: string | null;
  /**
   * The dispatch that started the current round: for which scheduled_at, when, and the round. Its
   * delivery messages were sent by the dispatcher before the post changed, so the stream relay does
   * not send them again. (Posts the sweeper re-dispatched after a lost dispatch carry it too: it
   * spaces those re-dispatches.)
   */
  dispatched?: { for: string; at: string; round?: number } | null;
  /**
   * While publishing: the time under which the post sits in the due-work index (GSI2). It stays
   * at the scheduled time when the post starts, so starting costs no index write; it moves only
   * when the watchdog time runs past what the sweeper looks back over (WATCH_ENTRY_SPAN_MS).
   */
  watch_entry?: string | null;
  /** Internal (never in the API's post): the key that created the post, and through which door. */
  created_by?: PostOrigin | null;
  /** Internal: the last approval decision (the console shows it; the API does not). */
  decision?: PostDecision | null;
}

/** Who created a post: the API key, through the REST API or the MCP server. */
export interface PostOrigin {
  key_id: string;
  via: 'api' | 'mcp';
}

/** An approval decision: who (a user id, or `operator`), when, and for a rejection why. */
export interface PostDecision {
  outcome: 'approved' | 'rejected';
  by: string;
  /** The person's address when they decided (null: the operator), so the page needs no lookup. */
  email: string | null;
  at: string;
  reason: string | null;
}

/** A rejection's reason is required and at most this long. */
export const MAX_REJECT_REASON = 500;

/** A part as the API shows it (its platform ref stays internal). */
function partOf(p: PartRecord) {
  return { stage: p.stage, external_id: p.external_id, url: p.url, error: p.error };
}

export function toPost(rec: PostRecord) {
  return {
    id: rec.id,
    status: rec.status,
    type: rec.type,
    title: rec.title,
    body: rec.body,
    scheduled_at: rec.scheduled_at,
    published_at: rec.published_at,
    created_at: rec.created_at,
    updated_at: rec.updated_at,
    variants: rec.variants.map((v) => ({
      ...v,
      thread: v.thread ?? [],
      first_comment: v.first_comment ?? null,
    })),
    deliveries: rec.variants.flatMap((v) => {
      const d = rec.deliveries[v.channel_id];
      if (!d) return [];
      return [
        {
          channel_id: d.channel_id,
          stage: d.stage,
          external_id: d.external_id,
          url: d.url,
          error: d.error,
          error_category: d.error_category,
          attempts: d.attempts,
          updated_at: d.updated_at,
          thread: (d.thread ?? []).map((p, index) => ({ index, ...partOf(p) })),
          first_comment: d.first_comment ? partOf(d.first_comment) : null,
          warnings: d.warnings ?? [],
        },
      ];
    }),
  };
}
export type PostResource = ReturnType<typeof toPost>;

// ---- createPost --------------------------------------------------------------------------------

export type Mode = 'draft' | 'schedule' | 'publish';

/** Exactly one of draft: true, scheduled_at, publish_now: true; field codes in docs/api/errors.md. */
export function resolveMode(input: CreatePostInput, now: Date): { mode: Mode } | { errors: FieldError[] } {
  const given: Array<[Mode, string]> = [];
  if (input.draft === true) given.push(['draft', '/draft']);
  if (input.scheduled_at != null) given.push(['schedule', '/scheduled_at']);
  if (input.publish_now === true) given.push(['publish', '/publish_now']);
  const [first] = given;
  if (!first) {
    return {
      errors: [
        {
          pointer: '',
          code: 'mode_required',
          message: 'Give exactly one of draft: true, scheduled_at or publish_now: true.',
        },
      ],
    };
  }
  if (given.length > 1) {
    return {
      errors: given.map(([, pointer]) => ({
        pointer,
        code: 'mode_conflict',
        message: 'draft, scheduled_at and publish_now are mutually exclusive; give exactly one.',
      })),
    };
  }
  const errors: FieldError[] = [];
  if (first[0] === 'schedule') {
    const e = checkScheduleTime(input.scheduled_at as string, now);
    if (e) errors.push(e);
  }
  if (first[0] !== 'draft' && input.variants.length === 0) {
    errors.push({
      pointer: '/variants',
      code: 'too_few_items',
      message: 'Scheduling or publishing needs at least one variant.',
    });
  }
  return errors.length ? { errors } : { mode: first[0] };
}

export function checkScheduleTime(iso: string, now: Date, pointer = '/scheduled_at'): FieldError | null {
  const at = Date.parse(iso);
  if (at <= now.getTime())
    return { pointer, code: 'not_in_future', message: 'scheduled_at must be in the future.' };
  if (at > now.getTime() + LIMITS.scheduleHorizonDays * 86_400_000) {
    return {
      pointer,
      code: 'too_far_in_future',
      message: `scheduled_at may be at most ${LIMITS.scheduleHorizonDays} days ahead.`,
    };
  }
  return null;
}

export function duplicateChannelErrors(input: CreatePostInput): FieldError[] {
  const seen = new Set<string>();
  const errors: FieldError[] = [];
  input.variants.forEach((v, i) => {
    if (seen.has(v.channel_id)) {
      errors.push({
        pointer: `/variants/${i}/channel_id`,
        code: 'duplicate_channel',
        message: 'One variant per channel.',
      });
    }
    seen.add(v.channel_id);
  });
  return errors;
}

/** The new post record for a validated createPost request. */
export function newPost(args: {
  id: string;
  orgId: string;
  input: CreatePostInput;
  mode: Mode;
  settings: OrgSettings;
  variantIds: string[];
  now: Date;
  origin?: PostOrigin | undefined;
}): PostRecord {
  const { input, mode, settings, now } = args;
  if (mode === 'publish' && !settings.dangerous_ops) throw dangerousOpsDisabled();
  const at = now.toISOString();
  const post: PostRecord = {
    id: args.id,
    org_id: args.orgId,
    status: 'draft',
    type: input.variants.some((v) => v.thread?.length) ? 'thread' : 'single',
    title: input.title ?? null,
    body: input.body ?? null,
    scheduled_at: mode === 'schedule' ? new Date(input.scheduled_at as string).toISOString() : null,
    published_at: null,
    created_at: at,
    updated_at: at,
    variants: input.variants.map((v, i) => ({
      id: args.variantIds[i] as string,
      channel_id: v.channel_id,
      body: v.body,
      media: (v.media ?? []).map((m) => ({ url: m.url, type: m.type, alt: m.alt ?? '' })),
      options: v.options ?? {},
      ...(v.thread?.length
        ? {
            thread: v.thread.map((item) => ({
              body: item.body,
              media: (item.media ?? []).map((m) => ({ url: m.url, type: m.type, alt: m.alt ?? '' })),
            })),
          }
        : {}),
      ...(v.first_comment ? { first_comment: { body: v.first_comment.body } } : {}),
    })),
    deliveries: {},
    round: 0,
    version: 1,
    approval: null,
    counted_period: null,
    ...(args.origin ? { created_by: args.origin } : {}),
  };
  if (mode === 'draft') return post;
  if (settings.approval_required) return { ...post, status: 'needs_approval', approval: { mode } };
  return mode === 'schedule' ? { ...post, status: 'scheduled' } : startPublishing(post, now);
}

// ---- transitions -------------------------------------------------------------------------------

/** A part not yet published. */
export function queuedPart(): PartRecord {
  return { stage: 'queued', external_id: null, url: null, error: null };
}

/**
 * The parts a delivery of `variant` starts with: a queued entry per thread item and for the first
 * comment. `prev` (a failed delivery published again) keeps the parts it published, so the new
 * round resumes at the first part that was not.
 */
export function initialParts(
  variant: Pick<VariantRecord, 'thread' | 'first_comment'> | undefined,
  prev?: DeliveryRecord,
): Pick<DeliveryRecord, 'thread' | 'first_comment'> {
  const kept = (p: PartRecord | null | undefined) => (p?.stage === 'published' ? p : queuedPart());
  return {
    ...(variant?.thread?.length ? { thread: variant.thread.map((_, i) => kept(prev?.thread?.[i])) } : {}),
    ...(variant?.first_comment ? { first_comment: kept(prev?.first_comment) } : {}),
  };
}

/**
 * Moves a post to publishing: a new round, and every channel that has not published yet queued.
 * A channel already published for this post is never queued again.
 */
export function startPublishing(post: PostRecord, now: Date): PostRecord {
  const at = now.toISOString();
  const round = post.round + 1;
  const deliveries: Record<string, DeliveryRecord> = {};
  for (const v of post.variants) {
    const prev = post.deliveries[v.channel_id];
    // Published, or being (or already) taken down by unpublishPost: never queued again.
    if (prev?.stage === 'published' || prev?.stage === 'removing' || prev?.stage === 'removed') {
      deliveries[v.channel_id] = prev;
      continue;
    }
    const fresh: DeliveryRecord = {
      channel_id: v.channel_id,
      stage: 'queued',
      external_id: null,
      url: null,
      error: null,
      error_category: null,
      attempts: 0,
      updated_at: at,
      round,
      ...initialParts(v, prev),
      // An outcome the failed round left unknown is looked up before anything is sent again.
      ...(prev?.unresolved_since ? { unresolved_since: prev.unresolved_since } : {}),
    };
    // A delivery that failed after its root was published resumes after it: the root (and every
    // part it published) is kept, never posted again.
    deliveries[v.channel_id] =
      prev && prev.external_id !== null
        ? { ...fresh, external_id: prev.external_id, url: prev.url, ...(prev.ref ? { ref: prev.ref } : {}) }
        : fresh;
  }
  // A scheduled post keeps its place in the due-work index (no index write); one published now
  // enters it now.
  const entry =
    post.status === 'scheduled' && post.scheduled_at && Date.parse(post.scheduled_at) <= now.getTime() + 1000
      ? post.scheduled_at
      : at;
  return {
    ...post,
    status: 'publishing',
    round,
    deliveries,
    approval: null,
    updated_at: at,
    started_at: at,
    watch_at: new Date(now.getTime() + WATCHDOG_SECONDS * 1000).toISOString(),
    watch_entry: entry,
  };
}

/**
 * How far past its due-work entry a publishing post's watchdog time may lie: the sweeper looks
 * back 30 minutes over the index, so an entry must be re-filed (moved to the watchdog time) before
 * that — only long retry waits (a platform's hint of minutes to hours) ever do it.
 */
export const WATCH_ENTRY_SPAN_MS = 25 * 60_000;

/** The due-work entry for a publishing post watched until `watchAt`: kept unless it would be out of sight. */
export function watchEntry(post: PostRecord, watchAt: string): string {
  const entry = post.watch_entry ?? watchAt;
  return Date.parse(watchAt) - Date.parse(entry) > WATCH_ENTRY_SPAN_MS ? watchAt : entry;
}

/** Channels a publishing post must still deliver to in its current round. */
export function pendingChannels(post: PostRecord): string[] {
  return Object.values(post.deliveries)
    .filter((d) => d.stage === 'queued' && d.round === post.round)
    .map((d) => d.channel_id);
}

export type Decision = { change: PostRecord } | { unchanged: PostRecord };

/**
 * posts_per_month counts a post once, when a write first makes it scheduled or publishing
 * (docs/api/limits.md). Returns the post marked as counted in `period`, or null when it is not counted now.
 */
export function countedNow(next: PostRecord, period: string): PostRecord | null {
  if (next.counted_period || (next.status !== 'scheduled' && next.status !== 'publishing')) return null;
  return { ...next, counted_period: period };
}

export function decidePublish(post: PostRecord, settings: OrgSettings, now: Date): Decision {
  switch (post.status) {
    case 'publishing':
      return { unchanged: post };
    case 'published':
      throw conflict('The post is already published.');
    case 'needs_approval':
      throw conflict(
        'The post is waiting for approval; an owner or admin approves it with `herald post approve`.',
      );
    default:
      break;
  }
  if (post.variants.length === 0) throw conflict('The post has no variants to publish.');
  if (post.status === 'draft' && settings.approval_required) {
    return {
      change: {
        ...post,
        status: 'needs_approval',
        approval: { mode: 'publish' },
        updated_at: now.toISOString(),
      },
    };
  }
  return { change: startPublishing(post, now) };
}

export function decideReschedule(
  post: PostRecord,
  scheduledAt: string,
  settings: OrgSettings,
  now: Date,
): PostRecord {
  if (post.status === 'published' || post.status === 'publishing' || post.status === 'needs_approval') {
    throw conflict(`A ${post.status.replace('_', ' ')} post cannot be rescheduled.`);
  }
  if (post.status === 'draft' && post.variants.length === 0)
    throw conflict('A draft needs variants before it can be scheduled.');
  const at = now.toISOString();
  const next = { ...post, scheduled_at: new Date(scheduledAt).toISOString(), updated_at: at };
  if (post.status === 'draft' && settings.approval_required) {
    return { ...next, status: 'needs_approval', approval: { mode: 'schedule' } };
  }
  return { ...next, status: 'scheduled' };
}

export function decideDelete(post: PostRecord, settings: OrgSettings): void {
  if (!settings.dangerous_ops) throw dangerousOpsDisabled();
  if (post.status === 'publishing')
    throw conflict('The post is publishing; wait until it is published or failed.');
  // Deleting the record would leave the platforms' copies behind with nothing left to remove them.
  if (Object.values(post.deliveries).some((d) => d.stage === 'removing'))
    throw conflict('The post is being unpublished; wait until its removals are done.');
}

/** needs_approval → scheduled (a future scheduled_at) or publishing. */
export function decideApprove(post: PostRecord, now: Date): PostRecord {
  if (post.status !== 'needs_approval')
    throw conflict(`The post is ${post.status}, not waiting for approval.`);
  const scheduled =
    post.approval?.mode === 'schedule' && post.scheduled_at && Date.parse(post.scheduled_at) > now.getTime();
  if (scheduled) return { ...post, status: 'scheduled', approval: null, updated_at: now.toISOString() };
  return startPublishing(
    { ...post, scheduled_at: post.approval?.mode === 'schedule' ? post.scheduled_at : null },
    now,
  );
}

/**
 * needs_approval → draft: a rejected post never publishes. Its schedule is dropped (a draft has
 * none); scheduling it again while approval is required sends it back to approval.
 */
export function decideReject(post: PostRecord, now: Date): PostRecord {
  if (post.status !== 'needs_approval')
    throw conflict(`The post is ${post.status}, not waiting for approval.`);
  return { ...post, status: 'draft', approval: null, scheduled_at: null, updated_at: now.toISOString() };
}

/**
 * What happened to a post since a page showed it in `shown` status (null now: it is gone), in
 * words for the person whose act on that page was refused.
 */
export function changedSince(shown: string | undefined, now: PostRecord | null): string {
  if (!now) return 'This post was deleted meanwhile.';
  if (shown === 'needs_approval' && now.status !== 'needs_approval') {
    if (now.decision?.outcome === 'rejected') return 'This post was rejected meanwhile.';
    if (now.decision?.outcome === 'approved') return 'This post was approved meanwhile.';
  }
  if (shown !== now.status) {
    const words: Record<PostStatus, string> = {
      draft: 'went back to draft',
      scheduled: 'was scheduled',
      publishing: 'started publishing',
      published: 'was published',
      failed: 'failed',
      needs_approval: 'was sent for approval',
    };
    return `This post ${words[now.status]} meanwhile.`;
  }
  return 'This post was changed meanwhile.';
}

/**
 * Where the post sits in the due-work index (GSI2), if anywhere: a scheduled post at its time; a
 * publishing post at its watch entry (the sweeper reads the post there for its watchdog time).
 */
export function dueAt(post: PostRecord): string | null {
  if (post.status === 'scheduled' && post.scheduled_at) return post.scheduled_at;
  if (post.status === 'publishing') return post.watch_entry ?? post.watch_at ?? null;
  return null;
}
