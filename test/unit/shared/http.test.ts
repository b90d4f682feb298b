import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { handler as createPost } from '#handlers/create-post';
import { handler as getPost } from '#handlers/get-post';
import { MAX_BODY_BYTES } from '#shared/http';
import { clearAuthCache } from '#usecases/support/authenticate';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  bearer,
  channel,
  channelItem,
  type EventOptions,
  fixedId,
  jsonOf,
  lambdaContext,
  org,
  orgItem,
  post,
  postItem,
  problemOf,
  serveCounters,
  serveItems,
} from '../support/fixtures.ts';

// The request pipeline every API handler shares (functions/shared/http.ts and auth.ts), exercised
// through real handler modules with hand-built API Gateway events.

const ddb = mockClient(DynamoDBDocumentClient);
const dynamo = mockClient(DynamoDBClient);

const READER = apiKey({ scopes: ['posts:read'], n: 1 });
const WRITER = apiKey({ scopes: ['posts:read', 'posts:write'], n: 2 });
const CHANNELS_ONLY = apiKey({ scopes: ['channels:read'], n: 3 });
const REVOKED = apiKey({ scopes: ['posts:read'], n: 4, revoked: true });
const UNKNOWN = apiKey({ scopes: ['posts:read'], n: 5 });
const POST = post();
const REQUEST_ID = 'req-pipeline-7';

const get = (opts: EventOptions = {}) =>
  getPost(
    apiEvent('getPost', { pathParameters: { id: POST.id }, requestId: REQUEST_ID, ...opts }),
    lambdaContext('getPost'),
  );
const create = (body: string, headers: Record<string, string> = {}) =>
  createPost(
    apiEvent('createPost', {
      body,
      requestId: REQUEST_ID,
      headers: { ...bearer(WRITER), 'content-type': 'application/json', ...headers },
    }),
    lambdaContext('createPost'),
  );

const keyReads = () =>
  ddb.commandCalls(GetCommand).filter((c) => String(c.args[0].input.Key?.pk).startsWith('APIKEY#'));

beforeEach(() => {
  ddb.reset();
  dynamo.reset();
  clearAuthCache();
  serveItems(ddb, [
    ...[READER, WRITER, CHANNELS_ONLY, REVOKED].map(apiKeyItem),
    orgItem(org()),
    channelItem(channel(1)),
    postItem(POST),
  ]);
  serveCounters(ddb);
});

describe('problem+json errors', () => {
  it('answers 401 authentication_required with a full RFC 9457 body when no key is sent', async () => {
    // Act
    const res = await get({ headers: {} });

    // Assert
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toBe('application/problem+json');
    const problem = problemOf(res);
    expect(problem).toEqual({
      // The deployment's own guide: the request's host, without a public or API URL configured.
      type: 'https://api.unit/docs/api/problems/authentication-required',
      title: 'Authentication required',
      status: 401,
      code: 'authentication_required',
      detail: expect.any(String),
      request_id: REQUEST_ID,
    });
    expect(res.headers['x-request-id']).toBe(problem.request_id);
    expect(ddb.calls()).toHaveLength(0);
  });

  it('names the problem type after the code with hyphens', async () => {
    const res = await get({ headers: { authorization: `Bearer ${UNKNOWN.key}` } });
    expect(problemOf(res).type).toBe('https://api.unit/docs/api/problems/invalid-api-key');
  });
});

