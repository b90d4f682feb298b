import { backoff, pollWithin } from '../support.ts';
import { type MediaInput, PlatformError } from '../types.ts';
import { fileBody, outOfTime, UPLOAD_REQUEST_MS, uploadClock } from '../upload.ts';
import { type Auth, type CallInit, call, ok } from './client.ts';
import { linkedinError } from './errors.ts';

// The Images, Videos and Documents APIs: each asset is initialized (an URN and upload URL), its
// bytes PUT, and it is usable in a post once its status is AVAILABLE.

// The worker's Lambda stops at 60 s, with the batch's other deliveries.
const AVAILABLE_POLLING = { firstDelayMs: 250, maxDelayMs: 5000, budgetMs: 20_000 };

export type AssetKind = 'images' | 'videos' | 'documents';
/** Statuses of the Images/Videos/Documents APIs ("Get a Document": WAITING_UPLOAD … AVAILABLE). */
export type AssetStatus = 'WAITING_UPLOAD' | 'PROCESSING' | 'AVAILABLE' | 'PROCESSING_FAILED';

/** An asset's status, or null when LinkedIn has no such asset (404). */
export async function assetStatus(auth: Auth, kind: AssetKind, urn: string): Promise<AssetStatus | null> {
  const res = await call<{ status?: AssetStatus }>(auth, 'GET', `/rest/${kind}/${encodeURIComponent(urn)}`);
  if (res.status === 404) return null;
  if (res.status < 200 || res.status >= 300) throw linkedinError(res, `GET /rest/${kind}`, true);
  return res.body.status ?? null;
}

/** Polls the asset until AVAILABLE: PROCESSING_FAILED is the media's fault; still processing, a retry later. */
export async function waitAvailable(auth: Auth, kind: AssetKind, urn: string): Promise<void> {
  let status: string | undefined;
  const done = await pollWithin(backoff(AVAILABLE_POLLING), async () => {
    const res = await ok<{ status?: string; processingFailureReason?: string }>(
      auth,
      'GET',
      `/rest/${kind}/${encodeURIComponent(urn)}`,
      { media: true },
    );
    status = res.body.status;
    if (status === 'AVAILABLE') return true;
    if (status === 'PROCESSING_FAILED') {
      throw new PlatformError(
        'media_error',
        `linkedin: ${urn} processing failed${res.body.processingFailureReason ? `: ${res.body.processingFailureReason}` : ''}`,
        {
          retryable: false,
        },
      );
    }
    return undefined;
  });
  if (done) return;
  throw new PlatformError('system', `linkedin: ${urn} is still ${status ?? 'processing'}`, {
    retryAfterSeconds: 60,
  });
}

/** initializeUpload then one PUT of the whole file (images and documents take a single upload URL). */
async function uploadWhole(
  auth: Auth,
  kind: 'images' | 'documents',
  body: Pick<CallInit, 'bytes' | 'stream'>,
): Promise<string> {
  const init = await ok<{ value: { uploadUrl: string; image?: string; document?: string } }>(
    auth,
    'POST',
    `/rest/${kind}?action=initializeUpload`,
    { json: { initializeUploadRequest: { owner: auth.author } }, media: true },
  );
  const urn = kind === 'images' ? init.body.value.image : init.body.value.document;
  if (!urn)
    throw new PlatformError('system', `linkedin: initializeUpload of ${kind} answered without an URN`);
  const put = await call(auth, 'PUT', init.body.value.uploadUrl, { ...body, timeoutMs: UPLOAD_REQUEST_MS });
  if (put.status < 200 || put.status >= 300) throw linkedinError(put, `PUT ${kind} upload`, true);
  return urn;
}

export async function uploadImage(auth: Auth, item: MediaInput): Promise<string> {
  const urn = await uploadWhole(auth, 'images', {
    stream: { ...fileBody(item), contentType: 'application/octet-stream' },
  });
  await waitAvailable(auth, 'images', urn);
  return urn;
}

/** An image held in memory (a link card's), uploaded like any other. */
export async function uploadImageBytes(auth: Auth, bytes: Uint8Array): Promise<string> {
  const urn = await uploadWhole(auth, 'images', { bytes });
  await waitAvailable(auth, 'images', urn);
  return urn;
}

/**
 * A PDF through the Documents API (initializeUpload → PUT). Not waited for: the caller checkpoints the
 * URN first, so an attempt that dies while LinkedIn processes it reuses the document.
 */
export function uploadDocument(auth: Auth, item: MediaInput): Promise<string> {
  return uploadWhole(auth, 'documents', {
    stream: { ...fileBody(item), contentType: 'application/octet-stream' },
  });
}

// Each part LinkedIn's instructions name is one ranged read (parts are 4 MiB): a part in memory at a time.
export async function uploadVideo(auth: Auth, item: MediaInput): Promise<string> {
  const init = await ok<{
    value: {
      video: string;
      uploadToken?: string;
      uploadInstructions: Array<{ uploadUrl: string; firstByte: number; lastByte: number }>;
    };
  }>(auth, 'POST', '/rest/videos?action=initializeUpload', {
    json: {
      initializeUploadRequest: {
        owner: auth.author,
        fileSizeBytes: item.sizeBytes,
        uploadCaptions: false,
        uploadThumbnail: false,
      },
    },
    media: true,
  });
  const { video, uploadToken = '', uploadInstructions } = init.body.value;
  const etags: string[] = [];
  const clock = uploadClock();
  for (const part of uploadInstructions) {
    if (etags.length && clock.spent()) throw outOfTime('linkedin', part.firstByte, item.sizeBytes);
    const put = await call(auth, 'PUT', part.uploadUrl, {
      bytes: await item.readRange(part.firstByte, part.lastByte + 1),
      timeoutMs: clock.remainingMs(),
    });
    if (put.status < 200 || put.status >= 300) throw linkedinError(put, 'PUT video part', true);
    const etag = put.headers.get('etag');
    if (!etag) throw new PlatformError('system', 'linkedin: video part upload answered without an ETag');
    etags.push(etag);
  }
  await ok(auth, 'POST', '/rest/videos?action=finalizeUpload', {
    json: { finalizeUploadRequest: { video, uploadToken, uploadedPartIds: etags } },
    media: true,
  });
  await waitAvailable(auth, 'videos', video);
  return video;
}
