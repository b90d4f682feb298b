import type { ConsoleGate } from '#shared/console';
import { peekSession, resolveSession } from '#usecases/console-sessions';
import { getSettings } from '#usecases/settings';

/** The console pipeline's question about a request's session cookie, answered by the sessions use case. */
export const consoleGate: ConsoleGate = {
  resolve: resolveSession,
  // Called through, not referenced: test doubles of the sessions module need not know of it.
  peek: (cookie, now) => peekSession(cookie, now),
  // As the pages' frame reads it (handlers/support/console.ts frameOf).
  orgName: async (signedIn) =>
    (
      await getSettings({
        orgId: signedIn.session.org_id,
        actor: { kind: 'person', userId: signedIn.user.id },
      })
    ).org.name,
};
