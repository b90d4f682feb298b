import { preconditions } from '#core/etag';
import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { deletePost } from '#usecases/delete-post';

export const { handler, impl } = apiHandler(
  'deletePost',
  { query: NoQuery },
  ({ auth, params, headers, admitted }) => {
    // On the post as read; the delete is conditioned on that read's version (adapters/posts.ts).
    return ok(
      deletePost(auth.orgId, params.id ?? '', { admitted }, preconditions(headers['if-match']).check),
    );
  },
);
