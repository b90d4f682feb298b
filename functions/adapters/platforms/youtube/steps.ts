import type { OAuthTokens } from '../oauth.ts';
import { sleep, str } from '../support.ts';
import { PlatformError, type PublishContext } from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// What follows the upload of a video, once YouTube has created it:
//   thumbnails.set — POST /upload/youtube/v3/thumbnails/set?videoId=… with the image as the body
//     (JPEG or PNG, at most 2 MB; scopes youtube.upload, youtube, youtube.force-ssl; 50 quota units;
//     developers.google.com/youtube/v3/docs/thumbnails/set). Setting it again sets the same image, so
//     a repeat is harmless and needs no checkpoint.
//   playlistItems.insert — POST /youtube/v3/playlistItems?part=snippet {snippet: {playlistId,
//     resourceId: {kind: "youtube#video", videoId}}} (scopes youtube, youtube.force-ssl,
//     youtubepartner; 50 units; docs/playlistItems/insert). A second insert adds the video a second
//     time, so `playlist: "sending"` is saved first and any later try (this attempt's after a failure,
//     or the next attempt's after a crash) looks first: playlistItems.list?playlistId=…&videoId=…
//     (1 unit) lists the item if it is there.
// The video already exists, so a step never fails the delivery: a step that fails for good (or
// still fails after its retries) is noted as a warning and the video is published without it.

/** Pauses before a step's retries (tests shrink them); a step is tried 1 + delaysMs.length times. */
export const stepRetry = { delaysMs: [1000, 3000] };

async function setThumbnail(tokens: OAuthTokens, ctx: PublishContext, videoId: string): Promise<void> {
  const image = ctx.thumbnail;
  if (!image)
    throw new PlatformError('media_error', 'the thumbnail_url asset could not be read', { retryable: false });
  const q = new URLSearchParams({ videoId, uploadType: 'media' });
  const res = await authed(tokens, api(`/upload/youtube/v3/thumbnails/set?${q}`), {
    method: 'POST',
    headers: { 'content-type': image.contentType },
    body: await image.read(),
  });
  if (res.status !== 200) throw youtubeError(res, 'thumbnails.set');
}

async function inPlaylist(tokens: OAuthTokens, playlistId: string, videoId: string): Promise<boolean> {
  const q = new URLSearchParams({ part: 'id', playlistId, videoId, maxResults: '1' });
  const res = await authed<{ items?: unknown[] }>(tokens, api(`/youtube/v3/playlistItems?${q}`), {
    method: 'GET',
  });
  if (res.status !== 200) throw youtubeError(res, 'playlistItems.list');
  return (res.body.items ?? []).length > 0;
}

async function addToPlaylist(tokens: OAuthTokens, playlistId: string, videoId: string): Promise<void> {
  const res = await authed(tokens, api('/youtube/v3/playlistItems?part=snippet'), {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    body: JSON.stringify({ snippet: { playlistId, resourceId: { kind: 'youtube#video', videoId } } }),
  });
  if (res.status !== 200) throw youtubeError(res, 'playlistItems.insert');
}

/** Runs `step` until it succeeds, fails for good, or its retries are spent; the last error, or null. */
async function tried(step: () => Promise<void>): Promise<unknown> {
  for (let i = 0; ; i++) {
    try {
      await step();
      return null;
    } catch (err) {
      const again = err instanceof PlatformError && err.retryable && i < stepRetry.delaysMs.length;
      if (!again) return err;
      await sleep(stepRetry.delaysMs[i] ?? 1000);
    }
  }
}

const why = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 300);

/**
 * The thumbnail and the playlist of the variant, after the upload created video `videoId`.
 * `checkpoint`: the delivery's as saved last (the upload session), kept beside the step's mark.
 */
export async function afterUpload(
  tokens: OAuthTokens,
  ctx: PublishContext,
  videoId: string,
  checkpoint: Record<string, unknown>,
): Promise<void> {
  if (str(ctx.options.thumbnail_url)) {
    const err = await tried(() => setThumbnail(tokens, ctx, videoId));
    if (err) ctx.warn?.('thumbnail_failed', `The video was published without its thumbnail: ${why(err)}`);
  }
  const playlistId = str(ctx.options.playlist_id);
  if (!playlistId) return;
  // The mark before the irreversible insert (the upload session stays in the checkpoint beside it).
  const cp = checkpoint;
  // Only a try after one that may have reached YouTube needs to look.
  let look = cp.playlist === 'sending';
  if (!look) await ctx.saveCheckpoint({ ...cp, playlist: 'sending' });
  const err = await tried(async () => {
    if (look && (await inPlaylist(tokens, playlistId, videoId))) return;
    look = true;
    await addToPlaylist(tokens, playlistId, videoId);
  });
  if (err)
    ctx.warn?.(
      'playlist_failed',
      `The video was published but not added to playlist ${playlistId}: ${why(err)}`,
    );
}
