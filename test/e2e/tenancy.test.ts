import { Webhook } from 'standardwebhooks';
import { beforeAll, describe, expect, it } from 'vitest';
import { apiOperations, type Operation } from '#lib/operations';
import { MCP_TOOL_NAMES } from '../unit/support/fixtures.ts';
import {
  ALL_SCOPES,
  api,
  CREDENTIALS,
  dangerous,
  inDays,
  mcpClient,
  mint,
  type WebhookReceiver,
  type Workspace,
  webhookReceiver,
  workspace,
} from './helpers.ts';
import { inboxItem, seedInbox } from './inbox-table.ts';

// Tenancy (security review): organization B, with a full-scope key and dangerous operations on,
// tries every API operation against organization A's posts, media and webhook endpoint. Every
// attempt must answer as if A's resources did not exist (404 resource_not_found, or the documented
// validation error for references inside a body), B's lists must never show A's items, and A's
// resources must read back unchanged with A's own key. The cases are a table keyed by operation id
// that must cover `apiOperations` exactly: a new operation without a tenancy case fails this file.

type Json = Record<string, unknown>;
type Resource = 'post' | 'media' | 'webhook' | 'connection' | 'channel' | 'inbox';

/** A 1×1 PNG: the smallest image the media probe accepts. */
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);

