import { INBOX_KINDS, INBOX_STATUSES, type InboxKind, type InboxStatus } from '#core/inbox';
import { ActError } from '#core/people';
import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import { CURSOR_SECRET, itemAnswer } from '#handlers/support/inbox-item';
import { inboxItemPath, inboxPage, REPLY_FIELD } from '#handlers/views/inbox';
import { type MessageCode, messageOf, withMessage } from '#handlers/views/layout';
import { pageAnswer, redirectAnswer } from '#shared/console';
import { listInboxForPerson, markForPerson, replyForPerson } from '#usecases/console-inbox';

// The inbox: the list and an item's page for everyone; marking read, unread and archived for
// everyone; replying for owners and admins (the use case decides: a member's POST gets their 403).
// Acts answer with a redirect to the item's page (a reload sends nothing again). "Suggest a
// reply" is in the console's suggestion function (console-suggest.ts), with the engines.

const MARKS: Record<string, { status: InboxStatus; done: MessageCode }> = {
  read: { status: 'read', done: 'inbox_read' },
  unread: { status: 'unread', done: 'inbox_unread' },
  archive: { status: 'archived', done: 'inbox_archived' },
};

const oneOf = <T extends string>(values: readonly T[], v: string | null): T | undefined =>
  v && (values as readonly string[]).includes(v) ? (v as T) : undefined;

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
    run: async ({ signedIn, params, form, now, site }) => {
      const id = params.id ?? '';
      const base = { orgId: orgOf(signedIn), actor: actorOf(signedIn), id, now };
      const act = params.act ?? '';
      const mark = Object.hasOwn(MARKS, act) ? MARKS[act] : undefined;
      if (mark) {
        await markForPerson({ ...base, status: mark.status });
        return redirectAnswer(withMessage(inboxItemPath(id), mark.done));
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
