import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { InboxItemRecord, InboxReply } from '#core/inbox';
import { ALL_SCOPES, api, baseUrl, dangerous, fakeState, mint, stackInfo, workspace } from './helpers.ts';
import { postsAsked, replyOf, seedItem, statusesWith, table } from './inbox-table.ts';

// replyToInboxItem over HTTP against the local stack and Mastodon's contract fake: the API's
// append, the stream relay's message, the inbox reply worker's one status on the platform; the
// refusals (the limit, the toggle, a platform without replies). A kill -9 of the stack while the
// platform holds its answer to a reply is in the crash tests (durability.test.ts).
// Items are written into the table as the poller writes them (one per comment on the platform).

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const INBOX_SCOPES = `${ALL_SCOPES},inbox:read,inbox:write`;

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs: number,
  log = () => '',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${log().slice(-3000)}`);
    await sleep(200);
  }
}

/** A Mastodon account of its own, connected through OAuth (its grant carries the inbox's scopes). */
async function connectMastodon(key: string, user: string): Promise<string> {
  const created = await api<{ id: string; authorize_url: string }>('POST', '/v1/channel-connections', {
    key,
    body: {
      platform: 'mastodon',
      redirect_uri: 'http://127.0.0.1:9/connected',
      instance: `${inject('fakesOrigin')}/mastodon`,
    },
  });
  expect(created.status, created.text).toBe(201);
  const authorize = new URL(created.body.authorize_url);
  authorize.searchParams.set('fake_user', user);
  const consent = await fetch(authorize, { redirect: 'manual' });
  expect(consent.status, await consent.text()).toBe(302);
  const back = new URL(String(consent.headers.get('location')));
  expect(back.origin).toBe(baseUrl());
  expect((await fetch(back, { redirect: 'manual' })).status).toBe(303);
  const session = await api<{ status: string; channel_id: string }>(
    'GET',
    `/v1/channel-connections/${created.body.id}`,
    { key },
  );
  expect(session.body.status, session.text).toBe('connected');
  return session.body.channel_id;
}

describe('replyToInboxItem (Mastodon)', () => {
  it('answers 202 queued, then the reply is sent once: one status on the platform, in reply to the comment', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const dataDir = inject('dataDir');
    const item = await seedItem(dataDir, {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `When is the next release? ${Date.now()}`,
    });
    const marker = `reply ${Date.now()}`;

    const res = await api<InboxReply>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: `Next week! ${marker}` },
    });
    expect(res.status, res.text).toBe(202);
    expect(res.body).toMatchObject({ text: `Next week! ${marker}`, stage: 'queued', external_id: null });

    const sent = await until(
      'the reply to be sent',
      async () => {
        const r = await replyOf(dataDir, ws.orgId, item.id, res.body.id);
        return r?.stage === 'sent' || r?.stage === 'failed' ? r : undefined;
      },
      30_000,
    );
    const statuses = await statusesWith(marker);
    expect(sent.stage, JSON.stringify(sent.error)).toBe('sent');
    expect(statuses).toHaveLength(1);
    expect(sent.external_id).toBe(statuses[0]?.id);
    expect(statuses[0]?.in_reply_to_id).toBe(item.platform_id);
    expect(await postsAsked(marker)).toBe(1);
    // Settled: nothing more is sent later (a duplicate message would find the reply sent).
    await sleep(1500);
    expect(await statusesWith(marker)).toHaveLength(1);
  });

  it('answers an item the poller read: the comment polled from the platform, the reply under it', async () => {
    const ws = await workspace([]);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const user = `reply${Date.now().toString(36)}`;
    const channelId = await connectMastodon(key, user);
    const seeded = await fetch(`${inject('fakesOrigin')}/__fakes/mastodon/inbox`, {
      method: 'POST',
      body: JSON.stringify({
        to: user,
        kind: 'mention',
        text: `@${user} do you ship to Canada? ${Date.now()}`,
      }),
    });
    expect(seeded.status).toBe(201);
    const platformId = ((await seeded.json()) as { platform_id: string }).platform_id;
    const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as {
      queues: Record<string, { url: string }>;
    };
    const sqs = new SQSClient({
      endpoint: stackInfo().sqsEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'l', secretAccessKey: 'l' },
      useQueueUrlAsEndpoint: false,
    });
    const t = table(inject('dataDir'));
    try {
      // One poll now, as the finder sends it (the finder's own turn may come first: one item all the same).
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: info.queues.inboxPoll?.url,
          MessageBody: JSON.stringify({ org_id: ws.orgId, channel_id: channelId }),
        }),
      );
      const item = await until(
        'the poller to store the mention',
        async () => {
          const res = await t.doc.send(
            new QueryCommand({
              TableName: t.name,
              KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
              ExpressionAttributeValues: { ':pk': `ORG#${ws.orgId}`, ':sk': 'INBOX#' },
              ConsistentRead: true,
            }),
          );
          return (res.Items ?? []).find((i) => i.platform_id === platformId) as InboxItemRecord | undefined;
        },
        45_000,
      );
      const marker = `polled ${Date.now()}`;
      const res = await api<InboxReply>('POST', `/v1/inbox/${item.id}/replies`, {
        key,
        body: { body: `Yes! ${marker}` },
      });
      expect(res.status, res.text).toBe(202);
      const done = await until(
        'the reply to be sent',
        async () => {
          const r = await replyOf(inject('dataDir'), ws.orgId, item.id, res.body.id);
          return r?.stage === 'sent' || r?.stage === 'failed' ? r : undefined;
        },
        30_000,
      );
      expect(done.stage, JSON.stringify(done.error)).toBe('sent');
      const statuses = await statusesWith(marker);
      expect(statuses).toHaveLength(1);
      expect(statuses[0]?.in_reply_to_id).toBe(platformId);
      expect(done.external_id).toBe(statuses[0]?.id);
    } finally {
      t.close();
      sqs.destroy();
      await api('DELETE', `/v1/channels/${channelId}`, { key });
    }
  });

  it('replays a repeated Idempotency-Key: one reply', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const item = await seedItem(inject('dataDir'), {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `Nice! ${Date.now()}`,
    });
    const marker = `once ${Date.now()}`;
    const send = () =>
      api<InboxReply>('POST', `/v1/inbox/${item.id}/replies`, {
        key,
        body: { body: marker },
        headers: { 'idempotency-key': `k-${marker}` },
      });
    const first = await send();
    const again = await send();
    expect(first.status, first.text).toBe(202);
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    await until(
      'the reply on the platform',
      async () => ((await statusesWith(marker)).length ? true : undefined),
      30_000,
    );
    await sleep(1000);
    expect(await statusesWith(marker)).toHaveLength(1);
  });

  it('refuses a text over Mastodon’s 500 characters with 400 at /body, sending nothing', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const item = await seedItem(inject('dataDir'), {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `Long? ${Date.now()}`,
    });
    const marker = `long ${Date.now()} `;
    const res = await api<{ code: string; errors: Array<{ pointer: string; code: string }> }>(
      'POST',
      `/v1/inbox/${item.id}/replies`,
      { key, body: { body: marker + 'x'.repeat(501 - marker.length) } },
    );
    expect(res.status, res.text).toBe(400);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/body', code: 'text_too_long' })]);
    expect(await statusesWith(marker)).toHaveLength(0);
  });

  it('with Dangerous AI operations off answers 403 dangerous_ops_disabled, as publishPost does', async () => {
    const ws = await workspace(['mastodon']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, false);
    const item = await seedItem(inject('dataDir'), {
      orgId: ws.orgId,
      channelId: ws.channels.mastodon as string,
      platform: 'mastodon',
      text: `Toggle ${Date.now()}`,
    });
    const draft = await api<{ id: string }>('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: ws.channels.mastodon, body: 'draft' }], draft: true },
    });
    const publish = await api<{ code: string }>('POST', `/v1/posts/${draft.body.id}/publish`, { key });
    const res = await api<{ code: string }>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: 'Hi' },
    });
    expect(publish.status).toBe(403);
    expect(res.status, res.text).toBe(403);
    expect(res.body.code).toBe(publish.body.code);
    expect(res.body.code).toBe('dangerous_ops_disabled');
  });

  it('refuses a reply to a TikTok item with 409 reply_unsupported, sending nothing', async () => {
    const ws = await workspace(['tiktok']);
    const key = await mint(ws, INBOX_SCOPES);
    await dangerous(ws, true);
    const dataDir = inject('dataDir');
    const item = await seedItem(dataDir, {
      orgId: ws.orgId,
      channelId: ws.channels.tiktok as string,
      platform: 'tiktok',
      text: 'A TikTok comment',
      platformId: `tt-${Date.now()}`,
    });
    const before = (await fakeState('tiktok')).requests.length;
    const res = await api<{ code: string; detail: string }>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: 'Thanks!' },
    });
    expect(res.status, res.text).toBe(409);
    expect(res.body.code).toBe('reply_unsupported');
    const t = table(dataDir);
    try {
      const got = await t.doc.send(
        new GetCommand({ TableName: t.name, Key: keys.inboxItem(ws.orgId, item.id) }),
      );
      expect(got.Item?.replies).toEqual([]);
    } finally {
      t.close();
    }
    expect((await fakeState('tiktok')).requests.length).toBe(before);
  });

  it('answers 404 for another organization’s item', async () => {
    const [mine, theirs] = [await workspace(['mastodon']), await workspace(['mastodon'])];
    const key = await mint(mine, INBOX_SCOPES);
    await dangerous(mine, true);
    const item = await seedItem(inject('dataDir'), {
      orgId: theirs.orgId,
      channelId: theirs.channels.mastodon as string,
      platform: 'mastodon',
      text: `Theirs ${Date.now()}`,
    });
    const res = await api<{ code: string }>('POST', `/v1/inbox/${item.id}/replies`, {
      key,
      body: { body: 'Hi' },
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('resource_not_found');
  });
});
