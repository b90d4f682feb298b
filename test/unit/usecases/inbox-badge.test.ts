import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { unreadBadge } from '#usecases/inbox-badge';
import { ORG_ID } from '../support/fixtures.ts';

// The navigation's unread count: read while the frame reads the plan (no round trip added to a
// page), shown only where the plan has the inbox, and never failing the page it sits on.

const ddb = mockClient(DynamoDBDocumentClient);
beforeEach(() => ddb.reset());

describe('unreadBadge', () => {
  it('asks for the count before the plan is known, and shows it where the plan has the inbox', async () => {
    ddb.on(QueryCommand).resolves({ Count: 4 });
    let known: (plan: 'team') => void = () => {};
    const badge = unreadBadge(ORG_ID, new Promise((ok) => (known = ok)));
    await new Promise((r) => setImmediate(r));
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(1);
    known('team');
    expect(await badge).toBe(4);
  });

  it('shows none on a plan without the inbox, nor when the count cannot be read', async () => {
    ddb.on(QueryCommand).resolves({ Count: 4 });
    expect(await unreadBadge(ORG_ID, Promise.resolve('free'))).toBeNull();
    ddb.on(QueryCommand).rejects(new Error('throttled'));
    expect(await unreadBadge(ORG_ID, Promise.resolve('team'))).toBeNull();
  });
});
