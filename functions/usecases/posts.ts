import { getOrg } from '#adapters/accounts';
import { idempotent } from '#adapters/idempotency';
import {
  ConcurrentChangeError,
  getPost,
  getPostWithOrg,
  insertPost,
  loadPostContext,
  queryPosts,
  removePost,
  replacePost,
} from '#adapters/posts';
import type { Org } from '#core/accounts';
import { decodeCursor, encodeCursor } from '#core/cursor';
import {
  ApiError,
  conflict,
  dangerousOpsDisabled,
  type FieldError,
  notFound,
  ValidationError,
} from '#core/errors';
import { isId, newId } from '#core/ids';
import { mediaIdFromUrl } from '#core/media';
import { checkVariant } from '#core/platforms';
import {
  checkScheduleTime,
  decideDelete,
  decidePublish,
  decideReschedule,
  duplicateChannelErrors,
  newPost,
  type PostRecord,
  resolveMode,
  toPost,
} from '#core/posts';
import type { CreatePostInput, PostStatus } from '#core/schemas';

const postNotFound = () => notFound('post');

function requireOrg(org: Org | null): Org {
  // The key was valid moments ago; a missing org means it was removed since.
  if (!org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  return org;
}

/** Runs a read-decide-write step again when a concurrent writer got there first. */
async function withRetry<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!(err instanceof ConcurrentChangeError) || attempt >= 4) {
        if (err instanceof ConcurrentChangeError)
          throw conflict('The post changed while it was being updated; retry.');
        throw err;
      }
    }
  }
}

/**
 * createPost. Primary course: validate the modes → load the org, the channels and the media in
 * one round trip → check each variant against its platform → decide the status (draft, scheduled,
 * publishing or needs_approval) → insert. Publishing continues from the table's change stream.
 */
export async function createPost(orgId: string, input: CreatePostInput, now: Date) {
  const mode = resolveMode(input, now);
  const errors: FieldError[] = 'errors' in mode ? [...mode.errors] : [];
  errors.push(...duplicateChannelErrors(input));

  const channelIds = [
    ...new Set(input.variants.map((v) => v.channel_id).filter((id) => isId('channel', id))),
  ];
  const mediaIds = [
    ...new Set(
      input.variants.flatMap((v) =>
        (v.media ?? []).map((m) => mediaIdFromUrl(m.url)).filter((id) => id !== null),
      ),
    ),
  ];
  const ctx = await loadPostContext(orgId, channelIds, mediaIds);
  const org = requireOrg(ctx.org);

  input.variants.forEach((v, i) => {
    const channel = ctx.channels.get(v.channel_id);
    if (!channel || channel.status === 'disconnected') {
      errors.push({
        pointer: `/variants/${i}/channel_id`,
        code: 'unknown_channel',
        message: 'No connected channel with this id.',
      });
      return;
    }
    (v.media ?? []).forEach((m, j) => {
      const id = mediaIdFromUrl(m.url);
      const asset = id ? ctx.media.get(id) : undefined;
      if (asset?.status !== 'ready' || asset.url !== m.url) {
        errors.push({
          pointer: `/variants/${i}/media/${j}/url`,
          code: 'unknown_media',
          message: 'Use the url of a ready media asset of this organization.',
        });
      } else if (asset.kind !== m.type) {
        errors.push({
          pointer: `/variants/${i}/media/${j}/type`,
          code: 'media_type_mismatch',
          message: `The asset is ${asset.kind}.`,
        });
      }
    });
    errors.push(...checkVariant(channel.platform, v, `/variants/${i}`));
  });
  if (errors.length || 'errors' in mode) throw new ValidationError(errors);

  const post = newPost({
    id: newId('post', now.getTime()),
    orgId,
    input,
    mode: mode.mode,
    settings: org.settings,
    variantIds: input.variants.map(() => newId('variant', now.getTime())),
    now,
  });
  await insertPost(post);
  return toPost(post);
}

/** Recorded as JSON text, so a replay is byte-for-byte the first response. */
export const createPostIdempotent = idempotent<CreatePostInput>('createPost', async (call) => ({
  status: 201,
  json: JSON.stringify(await createPost(call.org_id, call.body, new Date())),
}));

export async function getPostById(orgId: string, postId: string) {
  if (!isId('post', postId)) throw postNotFound();
  const post = await getPost(orgId, postId);
  if (!post) throw postNotFound();
  return toPost(post);
}

export async function listPosts(
  orgId: string,
  query: { limit?: number | undefined; after?: string | undefined; status?: PostStatus | undefined },
  cursorSecret: string,
) {
  const scope = { list: 'posts', orgId, filter: query.status ?? '' };
  const afterId = query.after ? decodeCursor(cursorSecret, scope, query.after) : undefined;
  if (afterId !== undefined && !isId('post', afterId))
    throw new ApiError('invalid_request', 'The cursor is not valid for this list.');
  const page = await queryPosts(orgId, { limit: query.limit ?? 25, afterId, status: query.status });
  const last = page.posts.at(-1);
  return {
    data: page.posts.map(toPost),
    has_more: page.hasMore,
    next_cursor: page.hasMore && last ? encodeCursor(cursorSecret, scope, last.id) : null,
  };
}

/** reschedulePost: draft/scheduled/failed → scheduled at a new future time (SPEC §3). */
export async function reschedulePost(orgId: string, postId: string, scheduledAt: string, now: Date) {
  const timeError = checkScheduleTime(scheduledAt, now);
  if (timeError) throw new ValidationError([timeError]);
  if (!isId('post', postId)) throw postNotFound();
  return withRetry(async () => {
    const { org, post } = await getPostWithOrg(orgId, postId);
    const settings = requireOrg(org).settings;
    if (!post) throw postNotFound();
    const next = decideReschedule(post, scheduledAt, settings, now);
    return toPost(await replacePost(next, post.version, { approval_required: settings.approval_required }));
  });
}

/** publishPost: needs the dangerous-operations toggle; draft/scheduled/failed → publishing. */
export async function publishPost(orgId: string, postId: string, now: Date) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    const decision = decidePublish(post, org.settings, now);
    const result: PostRecord =
      'unchanged' in decision
        ? decision.unchanged
        : await replacePost(decision.change, post.version, {
            dangerous_ops: true,
            approval_required: org.settings.approval_required,
          });
    return { id: result.id, status: result.status };
  });
}

/** deletePost: needs the toggle; anything but publishing is removed. Published content stays on platforms. */
export async function deletePost(orgId: string, postId: string) {
  return withRetry(async () => {
    const { org, post } = await loadForDangerousOp(orgId, postId);
    decideDelete(post, org.settings);
    await removePost(post);
    return { id: post.id, deleted: true as const };
  });
}

/** Order of checks (DECISIONS §3): the toggle (403) before the post's existence (404). */
async function loadForDangerousOp(orgId: string, postId: string): Promise<{ org: Org; post: PostRecord }> {
  const { org, post } = isId('post', postId)
    ? await getPostWithOrg(orgId, postId)
    : { org: await getOrg(orgId), post: null };
  const o = requireOrg(org);
  if (!o.settings.dangerous_ops) throw dangerousOpsDisabled();
  if (!post) throw postNotFound();
  return { org: o, post };
}