describe('API-key authentication', () => {
  it('answers 401 invalid_api_key for a well-formed key it does not know, after one lookup', async () => {
    // Act
    const res = await get({ headers: bearer(UNKNOWN) });

    // Assert
    expect(res.statusCode).toBe(401);
    expect(problemOf(res).code).toBe('invalid_api_key');
    expect(keyReads()).toHaveLength(1);
    expect(keyReads()[0]?.args[0].input.Key).toEqual({ pk: `APIKEY#${UNKNOWN.hash}`, sk: 'APIKEY' });
  });

  it.each([
    [
      'a key without the svc_live_ prefix',
      { authorization: 'Bearer sk_test_0123456789abcdefghijklmnopqrstuvwxyz' },
    ],
    ['a too short key', { 'x-api-key': 'svc_live_short' }],
    ['another auth scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
  ])('answers 401 invalid_api_key for %s without touching DynamoDB', async (_what, headers) => {
    // Act
    const res = await get({ headers });

    // Assert
    expect(res.statusCode).toBe(401);
    expect(problemOf(res).code).toBe('invalid_api_key');
    expect(ddb.calls()).toHaveLength(0);
  });

  it('answers 401 invalid_api_key for a revoked key', async () => {
    const res = await get({ headers: bearer(REVOKED) });
    expect(res.statusCode).toBe(401);
    expect(problemOf(res).code).toBe('invalid_api_key');
  });

  it('answers 403 insufficient_scope for a key without the operation scope', async () => {
    // Act
    const res = await get({ headers: bearer(CHANNELS_ONLY) });

    // Assert
    expect(res.statusCode).toBe(403);
    expect(problemOf(res)).toMatchObject({ code: 'insufficient_scope', request_id: REQUEST_ID });
    // The key and its org only: the post is never read.
    expect(ddb.commandCalls(GetCommand).map((c) => c.args[0].input.Key?.sk)).toEqual(['APIKEY', 'ORG']);
  });

  it('does not let a read-only key write', async () => {
    const res = await create('{"variants":[],"draft":true}', bearer(READER));
    expect(res.statusCode).toBe(403);
    expect(problemOf(res).code).toBe('insufficient_scope');
  });

  it.each([
    ['Authorization: Bearer', (key: string) => ({ authorization: `Bearer ${key}` })],
    ['Authorization: bearer (any case)', (key: string) => ({ authorization: `bearer  ${key}` })],
    ['x-api-key', (key: string) => ({ 'x-api-key': key })],
  ])('accepts the key sent as %s', async (_how, headers) => {
    // Act
    const res = await get({ headers: headers(READER.key) });

    // Assert
    expect(res.statusCode).toBe(200);
    expect(jsonOf<{ id: string }>(res).id).toBe(POST.id);
  });
});

describe('request id', () => {
  it('sets X-Request-Id on a success too', async () => {
    // Act
    const res = await get({ headers: bearer(READER) });

    // Assert
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-request-id']).toBe(REQUEST_ID);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('sets X-Request-Id equal to the problem request_id on a 404', async () => {
    const res = await get({ headers: bearer(READER), pathParameters: { id: fixedId('post', 99) } });
    expect(res.statusCode).toBe(404);
    expect(problemOf(res)).toMatchObject({ code: 'resource_not_found', request_id: REQUEST_ID });
    expect(res.headers['x-request-id']).toBe(REQUEST_ID);
  });
});

describe('request bodies', () => {
  it.each([
    ['a body that is not JSON', '{"variants": [', {}],
    ['a JSON array', '[{"draft":true}]', {}],
    ['a JSON string', '"draft"', {}],
    ['JSON null', 'null', {}],
    ['an empty body', '', {}],
    ['a text/plain body', '{"variants":[],"draft":true}', { 'content-type': 'text/plain' }],
    [
      'a non-UTF-8 charset',
      '{"variants":[],"draft":true}',
      { 'content-type': 'application/json; charset=latin1' },
    ],
    ['no content type', '{"variants":[],"draft":true}', { 'content-type': '' }],
  ])('answers 400 invalid_request for %s', async (_what, body, headers) => {
    // Act
    const res = await create(body, headers);

    // Assert
    expect(res.statusCode).toBe(400);
    expect(problemOf(res)).toMatchObject({ code: 'invalid_request', status: 400 });
    expect(res.headers['x-request-id']).toBe(REQUEST_ID);
  });

  it('accepts application/json with charset=utf-8', async () => {
    const res = await create('{"variants":[],"draft":true}', {
      'content-type': 'Application/JSON; charset=utf-8',
    });
    expect(res.statusCode).toBe(201);
  });

  it('answers 413 payload_too_large above 256 KiB and accepts exactly 256 KiB', async () => {
    // Arrange: a JSON body padded with spaces to an exact size.
    const json = '{"variants":[],"draft":true}';
    const atLimit = json.padEnd(MAX_BODY_BYTES, ' ');
    const over = json.padEnd(MAX_BODY_BYTES + 1, ' ');

    // Act
    const ok = await create(atLimit);
    const tooLarge = await create(over);

    // Assert
    expect(MAX_BODY_BYTES).toBe(256 * 1024);
    expect(ok.statusCode).toBe(201);
    expect(tooLarge.statusCode).toBe(413);
    expect(problemOf(tooLarge).code).toBe('payload_too_large');
  });

  it('answers validation_failed with a pointer per unknown field', async () => {
    // Act
    const res = await create(JSON.stringify({ variants: [], draft: true, colour: 'red' }));

    // Assert
    expect(res.statusCode).toBe(400);
    const problem = problemOf(res);
    expect(problem.code).toBe('validation_failed');
    expect(problem.type).toBe('https://api.unit/docs/api/problems/validation-failed');
    expect(problem.errors).toEqual([
      { pointer: '/colour', code: 'unknown_field', message: expect.any(String) },
    ]);
  });

  it('validates query parameters with /query pointers', async () => {
    const res = await get({ headers: bearer(READER), query: { expand: 'all' } });
    expect(res.statusCode).toBe(400);
    expect(problemOf(res).errors).toEqual([
      expect.objectContaining({ pointer: '/query/expand', code: 'unknown_field' }),
    ]);
  });

  it('checks the key before the body: a bad body with no key is 401', async () => {
    const res = await createPost(apiEvent('createPost', { body: '{' }), lambdaContext('createPost'));
    expect(res.statusCode).toBe(401);
  });
});

describe('unexpected failures', () => {
  it('answers 500 internal_error without the internal message or a stack trace', async () => {
    // Arrange
    const secret = 'ECONNRESET while reading table herald-test at /var/task/index.js:42';
    ddb.on(GetCommand).rejects(new Error(secret));

    // Act
    const res = await get({ headers: bearer(READER) });

    // Assert
    expect(res.statusCode).toBe(500);
    expect(res.headers['content-type']).toBe('application/problem+json');
    const problem = problemOf(res);
    expect(problem).toMatchObject({ code: 'internal_error', status: 500, request_id: REQUEST_ID });
    expect(Object.keys(problem).sort()).toEqual(['code', 'detail', 'request_id', 'status', 'title', 'type']);
    expect(res.body).not.toContain('ECONNRESET');
    expect(res.body).not.toContain('herald-test');
    expect(res.body).not.toMatch(/stack|\.js:\d+/);
    expect(res.headers['x-request-id']).toBe(REQUEST_ID);
  });
});
