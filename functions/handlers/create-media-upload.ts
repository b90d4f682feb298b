import { CreateMediaUploadBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { createMediaUpload } from '#usecases/create-media-upload';

export const { handler, impl } = apiHandler(
  'createMediaUpload',
  { body: CreateMediaUploadBody },
  ({ auth, body, now, admitted }) => ok(createMediaUpload(auth.orgId, body, now, { admitted }), 201),
);
