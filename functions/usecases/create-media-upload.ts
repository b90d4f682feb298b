import { insertAsset } from '#adapters/media';
import { presignUpload } from '#adapters/media-store';
import { ValidationError } from '#core/errors';
import { newId } from '#core/ids';
import {
  checkUpload,
  type MediaAssetRecord,
  mediaUrl,
  objectKeyOf,
  TICKET_SECONDS,
  uploadKeyOf,
} from '#core/media';
import { ALLOWED_MEDIA, isAllowed, normalizeContentType } from '#core/media-types';
import { inLambda, mediaBaseUrl } from '#shared/config';

// createMediaUpload: a pending asset and its presigned PUT. The probe (completeMediaUpload) is in
// complete-media-upload.ts, so this bundle carries neither image-size nor the ffprobe adapter.

/**
 * Ticket lifetime: 15 minutes. `HERALD_UPLOAD_TICKET_SECONDS` shortens it in the local stack only
 * (tests of expired tickets); a Lambda (AWS_LAMBDA_FUNCTION_NAME set) never reads it.
 */
function ticketSeconds(): number {
  if (inLambda()) return TICKET_SECONDS;
  const knob = Number(process.env.HERALD_UPLOAD_TICKET_SECONDS);
  return Number.isInteger(knob) && knob > 0 ? knob : TICKET_SECONDS;
}

export async function createMediaUpload(
  orgId: string,
  input: { filename: string; content_type: string; size_bytes?: number | undefined },
  now: Date,
  gate: { admitted: () => Promise<unknown> },
) {
  const errors = checkUpload(input);
  if (errors.length) throw new ValidationError(errors);
  const contentType = normalizeContentType(input.content_type);
  if (!isAllowed(contentType)) throw new Error('unreachable: checked content type');
  const type = ALLOWED_MEDIA[contentType];
  const id = newId('media', now.getTime());
  const objectKey = objectKeyOf(orgId, id, input.filename);
  const uploadKey = uploadKeyOf(orgId, id, input.filename);
  const seconds = ticketSeconds();
  const expiresAt = new Date(now.getTime() + seconds * 1000).toISOString();
  const asset: MediaAssetRecord = {
    id,
    org_id: orgId,
    status: 'pending',
    kind: type.kind,
    url: mediaUrl(mediaBaseUrl(), objectKey),
    filename: input.filename,
    content_type: contentType,
    size_bytes: input.size_bytes ?? 0,
    width: null,
    height: null,
    duration_sec: null,
    poster_url: null,
    upload_key: uploadKey,
    object_key: objectKey,
    poster_key: null,
    expires_at: expiresAt,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
  };
  const uploadUrl = await presignUpload(uploadKey, contentType, input.size_bytes, seconds);
  await gate.admitted();
  await insertAsset(asset);
  return { asset_id: id, upload_url: uploadUrl, method: 'PUT' as const, expires_at: expiresAt };
}
