import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  countUnread,
  getInboxItem,
  linkInboxItemsToPosts,
  queryInbox,
  setInboxStatus,
} from '#adapters/inbox';
import { fixedId, inboxComment, inboxItemItem, ORG_ID, TABLE } from '../support/fixtures.ts';

// The inbox's reads and its status write (adapters/inbox.ts), against the mocked document client:
// the keys and index each access pattern uses, the filters, the page's extra item, the status
// write's conditions, and the unread count's cap.

const ddb = mockClient(DynamoDBDocumentClient);
const ITEM = inboxComment();
const id = (n: number) => fixedId('inbox', n);

beforeEach(() => ddb.reset());

describe('getInboxItem', () => {
  it("reads the org's item strongly consistently, without its table bookkeeping", async () => {
    ddb.on(GetCommand).resolves({ Item: inboxItemItem(ITEM) });
    const got = await getInboxItem(ORG_ID, ITEM.id);
    expect(got).toEqual(ITEM);
    expect(ddb.commandCalls(GetCommand)[0]?.args[0].input).toEqual({
      TableName: TABLE,
      Key: { pk: `ORG#${ORG_ID}`, sk: `INBOX#${ITEM.id}` },
      ConsistentRead: true,
    });
  });

  it('answers null when there is no such item', async () => {
    ddb.on(GetCommand).resolves({});
    expect(await getInboxItem(ORG_ID, ITEM.id)).toBeNull();
  });
});

describe('queryInbox', () => {
  it("pages the org's items newest first, reading one more than the page to tell whether more follow", async () => {
    ddb
      .on(QueryCommand)
      .resolves({ Items: [3, 2, 1].map((n) => inboxItemItem(inboxComment({ id: id(n) }))) });
    const page = await queryInbox(ORG_ID, { limit: 2, afterId: id(4) });
    expect(page).toEqual({
      items: [inboxComment({ id: id(3) }), inboxComment({ id: id(2) })],
      hasMore: true,
      lastKey: id(2),
    });
    const input = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      TableName: TABLE,
      ConsistentRead: true,
      KeyConditionExpression: 'pk = :p AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':p': `ORG#${ORG_ID}`, ':prefix': 'INBOX#' },
      ScanIndexForward: false,
      Limit: 3,
      ExclusiveStartKey: { pk: `ORG#${ORG_ID}`, sk: `INBOX#${id(4)}` },
    });
    expect(input).not.toHaveProperty('IndexName');
    expect(input).not.toHaveProperty('FilterExpression');
  });

  it("reads a status from its own gsi1 partition, starting after the cursor's entry there", async () => {
    ddb.on(QueryCommand).resolves({ Items: [inboxItemItem(ITEM)] });
    const page = await queryInbox(ORG_ID, { limit: 25, status: 'unread', afterId: id(9) });
    expect(page).toEqual({ items: [ITEM], hasMore: false, lastKey: null });
    expect(ddb.commandCalls(QueryCommand)[0]?.args[0].input).toMatchObject({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `ORG#${ORG_ID}#INBOX#unread` },
      ScanIndexForward: false,
      ExclusiveStartKey: {
        pk: `ORG#${ORG_ID}`,
        sk: `INBOX#${id(9)}`,
        gsi1pk: `ORG#${ORG_ID}#INBOX#unread`,
        gsi1sk: id(9),
      },
    });
  });

  it('filters kind, channel and post as DynamoDB reads, and keeps reading until the page is full', async () => {
    const wanted = (n: number) => inboxItemItem(inboxComment({ id: id(n), kind: 'mention' }));
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Items: [wanted(9)], LastEvaluatedKey: { pk: `ORG#${ORG_ID}`, sk: `INBOX#${id(8)}` } })
      .resolvesOnce({
        Items: [wanted(5), wanted(4)],
        LastEvaluatedKey: { pk: `ORG#${ORG_ID}`, sk: `INBOX#${id(4)}` },
      });
    const page = await queryInbox(ORG_ID, {
      limit: 2,
      kind: 'mention',
      channelId: fixedId('channel', 1),
      postId: fixedId('post', 1),
    });
    expect(page.items.map((i) => i.id)).toEqual([id(9), id(5)]);
    expect(page).toMatchObject({ hasMore: true, lastKey: id(5) });
    const calls = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      FilterExpression: '#kind = :kind AND #channel_id = :channel_id AND #post_id = :post_id',
      ExpressionAttributeNames: { '#kind': 'kind', '#channel_id': 'channel_id', '#post_id': 'post_id' },
      ExpressionAttributeValues: {
        ':kind': 'mention',
        ':channel_id': fixedId('channel', 1),
        ':post_id': fixedId('post', 1),
      },
      Limit: 200,
    });
    expect(calls[1]?.ExclusiveStartKey).toEqual({ pk: `ORG#${ORG_ID}`, sk: `INBOX#${id(8)}` });
  });

  it('stops after its reads with a short page whose next one starts after the last item read', async () => {
    ddb
      .on(QueryCommand)
      .resolves({ Items: [], LastEvaluatedKey: { pk: `ORG#${ORG_ID}`, sk: `INBOX#${id(7)}` } });
    const page = await queryInbox(ORG_ID, { limit: 10, kind: 'message' });
    expect(page).toEqual({ items: [], hasMore: true, lastKey: id(7) });
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(4);
  });
});

