import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { publishPost } from '#usecases/publish-post';

export const { handler, impl } = apiHandler(
  'publishPost',
  { query: NoQuery },
  async ({ auth, params, now, admitted }) => ({
    status: 202,
    body: await publishPost(auth.orgId, params.id ?? '', now, {
      admitted,
      postsPerMonth: auth.limits.posts_per_month,
    }),
  }),
);
