import type { Context } from 'aws-lambda';
import { checkIdempotencyKey, idempotent } from '#adapters/idempotency';
import { loadPostContext } from '#adapters/posts';
import type { FieldError } from '#core/errors';
import { ValidationError } from '#core/errors';
import { newId } from '#core/ids';
import { postInputIds, validatePostInput } from '#core/post-input';
import { newPost, type PostOrigin, resolveMode, toPost } from '#core/posts';
import type { CreatePostInput } from '#core/requests';
import { type Gate, PostCounter, quotaAware, requireOrg } from '#usecases/support/post-writes';

// Its own module so only createPost's bundle carries (and initializes) the idempotency layer.

type PostContext = Awaited<ReturnType<typeof loadPostContext>>;

/** The org, the channels and the media assets the input names, in one round trip. */
function readPostContext(orgId: string, input: CreatePostInput): Promise<PostContext> {
  const { channelIds, mediaIds } = postInputIds(input);
  return loadPostContext(orgId, channelIds, mediaIds);
}

/**
 * createPost. Primary course: validate the modes → load the org, the channels and the media in
 * one round trip (`read`, when the caller started it already) → check each variant against its
 * platform → decide the status (draft, scheduled, publishing or needs_approval) → insert.
 * Publishing continues from the table's change stream. `counter`: the request's posts_per_month
 * counter, when the caller started the admission already (admitEarly); else createPost does.
 */
export async function createPost(
  orgId: string,
  input: CreatePostInput,
  now: Date,
  gate: Gate,
  read: Promise<PostContext> = readPostContext(orgId, input),
  origin?: PostOrigin,
  counter?: PostCounter,
) {
  if (counter) return create(orgId, input, now, read, counter, origin);
  const own = new PostCounter(orgId, gate, now);
  admitEarly(own, gate, input, now);
  try {
    return await create(orgId, input, now, read, own, origin);
  } finally {
    await own.release();
  }
}

/**
 * The admission of a createPost starts at once, beside the read (handlers/create-post.ts defers it
 * to here): a post to schedule or publish will most likely count, so its gate write is asked to
 * count it too (given back if it does not: approval required, a validation error); a draft never counts.
 */
function admitEarly(counter: PostCounter, gate: Gate, input: CreatePostInput, now: Date): void {
  const mode = resolveMode(input, now);
  if ('mode' in mode && mode.mode !== 'draft') counter.expect();
  else gate.admitted().catch(() => undefined); // settled by the write, or by the pipeline
}

async function create(
  orgId: string,
  input: CreatePostInput,
  now: Date,
  read: Promise<PostContext>,
  counter: PostCounter,
  origin: PostOrigin | undefined,
) {
  const mode = resolveMode(input, now);
  const errors: FieldError[] = 'errors' in mode ? [...mode.errors] : [];

  const ctx = await read;
  const org = requireOrg(ctx.org);

  errors.push(...validatePostInput(input, { ...ctx, now }));
  if (errors.length || 'errors' in mode) throw new ValidationError(errors);

  const created = newPost({
    id: newId('post', now.getTime()),
    orgId,
    input,
    mode: mode.mode,
    settings: org.settings,
    variantIds: input.variants.map(() => newId('variant', now.getTime())),
    now,
    origin,
  });
  return toPost(await quotaAware(() => counter.insert(created), now));
}

/** Recorded as JSON text, so a replay is byte-for-byte the first response. */
export const createPostIdempotent = idempotent<
  CreatePostInput,
  { gate: Gate; read: Promise<PostContext>; origin?: PostOrigin | undefined; counter: PostCounter }
>('createPost', async (call) => ({
  status: 201,
  json: JSON.stringify(
    await createPost(
      call.org_id,
      call.body,
      new Date(),
      call.context.gate,
      call.context.read,
      call.context.origin,
      call.context.counter,
    ),
  ),
}));

/**
 * createPost as the API runs it: with an Idempotency-Key, once per key (a retry gets the first
 * answer byte for byte and `replayed`); without one, every call creates a post.
 */
export async function createPostOnce(
  orgId: string,
  input: CreatePostInput,
  idempotencyKey: string | undefined,
  now: Date,
  gate: Gate,
  lambda: Context,
  /** Which key created the post, and through which door (kept on the post, not in the API's answer). */
  origin?: PostOrigin,
): Promise<{ status: number; json: string; replayed?: boolean }> {
  const key = checkIdempotencyKey(idempotencyKey);
  // The read runs while the gate decides, so neither path waits for the gate on its own.
  const read = readPostContext(orgId, input);
  const counter = new PostCounter(orgId, gate, now);
  admitEarly(counter, gate, input, now);
  try {
    if (key === undefined)
      return {
        status: 201,
        json: JSON.stringify(await createPost(orgId, input, now, gate, read, origin, counter)),
        replayed: false,
      };
    read.catch(() => undefined); // unused when refused or replayed
    // Admitted before the idempotency layer writes its in-progress record: a refused request writes
    // nothing, and its retry is answered its 429, not 409 idempotency_in_progress. (A replay gives
    // back the post count its admission took.)
    await gate.admitted();
    return await createPostIdempotent(
      { org_id: orgId, key, body: input, context: { gate, read, origin, counter } },
      lambda,
    );
  } finally {
    await counter.release();
  }
}