describe('setInboxStatus', () => {
  it('moves the gsi1 entry with the status, bumps the version and sets updated_at, on an existing item only', async () => {
    const after = inboxItemItem({
      ...ITEM,
      status: 'read',
      version: 2,
      updated_at: '2030-01-02T00:00:00.000Z',
    });
    ddb.on(UpdateCommand).resolves({ Attributes: after });
    const written = await setInboxStatus(ORG_ID, ITEM.id, 'read', '2030-01-02T00:00:00.000Z', null);
    expect(written).toMatchObject({ status: 'read', version: 2 });
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.Key).toEqual({ pk: `ORG#${ORG_ID}`, sk: `INBOX#${ITEM.id}` });
    expect(input?.ConditionExpression).toBe(
      'attribute_exists(pk) AND #status <> :status AND attribute_not_exists(#version)',
    );
    expect(input?.UpdateExpression).toMatch(
      /^SET #status = :status, .*#version = if_not_exists\(#version, :one\) \+ :one$/,
    );
    expect(input?.ExpressionAttributeNames?.['#status']).toBe('status');
    expect(input?.ExpressionAttributeValues?.[':status']).toBe('read');
    expect(input?.ReturnValuesOnConditionCheckFailure).toBe('ALL_OLD');
    const names = input?.ExpressionAttributeNames ?? {};
    const values = input?.ExpressionAttributeValues ?? {};
    const set = Object.fromEntries(
      Object.entries(names)
        .filter(([k]) => k.startsWith('#f'))
        .map(([k, attr]) => [attr, values[`:v${k.slice(2)}`]]),
    );
    expect(set).toEqual({
      gsi1pk: `ORG#${ORG_ID}#INBOX#read`,
      gsi1sk: ITEM.id,
      updated_at: '2030-01-02T00:00:00.000Z',
    });
    expect(input?.ReturnValues).toBe('ALL_NEW');
  });

  it('conditions on the version read when there is one', async () => {
    ddb.on(UpdateCommand).resolves({ Attributes: inboxItemItem({ ...ITEM, version: 4 }) });
    await setInboxStatus(ORG_ID, ITEM.id, 'archived', '2030-01-02T00:00:00.000Z', 3);
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input?.ConditionExpression).toBe(
      'attribute_exists(pk) AND #status <> :status AND #version = :expected',
    );
    expect(input?.ExpressionAttributeValues?.[':expected']).toBe(3);
  });

  it('answers null when the item is gone or changed since (the condition failed)', async () => {
    ddb.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: 'no', $metadata: {} }));
    expect(await setInboxStatus(ORG_ID, ITEM.id, 'read', '2030-01-02T00:00:00.000Z', 1)).toBeNull();
    ddb.on(UpdateCommand).rejects(
      Object.assign(new ConditionalCheckFailedException({ message: 'no', $metadata: {} }), {
        Item: inboxItemItem({ ...ITEM, status: 'archived', version: 2 }),
      }),
    );
    expect(await setInboxStatus(ORG_ID, ITEM.id, 'read', '2030-01-02T00:00:00.000Z', 1)).toBeNull();
  });

  it('answers an item that already has the status as it is, unwritten (idempotent)', async () => {
    ddb.on(UpdateCommand).rejects(
      Object.assign(new ConditionalCheckFailedException({ message: 'no', $metadata: {} }), {
        Item: inboxItemItem({ ...ITEM, status: 'read', version: 2 }),
      }),
    );
    expect(await setInboxStatus(ORG_ID, ITEM.id, 'read', '2030-01-02T00:00:00.000Z')).toMatchObject({
      id: ITEM.id,
      status: 'read',
      version: 2,
    });
  });

  it('lets any other failure through', async () => {
    ddb.on(UpdateCommand).rejects(new Error('socket hang up'));
    await expect(setInboxStatus(ORG_ID, ITEM.id, 'read', '2030-01-02T00:00:00.000Z')).rejects.toThrow(
      'socket hang up',
    );
  });
});

