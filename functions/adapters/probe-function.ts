import { firstIssue, type ProbeRequest, ProbeResponse } from '#core/probe-contract';
import { PROBE_FUNCTION_ENV } from '#core/vocabulary';
import { requireEnv } from '#shared/config';
import { invokeFunction } from './operation-invoker.ts';

// completeMediaUpload's side of the probe: the probe function (probeMedia) runs ffprobe and ffmpeg
// with no table access; this invokes it and checks its answer. Locally the Lambda stand-in runs
// the same handler module.

export async function invokeProbe(request: ProbeRequest): Promise<ProbeResponse> {
  const answer = await invokeFunction(requireEnv(PROBE_FUNCTION_ENV), request, 'probeMedia');
  const parsed = ProbeResponse.safeParse(answer);
  if (!parsed.success) throw new Error(`probeMedia answered out of contract: ${firstIssue(parsed.error)}`);
  if (parsed.data.ok && parsed.data.poster_key !== null && parsed.data.poster_key !== request.poster_key)
    throw new Error('probeMedia answered a poster key it was not given');
  return parsed.data;
}
