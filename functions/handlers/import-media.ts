import { ImportMediaBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { importMedia } from '#usecases/import-media';

// 201 when the import finished within 10 s, 202 (pending) when the mediaImport worker finishes it.
export const { handler, impl } = apiHandler(
  'importMedia',
  { body: ImportMediaBody },
  async ({ auth, body, now, admitted }) => {
    const answer = await importMedia(auth.orgId, body, now, { admitted });
    return { status: answer.status, body: answer.asset };
  },
);
