import { preconditions } from '#core/etag';
import { ReschedulePostBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { reschedulePost } from '#usecases/reschedule-post';

export const { handler, impl } = apiHandler(
  'reschedulePost',
  { body: ReschedulePostBody },
  async ({ auth, params, body, headers, now, admitted }) => {
    const pre = preconditions(headers['if-match']);
    const post = await reschedulePost(
      auth.orgId,
      params.id ?? '',
      body.scheduled_at,
      now,
      { admitted, postsPerMonth: auth.limits.posts_per_month },
      // On the post as read; the write is conditioned on that read's version (usecases/support/post-writes.ts).
      pre.check,
      pre.written,
    );
    return {
      status: 200,
      body: post,
      headers: pre.headers(),
    };
  },
  // Admitted after the read: the gate's write carries the post's count (usecases/reschedule-post.ts).
  { deferAdmission: true },
);
