import { checkIdempotencyKey } from '#adapters/idempotency';
import { CreatePostBody } from '#core/requests';
import { apiHandler } from '#shared/http';
import { createPost, createPostIdempotent } from '#usecases/create-post';

export const { handler, impl } = apiHandler(
  'createPost',
  { body: CreatePostBody },
  async ({ auth, body, headers, now, lambda, admitted }) => {
    const gate = { admitted, postsPerMonth: auth.limits.posts_per_month };
    const key = checkIdempotencyKey(headers['idempotency-key']);
    if (key === undefined) return { status: 201, body: await createPost(auth.orgId, body, now, gate) };
    const recorded = await createPostIdempotent({ org_id: auth.orgId, key, body, context: gate }, lambda);
    return {
      status: recorded.status,
      rawBody: recorded.json,
      headers: recorded.replayed ? { 'idempotency-replayed': 'true' } : ({} as Record<string, string>),
    };
  },
);
