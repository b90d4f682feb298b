import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { completeMediaUpload } from '#usecases/complete-media-upload';

// Images are measured here; video and audio go to the probe function (handlers/probe-media.ts).
export const { handler, impl } = apiHandler(
  'completeMediaUpload',
  { query: NoQuery },
  ({ auth, params, now, admitted }) =>
    ok(completeMediaUpload(auth.orgId, params.id ?? '', now, { admitted })),
);
