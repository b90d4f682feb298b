import { type FitRequest, FitResponse } from '#core/fit-contract';
import { firstIssue } from '#core/probe-contract';
import { FIT_FUNCTION_ENV } from '#core/vocabulary';
import { requireEnv } from '#shared/config';
import { invokeFunction } from './operation-invoker.ts';

// The callers' side of media fitting (the delivery worker; link cards for their images): the fit
// function (fitMedia) runs ffmpeg with no table access; this invokes it and checks its answer.
// Locally the Lambda stand-in runs the same handler module.

export async function invokeFit(
  request: FitRequest,
  opts: { signal?: AbortSignal } = {},
): Promise<FitResponse> {
  const answer = await invokeFunction(requireEnv(FIT_FUNCTION_ENV), request, 'fitMedia', opts);
  const parsed = FitResponse.safeParse(answer);
  if (!parsed.success) throw new Error(`fitMedia answered out of contract: ${firstIssue(parsed.error)}`);
  if (parsed.data.ok && parsed.data.key !== request.target_key)
    throw new Error('fitMedia answered a rendition key it was not given');
  return parsed.data;
}

/**
 * An image of the media bucket as at most `maxBytes` of JPEG (link cards' images, say): the
 * rendition `_fit-<name>.jpg` beside `sourceKey` (`orgs/<org>/media/<dir>/<file>`), made once.
 */
export function fitImageObject(
  sourceKey: string,
  maxBytes: number,
  name = `image-${maxBytes}`,
  opts: { signal?: AbortSignal } = {},
): Promise<FitResponse> {
  const target = `${sourceKey.slice(0, sourceKey.lastIndexOf('/'))}/_fit-${name}.jpg`;
  return invokeFit(
    { source_key: sourceKey, target_key: target, kind: 'image', ops: [{ op: 'jpeg', maxBytes }] },
    opts,
  );
}
