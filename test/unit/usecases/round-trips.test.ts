import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler as createPost } from '#handlers/create-post';
import { handler as deletePost } from '#handlers/delete-post';
import { handler as getPost } from '#handlers/get-post';
import { handler as listChannels } from '#handlers/list-channels';
import { handler as listPosts } from '#handlers/list-posts';
import { handler as publishPost } from '#handlers/publish-post';
import { handler as reschedulePost } from '#handlers/reschedule-post';
import { authenticate, clearAuthCache } from '#shared/auth';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  channel,
  channelItem,
  daysFromNow,
  type EventOptions,
  jsonHeaders,
  lambdaContext,
  org,
  orgItem,
  post,
  postItem,
  serveItems,
} from '../support/fixtures.ts';

// DynamoDB round trips per operation on the warm path (API key already in the per-container
// cache), through the real handlers. BENCHMARKS.md cites these numbers: a change here adds or
// removes a round trip on the request path and must be deliberate.

const ddb = mockClient(DynamoDBDocumentClient);
const dynamo = mockClient(DynamoDBClient);

const KEY = apiKey({ scopes: ['posts:read', 'posts:write', 'channels:read'] });
const CH1 = channel(1, 'bluesky');
const DRAFT = post();

type Handler = (
  event: APIGatewayProxyEventV2,
  context: Context,
) => Promise<APIGatewayProxyStructuredResultV2>;

interface RoundTrips {
  status: number | undefined;
  Get: number;
  Query: number;
  BatchGet: number;
  Put: number;
  TransactWrite: number;
  total: number;
  lowLevel: number;
}

/** Invokes `handler` warm and counts the DynamoDB requests the invocation made. */
async function roundTrips(handler: Handler, operationId: string, opts: EventOptions): Promise<RoundTrips> {
  await authenticate(bearer(KEY)); // warm the key cache, as any earlier request on this container did
  ddb.resetHistory();
  dynamo.resetHistory();
  const res = await handler(apiEvent(operationId, opts), lambdaContext(operationId));
  return {
    status: res.statusCode,
    Get: ddb.commandCalls(GetCommand).length,
    Query: ddb.commandCalls(QueryCommand).length,
    BatchGet: ddb.commandCalls(BatchGetCommand).length,
    Put: ddb.commandCalls(PutCommand).length,
    TransactWrite: ddb.commandCalls(TransactWriteCommand).length,
    total: ddb.calls().length,
    lowLevel: dynamo.calls().length,
  };
}

const counts = (c: Partial<Omit<RoundTrips, 'status' | 'lowLevel'>>) => ({
  Get: 0,
  Query: 0,
  BatchGet: 0,
  Put: 0,
  TransactWrite: 0,
  lowLevel: 0,
  ...c,
});

beforeEach(() => {
  ddb.reset();
  dynamo.reset();
  clearAuthCache();
  serveItems(ddb, [
    apiKeyItem(KEY),
    orgItem(org({ dangerous_ops: true })),
    channelItem(CH1),
    postItem(DRAFT),
  ]);
  ddb.on(QueryCommand).resolves({ Items: [postItem(DRAFT)] });
  ddb.on(PutCommand).resolves({});
  ddb.on(TransactWriteCommand).resolves({});
});

describe('DynamoDB round trips per operation, warm', () => {
  it('getPost: 1 GetItem', async () => {
    const rt = await roundTrips(getPost, 'getPost', {
      headers: bearer(KEY),
      pathParameters: { id: DRAFT.id },
    });
    expect(rt).toEqual({ status: 200, total: 1, ...counts({ Get: 1 }) });
  });

  it('listPosts: 1 Query', async () => {
    const rt = await roundTrips(listPosts, 'listPosts', {
      headers: bearer(KEY),
      query: { limit: '10' },
    });
    expect(rt).toEqual({ status: 200, total: 1, ...counts({ Query: 1 }) });
  });

  it('listPosts with a status filter: 1 Query', async () => {
    const rt = await roundTrips(listPosts, 'listPosts', {
      headers: bearer(KEY),
      query: { status: 'draft' },
    });
    expect(rt).toEqual({ status: 200, total: 1, ...counts({ Query: 1 }) });
  });

  it('listChannels: 1 Query', async () => {
    ddb.on(QueryCommand).resolves({ Items: [channelItem(CH1)] });
    const rt = await roundTrips(listChannels, 'listChannels', { headers: bearer(KEY) });
    expect(rt).toEqual({ status: 200, total: 1, ...counts({ Query: 1 }) });
  });

  it('createPost without Idempotency-Key: 1 BatchGetItem + 1 PutItem', async () => {
    const rt = await roundTrips(createPost, 'createPost', {
      headers: jsonHeaders(KEY),
      body: JSON.stringify({
        variants: [{ channel_id: CH1.id, body: 'Hello' }],
        scheduled_at: daysFromNow(1),
      }),
    });
    expect(rt).toEqual({ status: 201, total: 2, ...counts({ BatchGet: 1, Put: 1 }) });
  });

  it('publishPost: 1 BatchGetItem + 1 TransactWriteItems', async () => {
    const rt = await roundTrips(publishPost, 'publishPost', {
      headers: bearer(KEY),
      pathParameters: { id: DRAFT.id },
    });
    expect(rt).toEqual({ status: 202, total: 2, ...counts({ BatchGet: 1, TransactWrite: 1 }) });
  });

  it('deletePost: 1 BatchGetItem + 1 TransactWriteItems', async () => {
    const rt = await roundTrips(deletePost, 'deletePost', {
      headers: bearer(KEY),
      pathParameters: { id: DRAFT.id },
    });
    expect(rt).toEqual({ status: 200, total: 2, ...counts({ BatchGet: 1, TransactWrite: 1 }) });
  });

  it('reschedulePost: 1 BatchGetItem + 1 TransactWriteItems', async () => {
    const rt = await roundTrips(reschedulePost, 'reschedulePost', {
      headers: jsonHeaders(KEY),
      pathParameters: { id: DRAFT.id },
      body: JSON.stringify({ scheduled_at: daysFromNow(2) }),
    });
    expect(rt).toEqual({ status: 200, total: 2, ...counts({ BatchGet: 1, TransactWrite: 1 }) });
  });

  it('a cold request adds exactly one GetItem for the API key', async () => {
    // Act: no warm-up.
    const res = await getPost(
      apiEvent('getPost', { headers: bearer(KEY), pathParameters: { id: DRAFT.id } }),
      lambdaContext('getPost'),
    );

    // Assert
    expect(res.statusCode).toBe(200);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(2);
    expect(ddb.calls()).toHaveLength(2);
  });
});
