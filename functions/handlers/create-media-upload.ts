import { CreateMediaUploadBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { createMediaUpload } from '#usecases/create-media-upload';

export const { handler, impl } = apiHandler(
  'createMediaUpload',
  { body: CreateMediaUploadBody },
  async ({ auth, body, now, admitted }) => ({
    status: 201,
    body: await createMediaUpload(auth.orgId, body, now, { admitted }),
  }),
);
