import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import { auditPage } from '#handlers/views/audit';
import { pageAnswer } from '#shared/console';
import { listAuditLog } from '#usecases/audit-log';

// The audit log (owners: the use case refuses anyone else with a 403), paged with its signed cursor.

const PAGE_SIZE = 50;

export const { handler } = consolePage('consoleAudit', {
  'GET /console/audit': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const cursor = query.get('cursor') ?? undefined;
      const [frame, page] = await Promise.all([
        frameOf(signedIn),
        listAuditLog({ orgId: orgOf(signedIn), actor: actorOf(signedIn), cursor, limit: PAGE_SIZE }),
      ]);
      return pageAnswer(
        auditPage({ frame, entries: page.data, nextCursor: page.next_cursor, paged: cursor !== undefined }),
      );
    },
  },
});
