import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { completeMediaUpload } from '#usecases/complete-media-upload';

// The probe function: the only one with the ffmpeg/ffprobe layer, more memory and a longer timeout.
export const { handler, impl } = apiHandler(
  'completeMediaUpload',
  { query: NoQuery },
  ({ auth, params, now, admitted }) =>
    ok(completeMediaUpload(auth.orgId, params.id ?? '', now, { admitted })),
);
