import type { ConsoleGate } from '#shared/console';
import { peekSession, resolveSession } from '#usecases/console-sessions';
import { getSettings } from '#usecases/settings';

/** The console pipeline's question about a request's session cookie, answered by the sessions use case. */
export const consoleGate: ConsoleGate = {
  resolve: resolveSession,
  peek: peekSession,
  // As the pages' frame reads it (handlers/support/console.ts frameOf).
  orgName: async (signedIn) =>
    (
      await getSettings({
        orgId: signedIn.session.org_id,
        actor: { kind: 'person', userId: signedIn.user.id },
      })
    ).org.name,
};