describe('countUnread', () => {
  it('counts the unread gsi1 partition with Select COUNT, page after page, stopping at the cap', async () => {
    ddb
      .on(QueryCommand)
      .resolvesOnce({ Count: 60, LastEvaluatedKey: { pk: 'a', sk: 'b' } })
      .resolvesOnce({ Count: 39, LastEvaluatedKey: { pk: 'c', sk: 'd' } });
    expect(await countUnread(ORG_ID, 99)).toBe(99);
    const calls = ddb.commandCalls(QueryCommand).map((c) => c.args[0].input);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `ORG#${ORG_ID}#INBOX#unread` },
      Select: 'COUNT',
      Limit: 99,
    });
    expect(calls[1]).toMatchObject({ Limit: 39, ExclusiveStartKey: { pk: 'a', sk: 'b' } });
  });

  it('answers the whole count when the partition ends first', async () => {
    ddb.on(QueryCommand).resolves({ Count: 7 });
    expect(await countUnread(ORG_ID, 99)).toBe(7);
  });
});

describe('linkInboxItemsToPosts', () => {
  it('gives a post_id to the channel’s items of the window that answer one of the parts, and only to those', async () => {
    const early = inboxComment({
      id: id(1),
      root_id: 'root-1',
      in_reply_to: 'root-1',
      post_id: null,
      version: 1,
    });
    const other = inboxComment({ id: id(2), root_id: 'elsewhere', in_reply_to: 'elsewhere', post_id: null });
    const known = inboxComment({ id: id(4), root_id: 'root-1', in_reply_to: 'root-1', post_id: 'post_B' });
    const reply = inboxComment({
      id: id(3),
      root_id: null,
      in_reply_to: 'part-2',
      post_id: null,
      version: 3,
    });
    ddb.on(QueryCommand).resolves({ Items: [early, other, reply, known].map(inboxItemItem) });
    ddb.on(UpdateCommand).resolves({});
    const postOf = new Map([
      ['root-1', 'post_A'],
      ['part-2', 'post_A'],
    ]);
    const since = Date.parse('2030-01-01T00:00:00.000Z');
    expect(await linkInboxItemsToPosts(ORG_ID, ITEM.channel_id, postOf, since)).toBe(2);

    const query = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(query?.KeyConditionExpression).toBe('pk = :pk AND sk BETWEEN :from AND :to');
    // The window starts at the ids of items created at `since` (their time part sorts them).
    expect(String(query?.ExpressionAttributeValues?.[':from'])).toMatch(/^INBOX#inb_/);
    expect(query?.ExpressionAttributeValues?.[':ch']).toBe(ITEM.channel_id);
    const updates = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(updates.map((u) => u.Key?.sk)).toEqual([`INBOX#${id(1)}`, `INBOX#${id(3)}`]);
    for (const u of updates) {
      expect(u.ExpressionAttributeValues?.[':p']).toBe('post_A');
      // At the version read: never over a write made meanwhile.
      expect(u.ConditionExpression).toContain('version = :v');
    }
  });

  it('counts an item linked meanwhile (its condition failed) as not linked here', async () => {
    ddb
      .on(QueryCommand)
      .resolves({ Items: [inboxItemItem(inboxComment({ id: id(1), root_id: 'r', post_id: null }))] });
    ddb.on(UpdateCommand).rejects(new ConditionalCheckFailedException({ message: 'no', $metadata: {} }));
    expect(await linkInboxItemsToPosts(ORG_ID, ITEM.channel_id, new Map([['r', 'post_A']]), 0)).toBe(0);
  });
});
