import { canActOnPosts } from '#core/accounts';
import type { SignedIn } from '#core/people';
import { actorOf, frameOf, orgOf } from '#handlers/support/console';
import { inboxItemPage, type ReplyForm, type Suggested } from '#handlers/views/inbox';
import { requireEnv } from '#shared/config';
import { pageAnswer } from '#shared/console';
import { getInboxItemForPerson } from '#usecases/console-inbox';

// An inbox item's page as the console answers it: for the inbox's own function and for "Suggest a
// reply" (a function of its own).

export const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export async function itemAnswer(
  signedIn: SignedIn,
  origin: string,
  id: string,
  o: {
    message?: string | null;
    reply?: ReplyForm;
    refused?: string;
    suggested?: Suggested;
    status?: number;
  } = {},
) {
  const [frame, details] = await Promise.all([
    frameOf(signedIn),
    getInboxItemForPerson({
      orgId: orgOf(signedIn),
      actor: actorOf(signedIn),
      id,
      cursorSecret: CURSOR_SECRET,
    }),
  ]);
  return pageAnswer(
    inboxItemPage({
      frame,
      details,
      origin,
      canReply: canActOnPosts(signedIn.user.role),
      message: o.message ?? null,
      ...(o.reply ? { reply: o.reply } : {}),
      ...(o.refused ? { refused: o.refused } : {}),
      ...(o.suggested ? { suggested: o.suggested } : {}),
    }),
    o.status ? { status: o.status } : {},
  );
}
