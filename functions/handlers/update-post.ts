import { etagOf, parseIfMatch } from '#core/etag';
import { UpdatePostBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { updatePost } from '#usecases/update-post';

export const { handler, impl } = apiHandler(
  'updatePost',
  { body: UpdatePostBody },
  async ({ auth, params, body, headers, now, admitted }) => {
    const ifMatch = parseIfMatch(headers['if-match']);
    const res = await updatePost(
      auth.orgId,
      params.id ?? '',
      body,
      now,
      { admitted, postsPerMonth: auth.limits.posts_per_month },
      { ifMatch },
    );
    return { status: 200, body: res.post, headers: { etag: etagOf(res.version) } };
  },
);
