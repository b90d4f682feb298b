import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { keys } from '../../functions/adapters/keys.ts';
import {
  type InboxItemRecord,
  type InboxKind,
  type InboxStatus,
  inboxItemId,
} from '../../functions/core/inbox.ts';
import { launchChromium } from '../support/browser.ts';
import { at, checkPage, connectMastodon, post, type Team, team, textOf } from './console-helpers.ts';
import { ALL_SCOPES, api, CREDENTIALS, cliOk, waitForPost } from './helpers.ts';

// The console's Inbox in a real browser, on the local stack: items written straight into the
// stack's table (the shape the poller writes, adapters/inbox.ts inboxItemOf) for a workspace with a
// Mastodon and a Bluesky channel and a Herald post published to Mastodon. The navigation counts the
// unread ones; the list filters by channel, kind and status and keeps itself current; an item shows
// the post it answers and its conversation; marking read and archiving bring the count down; an
// owner's reply is queued (a member sees no reply box, and a member's POST is refused); another
// workspace's item is not found; a plan without the inbox says so; the count stops at "99+".

type Json = Record<string, unknown>;

let browser: Browser;
let t: Team;
let mastodon: string;
let bluesky: string;
let postId: string;
let postExternalId: string;
const seeded: Record<string, InboxItemRecord> = {};

function stackTable() {
  const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as LocalStackInfo;
  const client = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  return { doc: DynamoDBDocumentClient.from(client), name: info.tableName, close: () => client.destroy() };
}

/** The poller's item writer's shape, read from its module (its table name is the stack's). */
async function itemShape() {
  process.env.TABLE_NAME ??= 'herald-e2e';
  return (await import('../../functions/adapters/inbox.ts')).inboxItemOf;
}

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();

function record(o: {
  orgId: string;
  channelId: string;
  platform: 'mastodon' | 'bluesky';
  kind: InboxKind;
  status?: InboxStatus;
  text: string;
  handle: string;
  name?: string;
  platformId: string;
  createdAt: string;
  postId?: string | null;
  inReplyTo?: string | null;
  conversationId?: string | null;
}): InboxItemRecord {
  return {
    id: inboxItemId(o.channelId, o.platformId, o.createdAt),
    org_id: o.orgId,
    channel_id: o.channelId,
    platform: o.platform,
    kind: o.kind,
    status: o.status ?? 'unread',
    text: o.text,
    url: `https://${o.platform}.example/@${o.handle}/${o.platformId}`,
    author: {
      handle: `@${o.handle}`,
      name: o.name ?? null,
      avatar_url: `https://${o.platform}.example/avatars/${o.handle}.png`,
      platform_id: `acct-${o.handle}`,
    },
    post_id: o.postId ?? null,
    in_reply_to: o.inReplyTo ?? null,
    conversation_id: o.conversationId ?? null,
    platform_id: o.platformId,
    created_at: o.createdAt,
    received_at: new Date().toISOString(),
    replies: [],
    ref: null,
    root_id: o.inReplyTo ?? null,
    version: 1,
  };
}

async function seed(records: readonly InboxItemRecord[]) {
  const shape = await itemShape();
  const table = stackTable();
  const ttl = Math.floor(Date.now() / 1000) + 90 * 86_400;
  try {
    for (let i = 0; i < records.length; i += 25)
      await table.doc.send(
        new BatchWriteCommand({
          RequestItems: {
            [table.name]: records.slice(i, i + 25).map((r) => ({ PutRequest: { Item: shape(r, ttl) } })),
          },
        }),
      );
  } finally {
    table.close();
  }
}

async function stored(orgId: string, id: string): Promise<Json | undefined> {
  const table = stackTable();
  try {
    return (
      await table.doc.send(
        new GetCommand({ TableName: table.name, Key: keys.inboxItem(orgId, id), ConsistentRead: true }),
      )
    ).Item as Json | undefined;
  } finally {
    table.close();
  }
}

