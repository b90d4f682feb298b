import { randomBytes } from 'node:crypto';
import { listChannels } from '#adapters/channels';
import { updatePost } from '#adapters/posts';
import { isId } from '#core/ids';
import { type PostRecord, toPost } from '#core/posts';
import { decideUnpublish } from '#core/unpublish';
import { type Gate, loadForDangerousOp, withRetry } from '#usecases/support/post-writes';

/**
 * unpublishPost: needs the toggle (403 before 404, as every dangerous operation). Decides on the
 * post and its channels' platforms as read together (core/unpublish.ts), then one conditional write of the
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
    // The workspace's channels (their platforms) beside the post: one round trip, not two. A
    // malformed id reads no channels (it is a 404 after the toggle's check).
    const [{ post }, channels] = await Promise.all([
      loadForDangerousOp(orgId, postId),
      isId('post', postId) ? listChannels(orgId) : Promise.resolve([]),
    ]);
    check?.(post);
    const platformOf = (id: string) => channels.find((c) => c.id === id)?.platform;
    const decision = decideUnpublish(post, channelIds, platformOf, now);
    await gate.admitted();
    if ('unchanged' in decision) return toPost(decision.unchanged);
    return toPost(await updatePost(post, decision.change, writeId));
  });
}
