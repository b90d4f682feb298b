import { canActOnPosts } from '#core/accounts';
import { INBOX_KINDS, INBOX_STATUSES, type InboxKind, type InboxStatus } from '#core/inbox';
import { ActError, type SignedIn } from '#core/people';
import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import {
  inboxItemPage,
  inboxItemPath,
  inboxPage,
  REPLY_FIELD,
  type ReplyForm,
  type Suggested,
} from '#handlers/views/inbox';
import { type MessageCode, messageOf, withMessage } from '#handlers/views/layout';
import { requireEnv } from '#shared/config';
import { pageAnswer, redirectAnswer } from '#shared/console';
import {
  getInboxItemForPerson,
  listInboxForPerson,
  markForPerson,
  replyForPerson,
  suggestReplyForPerson,
} from '#usecases/console-inbox';

// The inbox: the list and an item's page for everyone; marking read, unread and archived for
// everyone; replying for owners and admins (the use case decides: a member's POST gets their 403).
// Acts answer with a redirect to the item's page (a reload sends nothing again).

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

const MARKS: Record<string, { status: InboxStatus; done: MessageCode }> = {
  read: { status: 'read', done: 'inbox_read' },
  unread: { status: 'unread', done: 'inbox_unread' },
  archive: { status: 'archived', done: 'inbox_archived' },
};

/** A refused suggestion's page status (a model that could not answer is the server's side). */
const SUGGEST_STATUS: Partial<Record<ActError['kind'], number>> = {
  forbidden: 403,
  rate_limited: 429,
  invalid: 400,
  conflict: 503,
};

const oneOf = <T extends string>(values: readonly T[], v: string | null): T | undefined =>
  v && (values as readonly string[]).includes(v) ? (v as T) : undefined;

async function itemAnswer(
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

export const { handler } = consolePage('consoleInbox', {
  'GET /console/inbox': {
    who: 'person',
    run: async ({ signedIn, query, site }) => {
      const filters = {
        channel: query.get('channel') || undefined,
        kind: oneOf<InboxKind>(INBOX_KINDS, query.get('kind')),
        status: oneOf<InboxStatus>(INBOX_STATUSES, query.get('status')),
      };
      const cursor = query.get('cursor') || undefined;
      const [frame, list] = await Promise.all([
        frameOf(signedIn),
        listInboxForPerson({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          channelId: filters.channel,
          kind: filters.kind,
          status: filters.status,
          cursor,
          cursorSecret: CURSOR_SECRET,
        }),
      ]);
      return pageAnswer(
        inboxPage({
          frame,
          list,
          filters,
          paged: cursor !== undefined,
          origin: site.origin,
          message: messageOf(query),
        }),
      );
    },
  },
  'GET /console/inbox/{id}': {
    who: 'person',
    run: ({ signedIn, params, query, site }) =>
      itemAnswer(signedIn, site.origin, params.id ?? '', { message: messageOf(query) }),
  },
  'POST /console/inbox/{id}/{act}': {
    who: 'person',
    run: async ({ signedIn, params, form, now, site, lambda }) => {
      const id = params.id ?? '';
      const base = { orgId: orgOf(signedIn), actor: actorOf(signedIn), id, now };
      const act = params.act ?? '';
      const mark = Object.hasOwn(MARKS, act) ? MARKS[act] : undefined;
      if (mark) {
        await markForPerson({ ...base, status: mark.status });
        return redirectAnswer(withMessage(inboxItemPath(id), mark.done));
      }
      if (act === 'suggest') {
        // Shown in the reply form, editable; nothing is sent until the person sends it.
        try {
          const suggested = await suggestReplyForPerson({ ...base, lambda });
          return itemAnswer(signedIn, site.origin, id, { suggested });
        } catch (err) {
          if (!(err instanceof ActError) || err.kind === 'not_found') throw err;
          return itemAnswer(signedIn, site.origin, id, {
            refused: err.message,
            status: SUGGEST_STATUS[err.kind] ?? 409,
          });
        }
      }
      if (act !== 'reply') throw new ActError('There is no such action on an inbox item.', 'not_found');
      const body = form.get('body') ?? '';
      try {
        await replyForPerson({ ...base, body, token: form.get('token') ?? '' });
      } catch (err) {
        // A refused text: the form again, as typed, with the reason by the field; nothing was sent.
        if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
        const reply = { value: body, errors: [{ field: REPLY_FIELD, message: err.message }] };
        return itemAnswer(signedIn, site.origin, id, { reply, status: 400 });
      }
      return redirectAnswer(`${withMessage(inboxItemPath(id), 'inbox_reply_queued')}#replies`);
    },
  },
});
