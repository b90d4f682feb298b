import { ReschedulePostBody } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { reschedulePost } from '#usecases/reschedule-post';

export const { handler, impl } = apiHandler(
  'reschedulePost',
  { body: ReschedulePostBody },
  ({ auth, params, body, now, admitted }) =>
    ok(
      reschedulePost(auth.orgId, params.id ?? '', body.scheduled_at, now, {
        admitted,
        postsPerMonth: auth.limits.posts_per_month,
      }),
    ),
  // Admitted after the read: the gate's write carries the post's count (usecases/reschedule-post.ts).
  { deferAdmission: true },
);
