import type { Params } from '../meta/client.ts';
import type { ContainerPlatform } from '../meta/publish.ts';
import { pollWithMedia, rootPoll } from '../support.ts';
import { type MediaInput, PlatformError, type PublishContext } from '../types.ts';
import { open } from './client.ts';

// Threads publishes through media containers (meta/publish.ts): POST /{user-id}/threads (TEXT, IMAGE,
// VIDEO, or CAROUSEL over item containers made with is_carousel_item=true), GET
// /{container-id}?fields=status,error_message until FINISHED, then POST /{user-id}/threads_publish.
// Meta fetches images and videos from their public URLs.
//
// Polls (developers.facebook.com/documentation/threads/create-posts/polls): the root's TEXT container
// carries `poll_attachment`, a JSON object {option_a, option_b, option_c?, option_d?} of 2–4 options
// of 1–25 characters; text-only posts only. Threads sets no duration (its polls last 24 hours).

const PLATFORM = 'threads';

function mediaParams(m: MediaInput): Params {
  // Threads posts take images and videos only (core rules already refuse other kinds).
  if (m.type === 'image') return { media_type: 'IMAGE', image_url: m.url, alt_text: m.alt || undefined };
  if (m.type === 'video') return { media_type: 'VIDEO', video_url: m.url, alt_text: m.alt || undefined };
  throw new PlatformError('user_content', `${PLATFORM}: ${m.type} attachments are not supported`, {
    retryable: false,
  });
}

const OPTION_KEYS = ['option_a', 'option_b', 'option_c', 'option_d'] as const;

/** The root's poll as Threads takes it, or undefined. */
function pollAttachment(ctx: PublishContext): string | undefined {
  const poll = rootPoll(ctx, 1440);
  if (!poll) return undefined;
  return JSON.stringify(Object.fromEntries(poll.choices.map((c, i) => [OPTION_KEYS[i], c])));
}

const common = (ctx: PublishContext): Params => ({
  text: ctx.text || undefined,
  reply_control: typeof ctx.options.reply_control === 'string' ? ctx.options.reply_control : undefined,
  // A thread item or the first comment: a reply to the part before it (needs threads_manage_replies).
  reply_to_id: ctx.replyTo?.parent.externalId,
});

export async function threadsContainers(ctx: PublishContext): Promise<ContainerPlatform> {
  const { client, accountId } = await open(ctx);
  const poll = pollAttachment(ctx);
  return {
    platform: PLATFORM,
    client,
    accountId,
    createEdge: 'threads',
    publishEdge: 'threads_publish',
    // Replies are not among the account's threads: they are listed under its replies, each naming
    // the post it answers (replied_to).
    postsEdge: ctx.replyTo ? 'replies' : 'threads',
    ...(ctx.replyTo ? { parentField: 'replied_to' } : {}),
    textField: 'text',
    statusFields: ['status', 'error_message'],
    noun: 'post',
    common,
    textOnly(c) {
      if (!c.text)
        throw new PlatformError('user_content', `${PLATFORM}: a post needs text or media`, {
          retryable: false,
        });
      return { media_type: 'TEXT', ...common(c), poll_attachment: poll };
    },
    item: (m, carousel) => {
      // A poll goes on a text-only post: refused before any container is made.
      if (poll) throw pollWithMedia(PLATFORM);
      return carousel ? { ...mediaParams(m), is_carousel_item: true } : mediaParams(m);
    },
  };
}