async function ok<T = Json>(method: string, path: string, key: string, body?: unknown): Promise<T> {
  const res = await api<T>(method, path, { key, ...(body === undefined ? {} : { body }) });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

// ---- the two workspaces ------------------------------------------------------------------------

interface Tenant {
  ws: Workspace;
  postId: string;
  mediaId: string;
  mediaUrl: string;
  webhookId: string;
  /** A Mastodon connection session of A's, awaiting the person's consent. */
  connectionId: string;
  /** A comment in A's inbox, and a key of A's that reads it. */
  inboxId: string;
  inboxKey: string;
}

let A: Tenant & { secret: string; rx: WebhookReceiver };
let B: Workspace;
let bDraftId: string;
let bInboxId: string;
/** A's resources as A read them before B's attempts. */
let before: Awaited<ReturnType<typeof readA>>;

async function readA() {
  const [post, media, webhooks, channels, usage, inbox] = await Promise.all([
    ok<Json>('GET', `/v1/posts/${A.postId}`, A.ws.key),
    ok<{ data: Json[] }>('GET', '/v1/media', A.ws.key),
    ok<{ data: Json[] }>('GET', '/v1/webhook-endpoints', A.ws.key),
    ok<{ data: Json[] }>('GET', '/v1/channels', A.ws.key),
    ok<{ meters: Array<{ key: string; used: number }> }>('GET', '/v1/usage', A.ws.key),
    ok<Json>('GET', `/v1/inbox/${A.inboxId}`, A.inboxKey),
  ]);
  return {
    post,
    media: media.data.find((m) => m.id === A.mediaId) as Json,
    webhook: webhooks.data.find((w) => w.id === A.webhookId) as Json,
    mediaIds: media.data.map((m) => m.id),
    webhookIds: webhooks.data.map((w) => w.id),
    channels: channels.data,
    inbox,
    // api_requests grows with every read; posts_per_month must not move.
    usage: { posts_per_month: usage.meters.find((m) => m.key === 'posts_per_month')?.used },
  };
}

beforeAll(async () => {
  const [a, b] = await Promise.all([workspace(['bluesky', 'mastodon']), workspace(['bluesky'])]);
  // B's key can do everything, the inbox and AI generation included.
  B = { ...b, key: await mint(b, `${ALL_SCOPES},inbox:read,inbox:write,ai:generate`) };
  await dangerous(B, true);

  // A: a ready image, a scheduled post using it, a webhook endpoint.
  const ticket = await ok<{ asset_id: string; upload_url: string }>('POST', '/v1/media/uploads', a.key, {
    filename: 'a.png',
    content_type: 'image/png',
    size_bytes: PNG.length,
  });
  const put = await fetch(ticket.upload_url, {
    method: 'PUT',
    body: PNG,
    headers: { 'content-type': 'image/png' },
  });
  expect(put.status, await put.text()).toBe(200);
  const media = await ok<{ id: string; url: string; status: string }>(
    'POST',
    `/v1/media/uploads/${ticket.asset_id}/complete`,
    a.key,
  );
  expect(media.status).toBe('ready');
  const rx = await webhookReceiver();
  const [post, endpoint, draft, connection] = await Promise.all([
    ok<{ id: string }>('POST', '/v1/posts', a.key, {
      variants: [
        {
          channel_id: a.channels.bluesky,
          body: 'A only',
          media: [{ url: media.url, type: 'image', alt: 'a' }],
        },
      ],
      scheduled_at: inDays(5),
    }),
    ok<{ id: string; secret: string }>('POST', '/v1/webhook-endpoints', a.key, {
      url: rx.url,
      event_types: ['post.published'],
      description: 'A only',
    }),
    ok<{ id: string }>('POST', '/v1/posts', B.key, {
      variants: [{ channel_id: B.channels.bluesky, body: 'B draft' }],
      draft: true,
    }),
    ok<{ id: string }>('POST', '/v1/channel-connections', a.key, {
      platform: 'mastodon',
      instance: CREDENTIALS.mastodon?.instance,
    }),
  ]);
  bDraftId = draft.id;
  const aInbox = inboxItem(a.orgId, a.channels.bluesky as string);
  const bInbox = inboxItem(B.orgId, B.channels.bluesky as string);
  await seedInbox([aInbox, bInbox]);
  bInboxId = bInbox.id;
  A = {
    ws: a,
    postId: post.id,
    mediaId: media.id,
    mediaUrl: media.url,
    webhookId: endpoint.id,
    connectionId: connection.id,
    inboxId: aInbox.id,
    inboxKey: await mint(a, 'inbox:read'),
    secret: endpoint.secret,
    rx,
  };
  before = await readA();
}, 90_000);

// ---- the cases, one per API operation ----------------------------------------------------------

interface ByIdCase {
  kind: 'byId';
  /** Whose id goes into the path. */
  resource: Resource;
  /** A body valid for the operation, so the only reason to refuse is the foreign id. */
  body?: () => Json;
  /** The MCP tool is called with the same id (and body fields as arguments). */
}
interface ListCase {
  kind: 'list';
  /** A's ids that must not appear in B's list. */
  foreign: () => string[];
  /** B's own ids that must appear (the list works at all). */
  own: () => string[];
}
interface OtherCase {
  kind: 'other';
  /** What B tries; asserts its own outcome. */
  run: () => Promise<void>;
}
type Case = ByIdCase | ListCase | OtherCase;

const idOf = (resource: Resource): string =>
  ({
    post: A.postId,
    media: A.mediaId,
    webhook: A.webhookId,
    connection: A.connectionId,
    channel: A.ws.channels.bluesky as string,
    inbox: A.inboxId,
  })[resource];

const CASES: Record<string, Case> = {
  // Posts
  getPost: { kind: 'byId', resource: 'post' },
  reschedulePost: { kind: 'byId', resource: 'post', body: () => ({ scheduled_at: inDays(9) }) },
  deletePost: { kind: 'byId', resource: 'post' },
  publishPost: { kind: 'byId', resource: 'post' },
  updatePost: {
    kind: 'byId',
    resource: 'post',
    body: () => ({ variants: [{ channel_id: B.channels.bluesky, body: 'x' }] }),
  },
  unpublishPost: { kind: 'byId', resource: 'post' },
  validatePost: {
    kind: 'other',
    run: async () => {
      // A's channel and A's media are unknown to B's check, exactly as to createPost.
      const res = await ok<{ valid: boolean; errors: Json[] }>('POST', '/v1/posts/validate', B.key, {
        variants: [
          { channel_id: A.ws.channels.bluesky, body: 'x' },
          { channel_id: B.channels.bluesky, body: 'x', media: [{ url: A.mediaUrl, type: 'image' }] },
        ],
        draft: true,
      });
      expect(res.valid).toBe(false);
      expect(res.errors).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ pointer: '/variants/0/channel_id', code: 'unknown_channel' }),
          expect.objectContaining({ pointer: '/variants/1/media/0/url', code: 'unknown_media' }),
        ]),
      );
    },
  },
  listPosts: { kind: 'list', foreign: () => [A.postId], own: () => [bDraftId] },
  createPost: {
    kind: 'other',
    run: async () => {
      // A's channel in B's post.
      const channel = await api('POST', '/v1/posts', {
        key: B.key,
        body: { variants: [{ channel_id: A.ws.channels.bluesky, body: 'x' }], draft: true },
      });
      expect(channel.status, channel.text).toBe(400);
      expect(channel.body).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ pointer: '/variants/0/channel_id', code: 'unknown_channel' })],
      });
      // A's media url on B's own channel.
      const media = await api('POST', '/v1/posts', {
        key: B.key,
        body: {
          variants: [
            { channel_id: B.channels.bluesky, body: 'x', media: [{ url: A.mediaUrl, type: 'image' }] },
          ],
          draft: true,
        },
      });
      expect(media.status, media.text).toBe(400);
      expect(media.body).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ pointer: '/variants/0/media/0/url', code: 'unknown_media' })],
      });
    },
  },
  createGeneration: {
    kind: 'other',
    run: async () => {
      // A's channel and A's media are unknown to B's generation, as to createPost; A's inbox item
      // is not found. Nothing is reserved for a refused request.
      const gen = (body: Json) => api<Json>('POST', '/v1/ai/generations', { key: B.key, body });
      const channel = await gen({
        task: 'rewrite',
        text: 'Hello there.',
        channel_ids: [A.ws.channels.bluesky],
      });
      expect(channel.status, channel.text).toBe(400);
      expect(channel.body).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ pointer: '/channel_ids/0', code: 'unknown_channel' })],
      });
      const media = await gen({ task: 'alt_text', media_id: A.mediaId });
      expect(media.status, media.text).toBe(400);
      expect(media.body).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ pointer: '/media_id', code: 'unknown_media' })],
      });
      const item = await gen({ task: 'reply', inbox_item_id: A.inboxId });
      expect(item.status, item.text).toBe(404);
      expect(item.body.code).toBe('resource_not_found');
      const credits = (await ok<{ meters: Json[] }>('GET', '/v1/usage', B.key)).meters.find(
        (m) => m.key === 'ai_credits',
      );
      expect(credits).toMatchObject({ used: 0 });
    },
  },
  // Media
  completeMediaUpload: { kind: 'byId', resource: 'media' },
  listMedia: { kind: 'list', foreign: () => [A.mediaId], own: () => [] },
  getMedia: { kind: 'byId', resource: 'media' },
  deleteMedia: { kind: 'byId', resource: 'media' },
  importMedia: {
    kind: 'other',
    run: async () => {
      // B's import of a public URL (A's asset's) is B's asset: A never sees it.
      const res = await api<{ id: string }>('POST', '/v1/media/imports', {
        key: B.key,
        body: { url: A.mediaUrl },
      });
      expect([201, 202], res.text).toContain(res.status);
      const mine = await ok<{ data: Json[] }>('GET', '/v1/media', B.key);
      expect(mine.data.map((m) => m.id)).toContain(res.body.id);
      const theirs = await ok<{ data: Json[] }>('GET', '/v1/media', A.ws.key);
      expect(theirs.data.map((m) => m.id)).not.toContain(res.body.id);
    },
  },
  createMediaUpload: {
    kind: 'other',
    run: async () => {
      // B's upload lands in B's organization: A never sees it.
      const t = await ok<{ asset_id: string }>('POST', '/v1/media/uploads', B.key, {
        filename: 'b.png',
        content_type: 'image/png',
      });
      const mine = await ok<{ data: Json[] }>('GET', '/v1/media', B.key);
      expect(mine.data.map((m) => m.id)).toContain(t.asset_id);
      const theirs = await ok<{ data: Json[] }>('GET', '/v1/media', A.ws.key);
      expect(theirs.data.map((m) => m.id)).not.toContain(t.asset_id);
    },
  },
  // Channels
  listChannels: {
    kind: 'list',
    foreign: () => Object.values(A.ws.channels),
    own: () => Object.values(B.channels),
  },
  disconnectChannel: { kind: 'byId', resource: 'channel' },
  getChannel: { kind: 'byId', resource: 'channel' },
  getChannelOptions: { kind: 'byId', resource: 'channel' },
  getChannelConnection: { kind: 'byId', resource: 'connection' },
  selectChannelAccount: {
    kind: 'byId',
    resource: 'connection',
    body: () => ({ account_id: '109000000000000001' }),
  },
  createChannelConnection: {
    kind: 'other',
    run: async () => {
      // Reconnecting A's channel from B: the channel is none of B's.
      const res = await api('POST', '/v1/channel-connections', {
        key: B.key,
        body: {
          platform: 'mastodon',
          instance: CREDENTIALS.mastodon?.instance,
          channel_id: A.ws.channels.mastodon,
        },
      });
      expect(res.status, res.text).toBe(400);
      expect(res.body).toMatchObject({
        code: 'validation_failed',
        errors: [expect.objectContaining({ pointer: '/channel_id', code: 'unknown_channel' })],
      });
    },
  },
  // Usage
  getUsage: {
    kind: 'other',
    run: async () => {
      // A's scheduled post counts against A's posts_per_month only; B has only a draft.
      const usage = await ok<{ meters: Array<{ key: string; used: number }> }>('GET', '/v1/usage', B.key);
      expect(usage.meters.find((m) => m.key === 'posts_per_month')?.used).toBe(0);
      expect(before.usage.posts_per_month).toBe(1);
    },
  },
  getAnalytics: {
    kind: 'other',
    run: async () => {
      const a = await ok<{ posts: Record<string, number> }>('GET', '/v1/analytics', B.key);
      expect(a.posts).toMatchObject({ total: 1, draft: 1, scheduled: 0 });
    },
  },
  // Webhooks
  listWebhookEndpoints: { kind: 'list', foreign: () => [A.webhookId], own: () => [] },
  createWebhookEndpoint: {
    kind: 'other',
    run: async () => {
      const created = await ok<{ id: string }>('POST', '/v1/webhook-endpoints', B.key, {
        url: A.rx.url,
        event_types: ['post.failed'],
      });
      const theirs = await ok<{ data: Json[] }>('GET', '/v1/webhook-endpoints', A.ws.key);
      expect(theirs.data.map((w) => w.id)).not.toContain(created.id);
      const mine = await ok<{ data: Json[] }>('GET', '/v1/webhook-endpoints', B.key);
      expect(mine.data.map((w) => w.id)).toEqual([created.id]);
    },
  },
  updateWebhookEndpoint: {
    kind: 'byId',
    resource: 'webhook',
    body: () => ({ enabled: false, description: 'pwned by B', event_types: ['post.failed'] }),
  },
  deleteWebhookEndpoint: { kind: 'byId', resource: 'webhook' },
  testWebhookEndpoint: { kind: 'byId', resource: 'webhook' },
  rotateWebhookSecret: { kind: 'byId', resource: 'webhook' },
  listWebhookDeliveries: { kind: 'byId', resource: 'webhook' },
  // Inbox
  listInbox: { kind: 'list', foreign: () => [A.inboxId], own: () => [bInboxId] },
  getInboxItem: { kind: 'byId', resource: 'inbox' },
  updateInboxItem: { kind: 'byId', resource: 'inbox', body: () => ({ status: 'archived' }) },
  replyToInboxItem: { kind: 'byId', resource: 'inbox', body: () => ({ body: 'Hi' }) },
};

