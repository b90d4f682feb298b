import { loadPostForEdit } from '#adapters/posts';
import { ValidationError } from '#core/errors';
import { checkIfMatch, type IfMatch } from '#core/etag';
import { isId, newId } from '#core/ids';
import { assertEditable, decideUpdate, editFieldErrors } from '#core/post-edits';
import { postInputIds, validatePostInput } from '#core/post-input';
import { type PostRecord, toPost } from '#core/posts';
import type { UpdatePostInput } from '#core/requests';
import { counting, type Gate, postNotFound, requireOrg, withRetry } from '#usecases/support/post-writes';

/**
 * updatePost: replaces a draft, scheduled, failed or needs_approval post's title, body and
 * variants (docs/api/posts.md, "Editing a post"). Primary course: read the org, the post and what
 * the new content names in one round trip → 404 → If-Match (412) → 409 → the checks createPost
 * makes (400) → decide → one write conditioned on the version read, so an If-Match checked on
 * the read holds at the write: a post changed in between is read again and refused. Answers the
 * post and its version (the ETag).
 */
export async function updatePost(
  orgId: string,
  postId: string,
  input: UpdatePostInput,
  now: Date,
  gate: Gate,
  opts: {
    ifMatch?: IfMatch | undefined;
    /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
    check?: ((post: PostRecord) => void) | undefined;
  } = {},
) {
  if (!isId('post', postId)) throw postNotFound();
  const { channelIds, mediaIds } = postInputIds(input);
  return counting(orgId, gate, now, (counter) =>
    withRetry(async () => {
      const { org, post, channels, media } = await loadPostForEdit(orgId, postId, channelIds, mediaIds);
      const settings = requireOrg(org).settings;
      if (!post) throw postNotFound();
      checkIfMatch(opts.ifMatch, post.version);
      opts.check?.(post);
      assertEditable(post);
      const errors = [...editFieldErrors(post, input), ...validatePostInput(input, { channels, media, now })];
      if (errors.length) throw new ValidationError(errors);
      const decision = decideUpdate(post, input, {
        approvalRequired: settings.approval_required,
        now,
        newVariantId: () => newId('variant', now.getTime()),
      });
      if ('unchanged' in decision) {
        await gate.admitted();
        return { post: toPost(post), version: post.version };
      }
      // Never makes a post count (no edit schedules or publishes it): the counter only admits it.
      const written = await counter.update(post, decision.change);
      return { post: toPost(written), version: written.version };
    }),
  );
}
