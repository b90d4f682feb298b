import { describe, expect, it } from 'vitest';
import { listInboxForPerson } from '#usecases/console-inbox';
import { inboxItemItem, inboxRecord, ORG_ID } from '../../support/fixtures.ts';
import { actErrorOf, MEMBER, person, usePeopleTable } from '../../support/people.ts';

// The inbox list over the real listInbox, in the in-memory table: a member sees the items; a link
// to a further page whose cursor does not open is refused in the person's words, not as a conflict.

const table = usePeopleTable();
const SECRET = 'cursor-secret-for-tests-0123456789';

describe('the inbox list', () => {
  it('lists a member the items, and refuses a cursor that does not open as an invalid link', async () => {
    table.seed(inboxItemItem(inboxRecord(1)));
    const list = await listInboxForPerson({ orgId: ORG_ID, actor: person(MEMBER), cursorSecret: SECRET });
    expect(list.included).toBe(true);
    expect(list.items.map((i) => i.id)).toEqual([inboxRecord(1).id]);
    const bad = await actErrorOf(
      listInboxForPerson({ orgId: ORG_ID, actor: person(MEMBER), cursor: 'nope', cursorSecret: SECRET }),
    );
    expect(bad.kind).toBe('invalid');
    expect(bad.message).toBe('That link to more items is not valid; start again from the first page.');
  });
});
