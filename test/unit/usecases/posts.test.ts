import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeCursor, encodeCursor } from '#core/cursor';
import { ApiError } from '#core/errors';
import type { PostRecord } from '#core/posts';
import type { CreatePostInput } from '#core/requests';
import { createPost } from '#usecases/create-post';
import { deletePost } from '#usecases/delete-post';
import { getPostById } from '#usecases/get-post';
import { listPosts } from '#usecases/list-posts';
import { publishPost } from '#usecases/publish-post';
import { reschedulePost } from '#usecases/reschedule-post';
import type { Gate } from '#usecases/support/post-writes';
import { rejectedApiError } from '../support/errors.ts';
import {
  channel,
  channelItem,
  fixedId,
  type Item,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  serveItems,
  TABLE,
} from '../support/fixtures.ts';

const ddb = mockClient(DynamoDBDocumentClient);

const NOW = new Date('2030-06-01T12:00:00.000Z');
const LATER = '2030-06-02T12:00:00.000Z';
const SECRET = 'usecase-cursor-secret';
const CH1 = channel(1, 'bluesky');
const POST = post({ id: fixedId('post', 5) });

/** The post's version check failed on the SDK's one attempt: another writer is one version on. */
const conditionFailed = () =>
  Object.assign(
    new ConditionalCheckFailedException({
      message: 'The conditional request failed',
      $metadata: { attempts: 1 },
    }),
    { Item: marshall(postItem({ ...POST, version: POST.version + 1 })) },
  );

/** The UpdateItem calls on post items (not the posts_per_month count on the gate item). */
const postUpdates = () =>
  ddb
    .commandCalls(UpdateCommand)
    .map((c) => c.args[0].input)
    .filter((i) => String(i.Key?.sk).startsWith('POST#'));
const countUpdates = () =>
  ddb
    .commandCalls(UpdateCommand)
    .map((c) => c.args[0].input)
    .filter((i) => String(i.Key?.sk).startsWith('USAGE#'));
/** Fails the post writes with `err`, letting the count's writes through. */
const failPostWrites = (err: () => Error, times = Infinity) => {
  let left = times;
  ddb.on(UpdateCommand).callsFake((input: { Key?: { sk?: string } }) => {
    if (String(input.Key?.sk).startsWith('POST#') && left-- > 0) throw err();
    return {};
  });
};

/** An admitted request: the admission resolves at once. */
let gate: Gate & { admitted: ReturnType<typeof vi.fn> };

const draftInput = (overrides: Partial<CreatePostInput> = {}): CreatePostInput => ({
  variants: [{ channel_id: CH1.id, body: 'Hello' }],
  draft: true,
  ...overrides,
});

function given(items: Item[]) {
  serveItems(ddb, items);
}

beforeEach(() => {
  ddb.reset();
  gate = { admitted: vi.fn(async () => undefined), postsPerMonth: 30 };
});

