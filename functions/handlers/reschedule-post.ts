import { ReschedulePostBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { reschedulePost } from '#usecases/reschedule-post';

export const { handler, impl } = apiHandler(
  'reschedulePost',
  { body: ReschedulePostBody },
  async ({ auth, params, body, now, admitted }) => ({
    status: 200,
    body: await reschedulePost(auth.orgId, params.id ?? '', body.scheduled_at, now, {
      admitted,
      postsPerMonth: auth.limits.posts_per_month,
    }),
  }),
);
