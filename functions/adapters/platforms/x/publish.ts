import { orOutcomeUnknown, pollWithMedia, publishedIn, rootPoll, searchFrom } from '../support.ts';
import { PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { Auth, ok, type Tweet } from './client.ts';
import { isDuplicate } from './errors.ts';
import { uploadMedia } from './upload.ts';

// A thread item or first comment is a reply (`reply.in_reply_to_tweet_id`: the part before it);
// its lookup searches the replies too, for one answering that part.
//
// X has no idempotency key for POST /2/tweets. Before posting we save a checkpoint; a reconcile
// after it (the worker's, while an earlier attempt may have made the tweet) looks for the tweet
// among the user's own tweets since the earliest such attempt (GET /2/users/:id/tweets) and
// compares text the way X rewrites it (t.co links, entities).
//
// Media: ./upload.ts.
//
// Polls: the root's `poll: {options, duration_minutes}` (TweetCreateRequest.poll in X's OpenAPI
// document: 2–4 options of 1–25 characters, 5–10080 minutes), which X takes in place of media.

// Finding a tweet an earlier attempt made

const URL_RE = /https?:\/\/[^\s]+/gu;

/** X returns text with every link as t.co, a media link appended, and &, <, > escaped. */
export function comparableText(text: string): string {
  return text
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(URL_RE, '\uFFFC')
    .replace(/[\s\uFFFC]+$/u, '')
    .replace(/\s+/gu, ' ')
    .trim();
}

function permalink(ctx: { channel: { handle: string } }, id: string) {
  const handle = ctx.channel.handle.replace(/^@/, '');
  return handle ? `https://x.com/${handle}/status/${id}` : `https://x.com/i/web/status/${id}`;
}

async function lookup(auth: Auth, ctx: PublishContext): Promise<PublishResult | null> {
  if (!auth.userId)
    throw new PlatformError('system', 'x: channel has no account_id to look tweets up', { retryable: false });
  const start = new Date(searchFrom(ctx, ctx.checkpoint?.sentAt, 60_000))
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z');
  const want = comparableText(ctx.text);
  // A thread item or a comment is a reply: found among the replies, to the part it answers.
  const parent = ctx.replyTo?.parent.externalId;
  const answers = (t: Tweet) =>
    parent === undefined ||
    (t.referenced_tweets ?? []).some((r) => r.type === 'replied_to' && r.id === parent);
  let token: string | undefined;
  for (let page = 0; page < 5; page++) {
    const qs = new URLSearchParams({
      start_time: start,
      max_results: '100',
      exclude: parent === undefined ? 'retweets,replies' : 'retweets',
      'post.fields': parent === undefined ? 'created_at' : 'created_at,referenced_tweets',
    });
    if (token) qs.set('pagination_token', token);
    const res = await ok<{ data?: Tweet[]; meta?: { next_token?: string } }>(
      auth,
      'GET',
      `/2/users/${encodeURIComponent(auth.userId)}/tweets?${qs}`,
    );
    const hit = (res.data ?? []).find((t) => comparableText(t.text) === want && answers(t));
    if (hit) return { externalId: hit.id, url: permalink(ctx, hit.id) };
    token = res.meta?.next_token;
    if (!token) return null;
  }
  return null;
}

export async function publish(ctx: PublishContext): Promise<PublishResult> {
  const auth = new Auth(ctx);
  // An earlier attempt that may have made the tweet was reconciled (looked up) before this one.
  const sentBefore = ctx.checkpoint?.stage === 'posting';
  // Absent duration: 1440 minutes, the default getChannelOptions states for X.
  const poll = rootPoll(ctx, 1440);
  // Refused before any upload: X takes media or a poll, never both.
  if (poll && ctx.media.length) throw pollWithMedia('x');
  const mediaIds = await uploadMedia(auth, ctx);
  const body: Record<string, unknown> = {
    text: ctx.text,
    ...(mediaIds.length ? { media: { media_ids: mediaIds } } : {}),
    ...(poll ? { poll: { options: poll.choices, duration_minutes: poll.minutes } } : {}),
    ...(typeof ctx.options.reply_settings === 'string' ? { reply_settings: ctx.options.reply_settings } : {}),
    // A thread item or the first comment: a reply to the part before it.
    ...(ctx.replyTo ? { reply: { in_reply_to_tweet_id: ctx.replyTo.parent.externalId } } : {}),
  };
  await ctx.saveCheckpoint({ stage: 'posting', mediaIds, sentAt: new Date().toISOString() });
  let tweet: { data: { id: string } };
  try {
    tweet = await ok<{ data: { id: string } }>(auth, 'POST', '/2/tweets', { json: body });
  } catch (err) {
    if (sentBefore && isDuplicate(err)) {
      // X refused it as a duplicate of… most likely our own earlier tweet. Try once more to find it.
      const found = await orOutcomeUnknown('x', 'refused as a duplicate', () => lookup(auth, ctx));
      if (found) return found;
      throw new PlatformError(
        'system',
        'x: outcome unknown: refused as duplicate of a tweet an earlier attempt may have made',
        { retryable: false },
      );
    }
    throw err;
  }
  return { externalId: tweet.data.id, url: permalink(ctx, tweet.data.id) };
}

export async function reconcile(ctx: PublishContext): Promise<PublishResult | null> {
  const done = publishedIn(ctx.checkpoint, (id) => permalink(ctx, id));
  if (done) return done;
  // Nothing saved before POST /2/tweets: the attempt died before it, no tweet exists.
  if (ctx.checkpoint?.stage !== 'posting') return null;
  const auth = new Auth(ctx);
  return orOutcomeUnknown('x', "the user's tweets could not be searched", () => lookup(auth, ctx));
}