describe('createPost', () => {
  it('reports unknown_channel at /variants/<i>/channel_id for a channel the org does not have', async () => {
    // Arrange: the org has CH1 only; another org has channel 2.
    given([orgItem(org()), channelItem(CH1), channelItem(channel(2, 'x', OTHER_ORG_ID))]);
    const input = draftInput({
      variants: [
        { channel_id: CH1.id, body: 'ok' },
        { channel_id: fixedId('channel', 2), body: 'not ours' },
        { channel_id: 'nonsense', body: 'not an id' },
      ],
    });

    // Act
    const err = await rejectedApiError(createPost(ORG_ID, input, NOW, gate));

    // Assert
    expect(err.code).toBe('validation_failed');
    expect(err.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/1/channel_id', code: 'unknown_channel' }),
      expect.objectContaining({ pointer: '/variants/2/channel_id', code: 'unknown_channel' }),
    ]);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });

  it("looks channels up under the caller's organization only", async () => {
    // Arrange
    given([orgItem(org())]);

    // Act
    await rejectedApiError(
      createPost(
        ORG_ID,
        draftInput({ variants: [{ channel_id: fixedId('channel', 2), body: 'x' }] }),
        NOW,
        gate,
      ),
    );

    // Assert
    const keys = ddb.commandCalls(BatchGetCommand)[0]?.args[0].input.RequestItems?.[TABLE]?.Keys ?? [];
    expect(keys).toEqual([
      { pk: `ORG#${ORG_ID}`, sk: 'ORG' },
      { pk: `ORG#${ORG_ID}`, sk: `CHANNEL#${fixedId('channel', 2)}` },
    ]);
  });

  it('refuses a disconnected channel with channel_disconnected', async () => {
    given([orgItem(org()), channelItem({ ...CH1, status: 'disconnected' })]);
    const err = await rejectedApiError(createPost(ORG_ID, draftInput(), NOW, gate));
    expect(err.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/channel_id', code: 'channel_disconnected' }),
    ]);
  });

  it('reports mode and channel problems together in one answer', async () => {
    given([orgItem(org())]);
    const err = await rejectedApiError(createPost(ORG_ID, draftInput({ draft: undefined }), NOW, gate));
    expect(err.errors?.map((e) => e.code)).toEqual(['mode_required', 'unknown_channel']);
  });

  it('reports media that is not a ready asset of the org as unknown_media', async () => {
    given([orgItem(org()), channelItem(CH1)]);
    const input = draftInput({
      variants: [
        { channel_id: CH1.id, body: 'x', media: [{ url: 'https://cdn.example/cat.png', type: 'image' }] },
      ],
    });
    const err = await rejectedApiError(createPost(ORG_ID, input, NOW, gate));
    expect(err.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/media/0/url', code: 'unknown_media' }),
    ]);
  });

  it('refuses publish_now with 403 dangerous_ops_disabled while the toggle is off, writing nothing', async () => {
    given([orgItem(org()), channelItem(CH1)]);
    const err = await rejectedApiError(
      createPost(ORG_ID, draftInput({ draft: undefined, publish_now: true }), NOW, gate),
    );
    expect(err).toMatchObject({ code: 'dangerous_ops_disabled', status: 403 });
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('inserts a scheduled post under the caller org, guarded against overwrites', async () => {
    // Arrange
    given([orgItem(org()), channelItem(CH1)]);

    // Act
    const created = await createPost(
      ORG_ID,
      draftInput({ draft: undefined, scheduled_at: LATER }),
      NOW,
      gate,
    );

    // Assert
    expect(created).toMatchObject({ status: 'scheduled', scheduled_at: LATER });
    // One PutItem, after the post was counted (here by a write of its own: this gate does not count).
    expect(countUpdates()).toHaveLength(1);
    expect(gate.admitted).toHaveBeenCalledWith({ period: '2030-06', limit: 30 });
    const put = ddb.commandCalls(PutCommand)[0]?.args[0].input;
    expect(put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
    expect(put?.Item).toMatchObject({
      pk: `ORG#${ORG_ID}`,
      sk: `POST#${created.id}`,
      gsi1pk: `ORG#${ORG_ID}#POSTS#scheduled`,
      entity: 'post',
      version: 1,
    });
  });
});

describe('getPostById', () => {
  it("reads the post under the caller's organization", async () => {
    // Arrange
    given([postItem(POST)]);

    // Act
    const got = await getPostById(ORG_ID, POST.id);

    // Assert
    expect(got.id).toBe(POST.id);
    expect(ddb.commandCalls(GetCommand)[0]?.args[0].input.Key).toEqual({
      pk: `ORG#${ORG_ID}`,
      sk: `POST#${POST.id}`,
    });
  });

  it("answers 404 for another organization's post", async () => {
    given([postItem({ ...POST, org_id: OTHER_ORG_ID })]);
    const err = await rejectedApiError(getPostById(ORG_ID, POST.id));
    expect(err.code).toBe('resource_not_found');
    expect(ddb.commandCalls(GetCommand)[0]?.args[0].input.Key?.pk).toBe(`ORG#${ORG_ID}`);
  });

  it('answers 404 for an id that is not a post id without reading the table', async () => {
    const err = await rejectedApiError(getPostById(ORG_ID, 'POST#x'));
    expect(err.code).toBe('resource_not_found');
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('listPosts', () => {
  const page = (n: number) =>
    Array.from({ length: n }, (_, i) => postItem(post({ id: fixedId('post', 100 - i) })));

  it('asks for one extra item and signs a cursor for the last post of a full page', async () => {
    // Arrange
    ddb.on(QueryCommand).resolves({ Items: page(3) });

    // Act
    const res = await listPosts(ORG_ID, { limit: 2 }, SECRET);

    // Assert
    const input = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ Limit: 3, ScanIndexForward: false, ExclusiveStartKey: undefined });
    expect(input?.ExpressionAttributeValues).toEqual({ ':p': `ORG#${ORG_ID}`, ':prefix': 'POST#' });
    expect(res.data.map((p) => p.id)).toEqual([fixedId('post', 100), fixedId('post', 99)]);
    expect(res.has_more).toBe(true);
    expect(decodeCursor(SECRET, { list: 'posts', orgId: ORG_ID, filter: '' }, res.next_cursor ?? '')).toBe(
      fixedId('post', 99),
    );
  });

  it('answers has_more false and no cursor on the last page', async () => {
    ddb.on(QueryCommand).resolves({ Items: page(2) });
    const res = await listPosts(ORG_ID, { limit: 2 }, SECRET);
    expect(res).toMatchObject({ has_more: false, next_cursor: null });
  });

  it('starts the next page after the post named by the cursor', async () => {
    // Arrange
    const after = fixedId('post', 99);
    const cursor = encodeCursor(SECRET, { list: 'posts', orgId: ORG_ID, filter: '' }, after);
    ddb.on(QueryCommand).resolves({ Items: [] });

    // Act
    await listPosts(ORG_ID, { after: cursor }, SECRET);

    // Assert
    const input = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(input?.ExclusiveStartKey).toEqual({ pk: `ORG#${ORG_ID}`, sk: `POST#${after}` });
    expect(input?.Limit).toBe(26);
  });

  it('serves the status filter from gsi1, resuming with the index keys', async () => {
    // Arrange
    const after = fixedId('post', 99);
    const cursor = encodeCursor(SECRET, { list: 'posts', orgId: ORG_ID, filter: 'scheduled' }, after);
    ddb.on(QueryCommand).resolves({ Items: [] });

    // Act
    await listPosts(ORG_ID, { status: 'scheduled', after: cursor, limit: 10 }, SECRET);

    // Assert
    const input = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :p',
      ExpressionAttributeValues: { ':p': `ORG#${ORG_ID}#POSTS#scheduled` },
      ExclusiveStartKey: {
        pk: `ORG#${ORG_ID}`,
        sk: `POST#${after}`,
        gsi1pk: `ORG#${ORG_ID}#POSTS#scheduled`,
        gsi1sk: `POST#${after}`,
      },
    });
    expect(input?.ConsistentRead).toBeUndefined(); // GSIs cannot be read consistently
  });

  it.each([
    ['from another organization', { list: 'posts', orgId: OTHER_ORG_ID, filter: '' }, {}],
    [
      'for another status filter',
      { list: 'posts', orgId: ORG_ID, filter: 'draft' },
      { status: 'failed' as const },
    ],
  ])('refuses a cursor %s with invalid_request before querying', async (_what, scope, query) => {
    const cursor = encodeCursor(SECRET, scope, fixedId('post', 1));
    const err = await rejectedApiError(listPosts(ORG_ID, { ...query, after: cursor }, SECRET));
    expect(err.code).toBe('invalid_request');
    expect(ddb.commandCalls(QueryCommand)).toHaveLength(0);
  });
});

describe('publishPost', () => {
  const dangerousOrg = orgItem(org({ dangerous_ops: true }));

  it('writes the attributes that changed with one UpdateItem under a version check', async () => {
    // Arrange
    given([dangerousOrg, postItem(POST)]);

    // Act
    const res = await publishPost(ORG_ID, POST.id, NOW, gate);

    // Assert: no transaction, no settings guard (the toggle was read with the post).
    expect(res).toEqual({ id: POST.id, status: 'publishing' });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
    const [update] = postUpdates();
    expect(update).toMatchObject({
      Key: { pk: `ORG#${ORG_ID}`, sk: `POST#${POST.id}` },
      ConditionExpression: 'version = :expected',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
    const set = Object.fromEntries(
      Object.entries(update?.ExpressionAttributeNames ?? {})
        .filter(([k]) => k.startsWith('#f'))
        .map(([k, name]) => [name, update?.ExpressionAttributeValues?.[`:v${k.slice(2)}`]]),
    );
    expect(set).toMatchObject({
      status: 'publishing',
      version: 2,
      round: 1,
      counted_period: '2030-06',
      gsi1pk: `ORG#${ORG_ID}#POSTS#publishing`,
      gsi1sk: `POST#${POST.id}`,
    });
    expect(set.gsi2pk).toMatch(/^DUE#/);
    // Unchanged attributes are not written: the variants, the creation time.
    expect(Object.keys(set)).not.toContain('variants');
    expect(Object.keys(set)).not.toContain('created_at');
  });

  it('retries a concurrent change and answers 409 after 4 attempts', async () => {
    // Arrange
    given([dangerousOrg, postItem(POST)]);
    failPostWrites(conditionFailed);

    // Act
    const err = await rejectedApiError(publishPost(ORG_ID, POST.id, NOW, gate));

    // Assert
    expect(err).toMatchObject({ code: 'resource_conflict', status: 409 });
    expect(postUpdates()).toHaveLength(4);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(4); // each attempt re-reads
    // Counted once, reused by every attempt, given back: no write landed.
    expect(countUpdates().map((u) => u.UpdateExpression)).toEqual([
      'ADD posts_per_month :one',
      'ADD posts_per_month :minus',
    ]);
  });

  it('succeeds when a retry finds the post unchanged by others', async () => {
    given([dangerousOrg, postItem(POST)]);
    failPostWrites(conditionFailed, 1);
    expect(await publishPost(ORG_ID, POST.id, NOW, gate)).toEqual({ id: POST.id, status: 'publishing' });
    expect(postUpdates()).toHaveLength(2);
    expect(countUpdates()).toHaveLength(1); // the count taken once, used by the second write
  });

  it('does not retry a failure that is not a concurrent change', async () => {
    given([dangerousOrg, postItem(POST)]);
    failPostWrites(() => new Error('throttled'));
    await expect(publishPost(ORG_ID, POST.id, NOW, gate)).rejects.toThrow('throttled');
    expect(postUpdates()).toHaveLength(1);
    // It may have landed: the count is kept, never given back.
    expect(countUpdates().map((u) => u.UpdateExpression)).toEqual(['ADD posts_per_month :one']);
  });

  it('accepts a publishing post as-is without writing', async () => {
    given([dangerousOrg, postItem({ ...POST, status: 'publishing', round: 1 })]);
    expect(await publishPost(ORG_ID, POST.id, NOW, gate)).toEqual({ id: POST.id, status: 'publishing' });
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
    expect(gate.admitted).toHaveBeenCalledWith();
  });

  it('answers 403 dangerous_ops_disabled before 404 while the toggle is off', async () => {
    given([orgItem(org())]);
    const err = await rejectedApiError(publishPost(ORG_ID, fixedId('post', 404), NOW, gate));
    expect(err.code).toBe('dangerous_ops_disabled');
  });

  it('answers 404 for an unknown post with the toggle on', async () => {
    given([dangerousOrg]);
    expect((await rejectedApiError(publishPost(ORG_ID, fixedId('post', 404), NOW, gate))).code).toBe(
      'resource_not_found',
    );
  });

  it('answers 409 for a published post', async () => {
    given([dangerousOrg, postItem({ ...POST, status: 'published' })]);
    expect((await rejectedApiError(publishPost(ORG_ID, POST.id, NOW, gate))).code).toBe('resource_conflict');
  });
});

describe('deletePost', () => {
  it('deletes the post as read with one DeleteItem on its version', async () => {
    // Arrange
    given([orgItem(org({ dangerous_ops: true })), postItem(POST)]);

    // Act
    const res = await deletePost(ORG_ID, POST.id, gate);

    // Assert
    expect(res).toEqual({ id: POST.id, deleted: true });
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
    expect(ddb.commandCalls(DeleteCommand).map((c) => c.args[0].input)).toEqual([
      expect.objectContaining({
        Key: { pk: `ORG#${ORG_ID}`, sk: `POST#${POST.id}` },
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': 1 },
      }),
    ]);
  });

  it('retries a concurrent change from a fresh read', async () => {
    given([orgItem(org({ dangerous_ops: true })), postItem(POST)]);
    ddb.on(DeleteCommand).rejectsOnce(conditionFailed()).resolves({});
    expect(await deletePost(ORG_ID, POST.id, gate)).toEqual({ id: POST.id, deleted: true });
    expect(ddb.commandCalls(DeleteCommand)).toHaveLength(2);
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(2);
  });

  it('answers 409 for a publishing post and deletes nothing', async () => {
    given([orgItem(org({ dangerous_ops: true })), postItem({ ...POST, status: 'publishing' })]);
    expect((await rejectedApiError(deletePost(ORG_ID, POST.id, gate))).code).toBe('resource_conflict');
    expect(ddb.commandCalls(DeleteCommand)).toHaveLength(0);
  });

  it('answers 403 dangerous_ops_disabled while the toggle is off', async () => {
    given([orgItem(org()), postItem(POST)]);
    expect((await rejectedApiError(deletePost(ORG_ID, POST.id, gate))).code).toBe('dangerous_ops_disabled');
  });
});

describe('reschedulePost', () => {
  it('moves the post to the new time under a version check', async () => {
    // Arrange
    given([
      orgItem(org()),
      postItem({ ...POST, status: 'scheduled', scheduled_at: LATER, counted_period: '2030-06' }),
    ]);
    const next = '2030-06-03T12:00:00.000Z';

    // Act
    const res = await reschedulePost(ORG_ID, POST.id, next, NOW, gate);

    // Assert
    expect(res).toMatchObject({ status: 'scheduled', scheduled_at: next });
    const [update] = postUpdates();
    expect(update?.ExpressionAttributeValues).toMatchObject({ ':expected': 1 });
    expect(Object.values(update?.ExpressionAttributeValues ?? {})).toEqual(
      expect.arrayContaining([next, 2, `ORG#${ORG_ID}#POSTS#scheduled`, `DUE#2030-06-03T12:00`]),
    );
    expect(countUpdates()).toEqual([]); // counted already
  });

  it('refuses a past time with validation_failed before reading anything', async () => {
    const err = await rejectedApiError(reschedulePost(ORG_ID, POST.id, '2030-05-01T00:00:00Z', NOW, gate));
    expect(err.errors).toEqual([
      expect.objectContaining({ pointer: '/scheduled_at', code: 'not_in_future' }),
    ]);
    expect(ddb.calls()).toHaveLength(0);
  });

  it.each<PostRecord['status']>(['published', 'publishing', 'needs_approval'])(
    'answers 409 for a %s post',
    async (status) => {
      given([orgItem(org()), postItem({ ...POST, status })]);
      expect((await rejectedApiError(reschedulePost(ORG_ID, POST.id, LATER, NOW, gate))).code).toBe(
        'resource_conflict',
      );
    },
  );

  it('retries a concurrent change and answers 409 after 4 attempts', async () => {
    given([orgItem(org()), postItem(POST)]);
    failPostWrites(conditionFailed);
    expect((await rejectedApiError(reschedulePost(ORG_ID, POST.id, LATER, NOW, gate))).code).toBe(
      'resource_conflict',
    );
    expect(postUpdates()).toHaveLength(4);
  });
});

describe('the admission gate', () => {
  const refused = () => new ApiError('rate_limited', 'slow down', { headers: { 'retry-after': '7' } });

  it('createPost reads first, then awaits the admission, and writes nothing when refused', async () => {
    // Arrange
    given([orgItem(org()), channelItem(CH1)]);
    gate.admitted.mockRejectedValue(refused());

    // Act
    const err = await rejectedApiError(createPost(ORG_ID, draftInput(), NOW, gate));

    // Assert
    expect(err.code).toBe('rate_limited');
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(1);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('createPost starts the admission beside its read: a draft without a count, a draft never waits for it', async () => {
    given([orgItem(org())]);
    gate.admitted.mockReturnValue(new Promise(() => undefined)); // never settles
    const err = await rejectedApiError(createPost(ORG_ID, draftInput(), NOW, gate));
    expect(err.code).toBe('validation_failed');
    expect(gate.admitted.mock.calls).toEqual([[]]);
  });

  it('createPost of a post that may count asks the admission for the count, and gives back a count it did not use', async () => {
    // Arrange: the gate's write counted the post; the request then fails validation.
    given([orgItem(org())]);
    gate.admitted.mockResolvedValue({ allowed: true, postCounted: true });

    // Act
    const err = await rejectedApiError(
      createPost(ORG_ID, draftInput({ draft: undefined, scheduled_at: LATER }), NOW, gate),
    );

    // Assert
    expect(err.code).toBe('validation_failed');
    expect(gate.admitted.mock.calls).toEqual([[{ period: '2030-06', limit: 30 }]]);
    expect(countUpdates().map((u) => u.UpdateExpression)).toEqual(['ADD posts_per_month :minus']);
  });

  it.each([
    ['publishPost', () => publishPost(ORG_ID, POST.id, NOW, gate)],
    ['reschedulePost', () => reschedulePost(ORG_ID, POST.id, LATER, NOW, gate)],
    ['deletePost', () => deletePost(ORG_ID, POST.id, gate)],
  ])('%s reads, awaits the admission, and writes nothing when refused', async (_op, call) => {
    // Arrange
    given([orgItem(org({ dangerous_ops: true })), postItem(POST)]);
    gate.admitted.mockRejectedValue(refused());

    // Act
    const err = await rejectedApiError(call());

    // Assert
    expect(err.code).toBe('rate_limited');
    expect(gate.admitted).toHaveBeenCalled();
    expect(ddb.commandCalls(BatchGetCommand)).toHaveLength(1);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
    expect(ddb.commandCalls(DeleteCommand)).toHaveLength(0);
  });
});
