import { CreatePostBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { createPostOnce } from '#usecases/create-post';

export const { handler, impl } = apiHandler(
  'createPost',
  { body: CreatePostBody },
  async ({ auth, body, headers, now, lambda, admitted, via }) => {
    const gate = { admitted, postsPerMonth: auth.limits.posts_per_month };
    const origin = { key_id: auth.keyId, via };
    const res = await createPostOnce(auth.orgId, body, headers['idempotency-key'], now, gate, lambda, origin);
    return {
      status: res.status,
      rawBody: res.json,
      headers: res.replayed ? { 'idempotency-replayed': 'true' } : ({} as Record<string, string>),
    };
  },
  // Admitted once decided: the gate's write carries the post's count (usecases/create-post.ts).
  { deferAdmission: true },
);
