import type { Context } from 'aws-lambda';
import { firstIssue, ProbeRequest, type ProbeResponse } from '#core/probe-contract';
import { logger } from '#shared/logger';
import { probeMedia } from '#usecases/probe-media';

/**
 * The probe function, invoked by completeMediaUpload (RequestResponse; the payload is a
 * ProbeRequest). The only function with the ffmpeg/ffprobe layer (which also carries the PDF
 * reader); it has no table access.
 */
export const handler = async (event: unknown, context: Context): Promise<ProbeResponse> => {
  const request = ProbeRequest.safeParse(event);
  if (!request.success) throw new Error(`probeMedia: invalid request: ${firstIssue(request.error)}`);
  const answer = await probeMedia(request.data, () => context.getRemainingTimeInMillis());
  if (!answer.ok)
    logger.info('probe refused the upload', { key: request.data.upload_key, why: answer.message });
  return answer;
};
