import type { Downloaded } from './facebook.ts';
import type { FakeResponse } from './server.ts';

// The Facebook Page reels and stories of the contract fake, in their documented upload phases:
// Reels ("Reels Publishing API", developers.facebook.com/docs/video-api/guides/reels-publishing):
//   POST /{page-id}/video_reels upload_phase=start → {video_id, upload_url}; the transfer
//   POST /video-upload/<version>/<video_id> (rupload.facebook.com) with `Authorization: OAuth
//   <token>` and either a `file_url` header (Meta fetches it) or the bytes with `offset`/`file_size`
//   → {"success": true}; GET /{video_id}?fields=status → {status: {video_status, uploading_phase,
//   processing_phase, publishing_phase}}; POST video_reels upload_phase=finish, video_id,
//   video_state=PUBLISHED, description → {"success": true}: the reel is published on the Page.
// Stories ("Facebook Stories API", developers.facebook.com/docs/page-stories-api):
//   POST /{page-id}/video_stories upload_phase=start|finish (the same transfer in between) →
//   finish answers {"success": true, "post_id"}; POST /{page-id}/photo_stories photo_id (an
//   unpublished photo of the Page, "not used in a previously published post") → {"success": true,
//   "post_id"}; GET /{page-id}/stories → {data: [{post_id, status, creation_time, media_type,
//   media_id, url}]}.
// Refusals: a phase out of order — a transfer to a session already uploaded or finished (rupload's
// {"debug_info": {"retriable": false, "type": "ProcessingFailedError", "message"}}), finish before
// the transfer or a second finish (Graph code 6000, the video upload error; the message is ours),
// an unknown upload_phase or a video id of another edge or Page (code 100); a transfer whose bytes
// are not a video (MP4/MOV): the processing phase ends in error and finish is refused; a photo
// story of a photo that is unknown or already published (code 100).

export interface FakeFbUpload {
  videoId: string;
  page: string;
  edge: 'video_reels' | 'video_stories';
  phase: 'started' | 'uploaded' | 'finished';
  /** `file_url` of the transfer, when the file came by URL. */
  fileUrl?: string;
  media?: Downloaded;
  /** Status reads that still answer processing `in_progress` after the transfer. */
  processingPolls: number;
  error?: string;
  publishedAt?: number;
  description?: string;
  createdAt: number;
}

/** An ISO base media file (MP4, MOV): `ftyp` (or QuickTime's top-level atoms) at byte 4. */
export const isVideoFile = (b: Buffer) =>
  b.length > 8 && ['ftyp', 'moov', 'mdat', 'wide', 'free'].includes(b.subarray(4, 8).toString('latin1'));

export function uploadStatus(u: FakeFbUpload): Record<string, unknown> {
  const uploaded = u.phase !== 'started';
  let processing: Record<string, unknown> = { status: 'not_started' };
  if (uploaded && u.error) processing = { status: 'error', errors: [{ message: u.error }] };
  else if (uploaded && u.processingPolls > 0) {
    u.processingPolls--;
    processing = { status: 'in_progress' };
  } else if (uploaded) processing = { status: 'complete' };
  const published = u.phase === 'finished';
  return {
    video_status: u.error
      ? 'error'
      : !uploaded
        ? 'upload_pending'
        : processing.status === 'complete'
          ? 'ready'
          : 'processing',
    uploading_phase: uploaded
      ? { status: 'complete', bytes_transferred: u.media?.bytes.length ?? 0 }
      : { status: 'not_started', bytes_transferred: 0 },
    processing_phase: processing,
    publishing_phase: published
      ? {
          status: 'complete',
          publish_status: 'published',
          publish_time: Math.floor((u.publishedAt ?? Date.now()) / 1000),
        }
      : { status: 'not_started', publish_status: 'not_published' },
  };
}

/** rupload's error body (not a Graph error). */
export const ruploadError = (status: number, message: string): FakeResponse => ({
  status,
  body: { debug_info: { retriable: false, type: 'ProcessingFailedError', message } },
});
