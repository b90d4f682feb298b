import { UnpublishPostBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { unpublishPost } from '#usecases/unpublish-post';

export const { handler, impl } = apiHandler(
  'unpublishPost',
  { body: UnpublishPostBody, optionalBody: true },
  ({ auth, params, body, now, admitted }) =>
    ok(unpublishPost(auth.orgId, params.id ?? '', body.channel_ids, now, { admitted }), 202),
);