const hasPathParam = (op: Operation) => /\{\w+\}/.test(op.path);
const byIdOps = apiOperations.filter(hasPathParam);
const caseOf = (op: Operation) => CASES[op.id] as Case;
/** The oracle's tool for an operation: the name that, underscores and case aside, is the id. */
const toolName = (id: string): string => {
  const name = MCP_TOOL_NAMES.find((n) => n.replaceAll('_', '') === id.toLowerCase());
  if (!name) throw new Error(`MCP_TOOL_NAMES has no tool for ${id}`);
  return name;
};

describe('tenancy: organization B against organization A', () => {
  it('has a case for every API operation (and no other), by id for every operation with a path parameter', () => {
    expect(Object.keys(CASES).sort()).toEqual(apiOperations.map((op) => op.id).sort());
    for (const op of apiOperations) {
      expect(caseOf(op).kind === 'byId', `${op.id} (${op.path})`).toBe(hasPathParam(op));
    }
    expect(byIdOps.length).toBeGreaterThanOrEqual(10);
  });

  it("answers 404 resource_not_found to every operation on A's ids with B's key", async () => {
    const results = await Promise.all(
      byIdOps.map(async (op) => {
        const c = caseOf(op) as ByIdCase;
        const path = op.path.replace(/\{\w+\}/, idOf(c.resource));
        const res = await api(op.method, path, { key: B.key, ...(c.body ? { body: c.body() } : {}) });
        return { op: op.id, status: res.status, code: res.body.code, text: res.text };
      }),
    );
    for (const r of results) {
      expect({ op: r.op, status: r.status, code: r.code }, r.text).toEqual({
        op: r.op,
        status: 404,
        code: 'resource_not_found',
      });
    }
  });

  it("never shows A's items in B's lists", async () => {
    const lists = apiOperations.filter((op) => caseOf(op).kind === 'list');
    expect(lists.map((op) => op.id).sort()).toEqual(
      ['listChannels', 'listInbox', 'listMedia', 'listPosts', 'listWebhookEndpoints'].sort(),
    );
    for (const op of lists) {
      const c = caseOf(op) as ListCase;
      const res = await api<{ data: Json[] }>(op.method, op.path, { key: B.key });
      expect(res.status, res.text).toBe(200);
      const ids = res.body.data.map((item) => item.id);
      for (const id of c.foreign()) expect(ids, `${op.id} shows A's ${id}`).not.toContain(id);
      for (const id of c.own()) expect(ids, `${op.id} lacks B's ${id}`).toContain(id);
      expect(res.text, op.id).not.toContain(A.ws.orgId);
    }
    // Filters and pages do not widen the scope either.
    const scheduled = await ok<{ data: Json[] }>('GET', '/v1/posts?status=scheduled', B.key);
    expect(scheduled.data).toEqual([]);
  });

  it("refuses references to A's channel and media inside B's bodies, and keeps B's creations in B", async () => {
    for (const op of apiOperations.filter((o) => caseOf(o).kind === 'other')) {
      await (caseOf(op) as OtherCase).run();
    }
  });

  it('answers tool errors resource_not_found over MCP for the same attempts', async () => {
    const client = await mcpClient(B.key, 'herald-e2e-tenancy');
    const visible = new Set((await client.listTools()).tools.map((t) => t.name));
    for (const op of byIdOps) {
      const c = caseOf(op) as ByIdCase;
      const name = toolName(op.id);
      expect(visible, name).toContain(name);
      const res = await client.callTool({ name, arguments: { id: idOf(c.resource), ...c.body?.() } });
      expect(res.isError, name).toBe(true);
      expect((res.structuredContent as Json).code, `${name}: ${JSON.stringify(res.content)}`).toBe(
        'resource_not_found',
      );
    }
    const list = await client.callTool({ name: 'list_posts', arguments: {} });
    const ids = ((list.structuredContent as Json).data as Json[]).map((p) => p.id);
    expect(ids).toContain(bDraftId);
    expect(ids).not.toContain(A.postId);
    const foreign = await client.callTool({
      name: 'create_post',
      arguments: { variants: [{ channel_id: A.ws.channels.bluesky, body: 'x' }], draft: true },
    });
    expect(foreign.isError).toBe(true);
    expect(foreign.structuredContent).toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ code: 'unknown_channel' })],
    });
  });

  it("leaves A's resources exactly as they were (read back with A's key)", async () => {
    const after = await readA();
    expect(after.post).toEqual(before.post);
    expect(after.post).toMatchObject({ status: 'scheduled' });
    expect(after.media).toEqual(before.media);
    expect(after.webhook).toEqual(before.webhook);
    expect(after.webhook).toMatchObject({ enabled: true, description: 'A only', state: 'active' });
    // The inbox poller may poll A's channels meanwhile: when it last did is A's own, not B's doing.
    const unpolled = (list: unknown) =>
      (list as Array<{ inbox?: Record<string, unknown> }>).map((c) => ({
        ...c,
        inbox: { ...c.inbox, last_synced_at: null },
      }));
    expect(unpolled(after.channels)).toEqual(unpolled(before.channels));
    expect(after.inbox).toEqual(before.inbox);
    expect(after.inbox).toMatchObject({ status: 'unread' });
    expect(after.mediaIds).toEqual(before.mediaIds);
    expect(after.webhookIds).toEqual(before.webhookIds);
    expect(after.usage).toEqual(before.usage);
    const session = await ok<Json>('GET', `/v1/channel-connections/${A.connectionId}`, A.ws.key);
    expect(session).toMatchObject({ status: 'awaiting_authorization', channel: null, accounts: null });
    // B's test calls reached nothing of A's.
    expect(A.rx.received).toHaveLength(0);
    expect(
      (await ok<{ data: Json[] }>('GET', `/v1/webhook-endpoints/${A.webhookId}/deliveries`, A.ws.key)).data,
    ).toEqual([]);
    // Not rotated: A's own test event carries one signature, made with the original secret.
    const test = await ok<{ delivered: boolean }>(
      'POST',
      `/v1/webhook-endpoints/${A.webhookId}/test`,
      A.ws.key,
    );
    expect(test.delivered).toBe(true);
    const [msg] = A.rx.received;
    expect(String(msg?.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(
      new Webhook(A.secret).verify(msg?.body ?? '', msg?.headers as Record<string, string>),
    ).toMatchObject({ type: 'webhook.test', data: { endpoint_id: A.webhookId } });
  });
});
