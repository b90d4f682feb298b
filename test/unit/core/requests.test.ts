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

// One test in a fixed order: each step depends on what the previous imports registered (zod's
// registry is per process), so the steps must not run alone or shuffled.
describe('request schemas are built per operation', () => {
  it('getPost registers none, createPost only its own, the contracts all (the very same instances)', async () => {
    await import('#handlers/get-post');
    expect(registeredIds()).toEqual([]);

    await import('#handlers/create-post');
    expect(registeredIds()).toEqual(['CreatePostRequest']);

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
