import { CreatePostBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { validatePost } from '#usecases/validate-post';

export const { handler, impl } = apiHandler(
  'validatePost',
  { body: CreatePostBody },
  ({ auth, body, now, admitted }) => ok(validatePost(auth.orgId, body, now, () => admitted())),
);
