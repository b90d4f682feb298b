import type { Context } from 'aws-lambda';
import { FitRequest, type FitResponse } from '#core/fit-contract';
import { firstIssue } from '#core/probe-contract';
import { logger } from '#shared/logger';
import { fitMedia } from '#usecases/fit-media';

/**
 * The fit function, invoked by the delivery worker and link cards (RequestResponse; the payload is
 * a FitRequest). It has the ffmpeg layer and no table: it reads media objects and writes renditions.
 */
export const handler = async (event: unknown, context: Context): Promise<FitResponse> => {
  const request = FitRequest.safeParse(event);
  if (!request.success) throw new Error(`fitMedia: invalid request: ${firstIssue(request.error)}`);
  const answer = await fitMedia(request.data, () => context.getRemainingTimeInMillis());
  if (!answer.ok) logger.info('fit refused the media', { key: request.data.source_key, why: answer.message });
  else if (answer.made) logger.info('rendition made', { key: answer.key, size_bytes: answer.size_bytes });
  return answer;
};
