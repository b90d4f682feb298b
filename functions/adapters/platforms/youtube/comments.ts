import { OAuthTokens } from '../oauth.ts';
import { orOutcomeUnknown, searchFrom, str } from '../support.ts';
import { PlatformError, type PublishContext, type PublishResult } from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// The first comment under a video: commentThreads.insert (developers.google.com/youtube/v3/docs/
// commentThreads/insert): POST /youtube/v3/commentThreads?part=snippet with snippet.channelId,
// snippet.videoId and snippet.topLevelComment.snippet.textOriginal; it needs the
// youtube.force-ssl scope (else 403 insufficientPermissions) and costs 50 quota units. Its errors:
// 400 commentTextTooLong / commentTextRequired / invalidCommentThreadMetadata / processingFailure,
// 403 forbidden / ineligibleAccount, 404 videoNotFound / channelNotFound (errors.ts maps them).
// No idempotency key: a checkpoint is saved before the call; reconcile lists the video's threads
// (commentThreads.list, order=time) for one by the channel with the same text since then.

const P = 'youtube';

interface CommentThread {
  id?: string;
  snippet?: {
    videoId?: string;
    topLevelComment?: {
      id?: string;
      snippet?: {
        textOriginal?: string;
        authorChannelId?: { value?: string };
        publishedAt?: string;
      };
    };
  };
}

/** Where YouTube shows one comment: the watch page, highlighting it. */
const commentUrl = (videoId: string, commentId: string) =>
  `https://www.youtube.com/watch?v=${encodeURIComponent(videoId)}&lc=${encodeURIComponent(commentId)}`;

function videoOf(ctx: PublishContext): string {
  const cp = ctx.checkpoint;
  const id = str(cp?.parent) ?? ctx.replyTo?.parent.externalId;
  if (!id)
    throw new PlatformError('system', `${P}: a first comment needs the published video`, {
      retryable: false,
    });
  return id;
}

function channelOf(ctx: PublishContext): string {
  const id = str(ctx.credentials.account_id);
  if (!id)
    throw new PlatformError('auth_expired', `${P}: the channel has no account_id`, { retryable: false });
  return id;
}

export async function publishComment(ctx: PublishContext): Promise<PublishResult> {
  const videoId = videoOf(ctx);
  const channelId = channelOf(ctx);
  if (!ctx.text.trim())
    throw new PlatformError('user_content', `${P}: a comment needs text`, { retryable: false });
  const tokens = await OAuthTokens.open(ctx);
  await ctx.saveCheckpoint({ stage: 'commenting', parent: videoId, sentAt: new Date().toISOString() });
  const res = await authed<CommentThread>(tokens, api('/youtube/v3/commentThreads?part=snippet'), {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: JSON.stringify({
      snippet: { channelId, videoId, topLevelComment: { snippet: { textOriginal: ctx.text } } },
    }),
  });
  if (res.status !== 200) throw youtubeError(res, 'commentThreads.insert');
  const id = str(res.body?.snippet?.topLevelComment?.id) ?? str(res.body?.id);
  if (!id)
    throw new PlatformError('system', `${P}: the comment was made without an id`, {
      retryable: false,
      unknownOutcome: true,
    });
  return { externalId: id, url: commentUrl(videoId, id) };
}

export async function reconcileComment(ctx: PublishContext): Promise<PublishResult | null> {
  // The checkpoint is saved right before the call: without one, no comment was made.
  if (ctx.checkpoint?.stage !== 'commenting') return null;
  const videoId = videoOf(ctx);
  const channelId = channelOf(ctx);
  const since = searchFrom(ctx, ctx.checkpoint.sentAt, 2 * 60_000);
  const tokens = await OAuthTokens.open(ctx);
  const qs = new URLSearchParams({
    part: 'snippet',
    videoId,
    order: 'time',
    maxResults: '50',
    textFormat: 'plainText',
  });
  const threads = await orOutcomeUnknown(P, "the video's comments could not be read", async () => {
    const res = await authed<{ items?: CommentThread[] }>(tokens, api(`/youtube/v3/commentThreads?${qs}`), {
      method: 'GET',
    });
    if (res.status !== 200) throw youtubeError(res, 'commentThreads.list');
    return res.body.items ?? [];
  });
  const want = ctx.text.trim();
  const hit = threads.find((t) => {
    const c = t.snippet?.topLevelComment?.snippet;
    const at = Date.parse(c?.publishedAt ?? '');
    return (
      c?.authorChannelId?.value === channelId &&
      (c.textOriginal ?? '').trim() === want &&
      !(Number.isFinite(at) && at < since)
    );
  });
  const id = str(hit?.snippet?.topLevelComment?.id) ?? str(hit?.id);
  return id ? { externalId: id, url: commentUrl(videoId, id) } : null;
}