/** The navigation's Inbox entry's text, as the wide header shows it. */
async function navInbox(page: Page): Promise<string> {
  return textOf(page.locator('nav.nav a', { hasText: 'Inbox' }));
}

let ready: Promise<void> | undefined;
const setUp = () => {
  ready ??= (async () => {
    t = await team(browser, 'Inbox');
    mastodon = await connectMastodon(t.orgId);
    bluesky = (
      await cliOk(
        'channel',
        'connect',
        '--org',
        t.orgId,
        '--platform',
        'bluesky',
        '--credentials',
        JSON.stringify(CREDENTIALS.bluesky),
      )
    ).id as string;
    const key = (await cliOk('key', 'mint', '--org', t.orgId, '--scopes', ALL_SCOPES, '--name', 'Inbox test'))
      .key as string;
    const created = await api<{ id: string }>('POST', '/v1/posts', {
      key,
      body: {
        variants: [{ channel_id: mastodon, body: 'Our spring release is out: faster uploads, a new inbox.' }],
        scheduled_at: new Date(Date.now() + 2_000).toISOString(),
      },
    });
    expect(created.status).toBe(201);
    postId = created.body.id;
    const published = await waitForPost<{
      status: string;
      deliveries: Array<{ external_id: string | null }>;
    }>(key, postId, (p) => p.status === 'published' || p.status === 'failed');
    expect(published.status).toBe('published');
    postExternalId = published.deliveries[0]?.external_id as string;
    const base = { orgId: t.orgId, channelId: mastodon, platform: 'mastodon' as const };
    // Ana's comment is on the fake too (its status answers the post), so a reply to it is accepted there.
    const ana = {
      text: 'Love the new uploads — does the inbox cover Bluesky too?',
      createdAt: minutesAgo(40),
    };
    const onFake = await fetch(`${inject('fakesOrigin')}/__fakes/mastodon/inbox`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'comment',
        text: ana.text,
        parent: postExternalId,
        author: { handle: 'ana@other.example', name: 'Ana Lima' },
        created_at: ana.createdAt,
      }),
    });
    expect(onFake.status).toBe(201);
    const anaId = ((await onFake.json()) as { platform_id: string }).platform_id;
    seeded.comment = record({
      ...base,
      kind: 'comment',
      text: ana.text,
      handle: 'ana@other.example',
      name: 'Ana Lima',
      platformId: anaId,
      createdAt: ana.createdAt,
      postId,
      inReplyTo: postExternalId,
      conversationId: postExternalId,
    });
    seeded.answer = record({
      ...base,
      kind: 'comment',
      text: 'Same question here, and is it on the free plan?',
      handle: 'ben',
      platformId: '900002',
      createdAt: minutesAgo(30),
      postId,
      inReplyTo: anaId,
      conversationId: postExternalId,
    });
    seeded.mention = record({
      ...base,
      kind: 'mention',
      text: 'Trying @herald for our team’s posts this week.',
      handle: 'cleo',
      platformId: '900003',
      createdAt: minutesAgo(20),
    });
    seeded.message = record({
      ...base,
      kind: 'message',
      status: 'read',
      text: 'Hi! Could we talk about a partnership?',
      handle: 'dan',
      platformId: '900004',
      createdAt: minutesAgo(10),
      conversationId: 'conv-dan',
    });
    seeded.sky = record({
      orgId: t.orgId,
      channelId: bluesky,
      platform: 'bluesky',
      kind: 'mention',
      text: 'Spotted the new Herald inbox on Bluesky.',
      handle: 'eve.bsky.social',
      platformId: 'at://did:plc:eve/app.bsky.feed.post/3k',
      createdAt: minutesAgo(5),
    });
    // Another workspace's item: never shown to this one.
    seeded.foreign = record({
      orgId: 'org_01J00000000000000000000000',
      channelId: 'ch_01J00000000000000000000000',
      platform: 'mastodon',
      kind: 'comment',
      text: 'Another workspace’s comment.',
      handle: 'zed',
      platformId: '999999',
      createdAt: minutesAgo(1),
    });
    await seed(Object.values(seeded));
  })();
  return ready;
};

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

