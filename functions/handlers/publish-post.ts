import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { publishPost } from '#usecases/publish-post';

export const { handler, impl } = apiHandler(
  'publishPost',
  { query: NoQuery },
  ({ auth, params, now, admitted }) =>
    ok(
      publishPost(auth.orgId, params.id ?? '', now, {
        admitted,
        postsPerMonth: auth.limits.posts_per_month,
      }),
      202,
    ),
  // Admitted after the read: the gate's write carries the post's count (usecases/publish-post.ts).
  { deferAdmission: true },
);
