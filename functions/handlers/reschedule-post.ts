import { apiHandler } from '#shared/http';
import { reschedulePost } from '#usecases/posts';

export const { handler, impl } = apiHandler('reschedulePost', async ({ auth, params, body, now }) => ({
  status: 200,
  body: await reschedulePost(auth.orgId, params.id ?? '', body.scheduled_at, now),
}));
