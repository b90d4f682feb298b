import { etagOf } from '#core/etag';
import { NoQuery } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { readPost } from '#usecases/get-post';

export const { handler, impl } = apiHandler('getPost', { query: NoQuery }, async ({ auth, params }) => {
  const { post, version } = await readPost(auth.orgId, params.id ?? '');
  return { status: 200, body: post, headers: { etag: etagOf(version) } };
});
