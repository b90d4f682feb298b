import { randomBytes } from 'node:crypto';
import { loadPostContext, updatePost } from '#adapters/posts';
import { type PostRecord, toPost } from '#core/posts';
import { decideUnpublish } from '#core/unpublish';
import { type Gate, loadForDangerousOp, withRetry } from '#usecases/support/post-writes';

/**
 * unpublishPost: needs the toggle (403 before 404, as every dangerous operation). Decides on the
 * post and its channels' platforms as read (core/unpublish.ts), then one conditional write of the
 * post (its version): the deliveries to remove turn `removing`, and the stream relay sends each its
 * removal from that change (the durable outbox: a crash after the write loses nothing). A request
 * that changes nothing (all already removing) writes nothing and sends nothing.
 */
export async function unpublishPost(
  orgId: string,
  postId: string,
  channelIds: readonly string[] | undefined,
  now: Date,
  gate: Pick<Gate, 'admitted'>,
  /** Runs on the post as read, before deciding (the console refuses a post changed since its page). */
  check?: (post: PostRecord) => void,
) {
  const writeId = randomBytes(8).toString('base64url');
  return withRetry(async () => {
    const { post } = await loadForDangerousOp(orgId, postId);
    check?.(post);
    const ids = post.variants.map((v) => v.channel_id);
    const { channels } = await loadPostContext(orgId, ids, []);
    const decision = decideUnpublish(post, channelIds, (id) => channels.get(id)?.platform, now);
    await gate.admitted();
    if ('unchanged' in decision) return toPost(decision.unchanged);
    return toPost(await updatePost(post, decision.change, writeId));
  });
}
