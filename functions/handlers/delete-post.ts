import { checkIfMatch, parseIfMatch } from '#core/etag';
import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { deletePost } from '#usecases/delete-post';

export const { handler, impl } = apiHandler(
  'deletePost',
  { query: NoQuery },
  ({ auth, params, headers, admitted }) => {
    const ifMatch = parseIfMatch(headers['if-match']);
    // On the post as read; the delete is conditioned on that read's version (adapters/posts.ts).
    return ok(
      deletePost(auth.orgId, params.id ?? '', { admitted }, (read) => checkIfMatch(ifMatch, read.version)),
    );
  },
);
