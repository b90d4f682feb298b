import { NoQuery } from '#core/requests';
import { apiHandler, ok } from '#handlers/support/api';
import { getMedia } from '#usecases/get-media';

export const { handler, impl } = apiHandler('getMedia', { query: NoQuery }, ({ auth, params }) =>
  ok(getMedia(auth.orgId, params.id ?? '')),
);
