import { ActError, type Actor, type SignedIn } from '#core/people';
import type { Frame } from '#handlers/views/layout';
import { statusPage } from '#handlers/views/status';
import {
  CEREMONY_COOKIE,
  type ConsoleAnswer,
  type ConsoleSite,
  clearedCeremonyCookie,
  consoleHandlers,
  jsonAnswer,
  sessionCookie,
} from '#shared/console';
import { unreadBadge } from '#usecases/inbox-badge';
import { getSettings } from '#usecases/settings';
import { consoleGate } from '#usecases/support/console-gate';

/** Every console page's handler: the shared pipeline over the session gate, errors as status pages. */
export const consolePage = consoleHandlers({ gate: consoleGate, statusPage });

/** A person signed in acts as themselves; the use cases read their role again for every act. */
export const actorOf = (signedIn: SignedIn): Actor => ({ kind: 'person', userId: signedIn.user.id });

/** The session's organization: every id a person names is looked up in it, and only in it. */
export const orgOf = (signedIn: SignedIn): string => signedIn.session.org_id;

/**
 * The page frame's workspace name, read through the same use case as the settings page, and the
 * inbox's unread count for the navigation.
 */
export async function frameOf(signedIn: SignedIn): Promise<Frame> {
  const orgId = orgOf(signedIn);
  const settings = getSettings({ orgId, actor: actorOf(signedIn) });
  const [{ org }, inboxUnread] = await Promise.all([
    settings,
    unreadBadge(
      orgId,
      settings.then((s) => s.org.plan),
    ),
  ]);
  return { signedIn, orgName: org.name, inboxUnread };
}

/** A field of a ceremony's JSON body (the browser's answer is passed to the use case as it is). */
export function fieldOf(json: unknown, name: string): unknown {
  return typeof json === 'object' && json !== null ? (json as Record<string, unknown>)[name] : undefined;
}

/** The ceremony the answer belongs to, from the cookie its options set. */
export function ceremonyIdOf(cookies: Record<string, string>): string {
  const id = cookies[CEREMONY_COOKIE];
  if (!id)
    throw new ActError(
      'This passkey request took too long or was started in another tab. Try again.',
      'invalid',
    );
  return id;
}

/** A ceremony that ended signed in: the session's cookie set, the ceremony's cleared, where to go next. */
export const signedInAnswer = (
  site: ConsoleSite,
  session: { cookie: string },
  redirect: string,
): ConsoleAnswer =>
  jsonAnswer({ redirect }, { cookies: [sessionCookie(site, session.cookie), clearedCeremonyCookie(site)] });

/**
 * Runs a use case whose refusals are worded for the CLI and the API (ids, timestamps) and answers
 * them in a person's words instead: `words` by the refusal's kind; other kinds pass as they are.
 */
export async function inPeoplesWords<T>(
  words: Partial<Record<ActError['kind'], string>>,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const said = err instanceof ActError ? words[err.kind] : undefined;
    if (err instanceof ActError && said) throw new ActError(said, err.kind);
    throw err;
  }
}
