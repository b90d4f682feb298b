import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';

// An API Lambda builds only its own operation's request schemas at load: neither the resource
// schemas (schemas.ts, for the OpenAPI document) nor other operations' request schemas. A stray
// import of schemas.ts or contracts.ts from a runtime path puts ≈ 8 ms back on every cold start.

const registeredIds = () => {
  const ids: string[] = [];
  // `_idmap`: the registry's index by id (what the OpenAPI components are built from).
  for (const id of [
    'Post',
    'Channel',
    'Usage',
    'WebhookEndpoint',
    'CreatePostRequest',
    'ReschedulePostRequest',
  ])
    if (z.globalRegistry._idmap.has(id)) ids.push(id);
  return ids;
};

describe('request schemas are built per operation', () => {
  it('the getPost handler registers no schema at load', async () => {
    await import('#handlers/get-post');
    expect(registeredIds()).toEqual([]);
  });

  it('the createPost handler builds CreatePostRequest and nothing else', async () => {
    await import('#handlers/create-post');
    expect(registeredIds()).toEqual(['CreatePostRequest']);
  });

  it('the contracts (OpenAPI, MCP) build every request schema, the same instances the handlers use', async () => {
    const { contracts } = await import('#core/contracts');
    const { requestSchemas } = await import('#core/requests');
    expect(contracts.createPost.body).toBe(requestSchemas('createPost').body);
    expect(contracts.reschedulePost.body).toBe(requestSchemas('reschedulePost').body);
    expect(registeredIds()).toEqual([
      'Post',
      'Channel',
      'Usage',
      'WebhookEndpoint',
      'CreatePostRequest',
      'ReschedulePostRequest',
    ]);
  });
});
