import { preconditions } from '#core/etag';
import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { publishPost } from '#usecases/publish-post';

export const { handler, impl } = apiHandler(
  'publishPost',
  { query: NoQuery },
  async ({ auth, params, headers, now, admitted }) => {
    const pre = preconditions(headers['if-match']);
    const res = await publishPost(
      auth.orgId,
      params.id ?? '',
      now,
      { admitted, postsPerMonth: auth.limits.posts_per_month },
      // On the post as read; the write is conditioned on that read's version (usecases/support/post-writes.ts).
      pre.check,
      pre.written,
    );
    return {
      status: 202,
      body: res,
      headers: pre.headers(),
    };
  },
  // Admitted after the read: the gate's write carries the post's count (usecases/publish-post.ts).
  { deferAdmission: true },
);
