import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { api, cliOk, dangerous, failPlatform, waitForPost, workspace } from './helpers.ts';

// The operator's views on the local stack: `herald posts stuck` finds a post the way a delivery
// worker that died mid-send leaves it (written into the table directly: claimed, lease run out,
// the watchdog not due yet), `herald post get` shows its deliveries' claim, and `herald channels
// failing` lists a channel the platform's 401 made reauth_required.

type Json = Record<string, unknown>;
interface Post {
  id: string;
  status: string;
  deliveries: Array<{ channel_id: string; stage: string; error_category: string | null }>;
}

/** The table of the e2e stack, for writing what a crashed worker leaves. */
function table() {
  const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as LocalStackInfo;
  const client = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  return { doc: DynamoDBDocumentClient.from(client), name: info.tableName, close: () => client.destroy() };
}

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

describe('herald posts stuck, post get, channels failing', () => {
  it('lists a post whose worker died mid-send, and shows its claim; not under a longer threshold', async () => {
    // Arrange: a draft, then rewritten as a dispatched post whose delivery's claim ran out 2
    // minutes ago (its worker died) — the watchdog looks at it only in 3 minutes.
    const ws = await workspace(['bluesky']);
    const channelId = ws.channels.bluesky as string;
    const draft = await api<Post>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: channelId, body: `stuck ${Date.now()}` }], draft: true },
    });
    expect(draft.status).toBe(201);
    const t = table();
    const key = { pk: `ORG#${ws.orgId}`, sk: `POST#${draft.body.id}` };
    const item = (await t.doc.send(new GetCommand({ TableName: t.name, Key: key, ConsistentRead: true })))
      .Item as Json;
    const scheduledAt = ago(4 * 60_000);
    await t.doc.send(
      new PutCommand({
        TableName: t.name,
        Item: {
          ...item,
          status: 'publishing',
          scheduled_at: scheduledAt,
          round: 1,
          version: (item.version as number) + 1,
          dispatched: { for: scheduledAt, at: scheduledAt, round: 1 },
          deliveries: {
            [channelId]: {
              channel_id: channelId,
              stage: 'sending',
              external_id: null,
              url: null,
              error: null,
              error_category: null,
              attempts: 1,
              updated_at: ago(210_000),
              round: 1,
              claim_id: 'crashed-worker',
              attempt_started_at: ago(210_000),
              lease_until: ago(120_000),
              rev: 'e2e',
            },
          },
          watch_at: new Date(Date.now() + 180_000).toISOString(),
          watch_entry: scheduledAt,
          gsi1pk: `ORG#${ws.orgId}#POSTS#publishing`,
          gsi2pk: `DUE#${scheduledAt.slice(0, 16)}`,
          gsi2sk: `${scheduledAt}#${ws.orgId}#${draft.body.id}`,
        },
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: { ':v': item.version },
      }),
    );
    t.close();

    // Act
    const now = await cliOk('posts', 'stuck', '--older-than', '0m', '--lookback', '1h');
    const minute = await cliOk('posts', 'stuck', '--older-than', '1m', '--lookback', '1h');
    const longer = await cliOk('posts', 'stuck', '--older-than', '10m', '--lookback', '1h');
    const shown = await cliOk('post', 'get', '--org', ws.orgId, '--id', draft.body.id);

    // Assert
    const ours = (r: Json) => (r.stuck as Json[]).filter((f) => f.post_id === draft.body.id);
    const expected = {
      org_id: ws.orgId,
      post_id: draft.body.id,
      status: 'publishing',
      channel_id: channelId,
      stage: 'sending',
      why: 'lease_expired',
      attempts: 1,
    };
    expect(ours(now)).toEqual([expect.objectContaining(expected)]);
    expect(ours(minute)).toEqual([expect.objectContaining(expected)]);
    expect(ours(longer)).toEqual([]);
    expect(minute).toMatchObject({ older_than_seconds: 60, lookback_seconds: 3600, buckets_read: 61 });
    expect(shown).toMatchObject({
      org_id: ws.orgId,
      post: { id: draft.body.id, status: 'publishing', scheduled_at: scheduledAt },
      deliveries: [
        {
          channel_id: channelId,
          platform: 'bluesky',
          stage: 'sending',
          attempts: 1,
          claim: { id: 'crashed-worker', expired: true },
        },
      ],
    });
  });

  it('lists a channel a 401 made reauth_required, with its last error; post get shows the failed delivery', async () => {
    // Arrange: as delivery.test.ts — a revoked token fails the delivery and flags the channel.
    const ws = await workspace(['linkedin']);
    await dangerous(ws, true);
    const marker = `inspect-auth-${Date.now()}`;
    await failPlatform('linkedin', {
      status: 401,
      pathPattern: '^/rest/posts$',
      bodyIncludes: marker,
      times: 2,
      body: {
        status: 401,
        serviceErrorCode: 65601,
        code: 'REVOKED_ACCESS_TOKEN',
        message: 'The token used in the request has been revoked by the user',
      },
    });
    const created = await api<Post>('POST', '/v1/posts', {
      key: ws.key,
      body: { variants: [{ channel_id: ws.channels.linkedin, body: marker }], publish_now: true },
    });
    expect(created.status).toBe(201);
    await waitForPost<Post>(ws.key, created.body.id, (p) => p.status === 'failed');

    // Act
    const failing = await cliOk('channels', 'failing');
    const shown = await cliOk('post', 'get', '--org', ws.orgId, '--id', created.body.id);

    // Assert
    const ours = (failing.channels as Json[]).filter((c) => c.org_id === ws.orgId);
    expect(ours).toEqual([
      expect.objectContaining({
        channel_id: ws.channels.linkedin,
        platform: 'linkedin',
        status: 'reauth_required',
        why: 'reauth_required',
        last_error: expect.any(String),
      }),
    ]);
    expect(shown).toMatchObject({
      post: { status: 'failed' },
      deliveries: [
        {
          channel_id: ws.channels.linkedin,
          platform: 'linkedin',
          stage: 'failed',
          error_category: 'auth_expired',
        },
      ],
    });
    expect((shown.deliveries as Json[])[0]?.attempts).toBeGreaterThanOrEqual(1);
  });
});