const rows = (page: Page) => page.locator('#inbox tbody tr');
const rowTexts = async (page: Page) =>
  (await rows(page).allTextContents()).map((s) => s.replace(/\s+/g, ' '));

describe('the console inbox', { timeout: 180_000 }, () => {
  it('counts the unread items in the navigation and lists them newest first, by channel, kind and status', async () => {
    await setUp();
    const { page } = t.owner;
    await page.goto(at('/console/inbox'));
    // Four unread of this workspace (the message is read; the other workspace's is not counted).
    expect(await navInbox(page)).toBe('Inbox 4 unread');
    const all = await rowTexts(page);
    expect(all).toHaveLength(5);
    expect(all[0]).toContain('Spotted the new Herald inbox');
    expect(all[4]).toContain('Love the new uploads');
    expect(all.join(' ')).not.toContain('Another workspace');
    // Platforms' avatars are another origin: never requested, initials instead.
    const srcs = await page
      .locator('#inbox img')
      .evaluateAll((imgs) => imgs.map((i) => i.getAttribute('src')));
    expect(srcs.every((s) => s?.startsWith('data:image/svg+xml'))).toBe(true);
    await checkPage(page, 'inbox');

    await page.getByLabel('Kind').selectOption('comment');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((u) => u.searchParams.get('kind') === 'comment');
    expect(await rowTexts(page)).toHaveLength(2);

    await page.goto(at(`/console/inbox?channel=${bluesky}`));
    expect(await rowTexts(page)).toEqual([expect.stringContaining('Spotted the new Herald inbox')]);
    expect(await page.getByLabel('Channel').inputValue()).toBe(bluesky);

    await page.goto(at('/console/inbox?status=read'));
    expect(await rowTexts(page)).toEqual([expect.stringContaining('partnership')]);
    await page.goto(at('/console/inbox?kind=comment&status=read'));
    expect(await textOf(page.locator('#inbox-list'))).toBe('No items match these filters.');
  });

  it('shows an item with the post it answers, its conversation and its author', async () => {
    await setUp();
    const { page } = t.owner;
    await page.goto(at('/console/inbox'));
    await rows(page).filter({ hasText: 'Same question here' }).getByRole('link').click();
    await page.waitForURL((u) => u.pathname === `/console/inbox/${seeded.answer?.id}`);
    expect(await textOf(page.getByRole('heading', { level: 1 }))).toBe('Comment from @ben');
    const main = (await page.locator('main').textContent()) ?? '';
    expect(main).toContain('Our spring release is out');
    expect(await page.getByRole('link', { name: /Our spring release/ }).getAttribute('href')).toBe(
      `/console/posts/${postId}`,
    );
    // The conversation: Ana's comment, before this one, linked to its own page.
    const conversation = page.locator('#conversation li');
    expect(await conversation.count()).toBe(2);
    expect(await conversation.nth(0).textContent()).toContain('Love the new uploads');
    expect(await conversation.nth(0).getByRole('link').getAttribute('href')).toBe(
      `/console/inbox/${seeded.comment?.id}`,
    );
    expect(await conversation.nth(1).textContent()).toContain('This item');
    expect(await page.getByAltText('Avatar of @ben').count()).toBe(1);
    const onPlatform = page.getByRole('link', { name: 'See it on Mastodon' }).first();
    expect(await onPlatform.getAttribute('href')).toBe(seeded.answer?.url);
    expect(await onPlatform.getAttribute('rel')).toBe('noopener noreferrer');
    await checkPage(page);
  });

  it('marks an item read and archives another: the count goes down, the statuses are the API’s', async () => {
    await setUp();
    const { page } = t.owner;
    await page.goto(at(`/console/inbox/${seeded.mention?.id}`));
    await page.getByRole('button', { name: 'Mark as read' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'inbox_read');
    expect(await textOf(page.locator('.messages'))).toBe('Marked as read.');
    expect(await navInbox(page)).toBe('Inbox 3 unread');
    expect((await stored(t.orgId, seeded.mention?.id as string))?.status).toBe('read');

    await page.goto(at(`/console/inbox/${seeded.sky?.id}`));
    await page.getByRole('button', { name: 'Archive' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'inbox_archived');
    expect(await navInbox(page)).toBe('Inbox 2 unread');
    expect((await stored(t.orgId, seeded.sky?.id as string))?.status).toBe('archived');
    expect(await page.getByRole('button', { name: 'Move back to the inbox' }).count()).toBe(1);

    await page.goto(at('/console/inbox?status=unread'));
    expect((await rowTexts(page)).join(' ')).not.toContain('Spotted the new Herald inbox');
    await page.goto(at(`/console/inbox/${seeded.mention?.id}`));
    await page.getByRole('button', { name: 'Mark as unread' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'inbox_unread');
    expect(await navInbox(page)).toBe('Inbox 3 unread');
  });

  it('queues an owner’s reply and shows its stage', async () => {
    await setUp();
    const { page } = t.owner;
    await page.goto(at(`/console/inbox/${seeded.comment?.id}`));
    await page
      .getByLabel('Reply to @ana@other.example')
      .fill('Yes: Bluesky mentions and replies land here too.');
    await page.getByRole('button', { name: 'Send reply' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'inbox_reply_queued');
    const replies = page.locator('#replies');
    expect(await textOf(replies)).toContain('Yes: Bluesky mentions and replies land here too.');
    expect(await textOf(replies.locator('.tag'))).toMatch(/^(Queued|Sending|Sent)$/);
    const item = await stored(t.orgId, seeded.comment?.id as string);
    expect((item?.replies ?? []) as Json[]).toHaveLength(1);
    // The reply worker takes it to the platform; the page's live region follows.
    await expect
      .poll(async () => (await replies.locator('.tag').first().textContent())?.trim(), {
        timeout: 60_000,
        interval: 1_000,
      })
      .toBe('Sent');
    // On the fake: a status answering Ana's, naming her first.
    const state = (await (await fetch(`${inject('fakesOrigin')}/__fakes/mastodon/state`)).json()) as Json;
    const sent = JSON.stringify(state);
    expect(sent).toContain('Yes: Bluesky mentions and replies land here too.');
    expect(await replies.getByRole('link', { name: 'See it on Mastodon' }).count()).toBe(1);
    await checkPage(page, 'inbox-item');
  });

  it('queues one reply for a form sent twice', async () => {
    await setUp();
    const { page } = t.admin;
    await page.goto(at(`/console/inbox/${seeded.comment?.id}`));
    const token = (await page.locator('input[name="token"]').getAttribute('value')) ?? '';
    const before = (((await stored(t.orgId, seeded.comment?.id as string))?.replies ?? []) as Json[]).length;
    const form = { body: 'One answer, however often it is sent.', token };
    const [first, second] = [
      await post(page, `/console/inbox/${seeded.comment?.id}/reply`, form),
      await post(page, `/console/inbox/${seeded.comment?.id}/reply`, form),
    ];
    expect([first.status(), second.status()]).toEqual([303, 303]);
    const after = ((await stored(t.orgId, seeded.comment?.id as string))?.replies ?? []) as Json[];
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1)?.id).toBe(token);
  });

  it('refuses an empty reply by its field, sending nothing', async () => {
    await setUp();
    const { page } = t.admin;
    await page.goto(at(`/console/inbox/${seeded.answer?.id}`));
    await page.getByRole('button', { name: 'Send reply' }).click();
    expect(await textOf(page.locator('.error-summary'))).toContain('There is a problem');
    expect(await page.locator('#reply-body').getAttribute('aria-invalid')).toBe('true');
    expect((await stored(t.orgId, seeded.answer?.id as string))?.replies).toEqual([]);
    await checkPage(page);
  });

  it('shows a member, at 390 px wide, no reply box and refuses their reply; they may mark', async () => {
    await setUp();
    const { page } = t.member;
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(at('/console/inbox'));
    await checkPage(page);
    await page.goto(at(`/console/inbox/${seeded.answer?.id}`));
    expect(await page.locator('textarea').count()).toBe(0);
    expect(await page.locator('main').textContent()).toContain('Owners and admins reply.');
    await checkPage(page, 'inbox-phone');

    const token = 'member-token';
    const refused = await post(page, `/console/inbox/${seeded.answer?.id}/reply`, {
      body: 'Member reply',
      token,
    });
    expect(refused.status()).toBe(403);
    expect((await stored(t.orgId, seeded.answer?.id as string))?.replies).toEqual([]);

    await page.getByRole('button', { name: 'Mark as read' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'inbox_read');
    expect((await stored(t.orgId, seeded.answer?.id as string))?.status).toBe('read');
  });

  it('answers 404 for another workspace’s item and an unknown act', async () => {
    await setUp();
    const { page } = t.owner;
    const res = await page.goto(at(`/console/inbox/${seeded.foreign?.id}`));
    expect(res?.status()).toBe(404);
    const marked = await post(page, `/console/inbox/${seeded.foreign?.id}/read`, {});
    expect(marked.status()).toBe(404);
    expect((await stored(seeded.foreign?.org_id as string, seeded.foreign?.id as string))?.status).toBe(
      'unread',
    );
    const unknown = await post(page, `/console/inbox/${seeded.comment?.id}/delete`, {});
    expect(unknown.status()).toBe(404);
  });

  it('refreshes the list by itself when an item arrives', async () => {
    await setUp();
    const { page } = t.owner;
    await page.goto(at('/console/inbox'));
    const fresh = record({
      orgId: t.orgId,
      channelId: mastodon,
      platform: 'mastodon',
      kind: 'mention',
      text: 'A brand new mention, arrived while the page was open.',
      handle: 'fay',
      platformId: '900010',
      createdAt: new Date().toISOString(),
    });
    await seed([fresh]);
    await page.locator('#inbox tbody tr', { hasText: 'A brand new mention' }).waitFor({ timeout: 20_000 });
    seeded.fresh = fresh;
  });

  it('says so where the plan has no inbox', async () => {
    await setUp();
    const { page } = t.owner;
    await cliOk('plan', 'set', '--org', t.orgId, '--plan', 'free');
    try {
      await page.goto(at('/console/inbox'));
      expect(await textOf(page.locator('main .inset'))).toContain('The free plan does not include the inbox');
      expect(await rows(page).count()).toBe(0);
      expect(await navInbox(page)).toBe('Inbox');
      await checkPage(page);
      const res = await page.goto(at(`/console/inbox/${seeded.comment?.id}`));
      expect(res?.status()).toBe(403);
    } finally {
      await cliOk('plan', 'set', '--org', t.orgId, '--plan', 'team');
    }
  });

  it('stops the count at 99+', async () => {
    await setUp();
    const { page } = t.owner;
    const many = Array.from({ length: 100 }, (_, i) =>
      record({
        orgId: t.orgId,
        channelId: bluesky,
        platform: 'bluesky',
        kind: 'mention',
        text: `Mention number ${i}`,
        handle: `fan${i}.bsky.social`,
        platformId: `at://did:plc:fan${i}/app.bsky.feed.post/1`,
        createdAt: minutesAgo(60 + i),
      }),
    );
    await seed(many);
    await page.goto(at('/console/inbox'));
    expect(await navInbox(page)).toBe('Inbox 99+ unread');
  });
});
