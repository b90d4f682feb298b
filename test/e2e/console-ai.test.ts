import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { type InboxItemRecord, inboxItemId } from '../../functions/core/inbox.ts';
import { launchChromium } from '../support/browser.ts';
import { at, checkPage, connectMastodon, type Team, team, textOf } from './console-helpers.ts';
import { ALL_SCOPES, api, cliOk } from './helpers.ts';

// The console's AI generation in a real browser, on the local stack (no model configured: the
// rule-based engine answers): "Suggest a reply" on a comment's page fills the owner's reply box
// (nothing is sent) and shows a member, at a phone's width, the suggestion to pass on; the
// overview's AI credits meter is getUsage's, with the credits the suggestions used.

let browser: Browser;
let t: Team;
let itemId: string;

/** One comment on the Mastodon channel, in the poller's item shape (adapters/inbox.ts inboxItemOf). */
async function seedComment(orgId: string, channelId: string): Promise<string> {
  process.env.TABLE_NAME ??= 'herald-e2e';
  const { inboxItemOf } = await import('../../functions/adapters/inbox.ts');
  const info = JSON.parse(readFileSync(join(inject('dataDir'), 'stack.json'), 'utf8')) as LocalStackInfo;
  const client = new DynamoDBClient({
    endpoint: info.dynamodbEndpoint,
    region: 'us-east-1',
    credentials: info.dynamodbCredentials,
  });
  const createdAt = new Date(Date.now() - 60_000).toISOString();
  const record: InboxItemRecord = {
    id: inboxItemId(channelId, '910001', createdAt),
    org_id: orgId,
    channel_id: channelId,
    platform: 'mastodon',
    kind: 'comment',
    status: 'unread',
    text: 'Does the new calendar view work on phones?',
    url: 'https://mastodon.example/@ana/910001',
    author: { handle: '@ana', name: 'Ana Lima', avatar_url: null, platform_id: 'acct-ana' },
    post_id: null,
    in_reply_to: '900000',
    conversation_id: null,
    platform_id: '910001',
    created_at: createdAt,
    received_at: new Date().toISOString(),
    replies: [],
    ref: null,
    root_id: '900000',
    version: 1,
  };
  try {
    await DynamoDBDocumentClient.from(client).send(
      new PutCommand({
        TableName: info.tableName,
        Item: inboxItemOf(record, Math.floor(Date.now() / 1000) + 86_400),
      }),
    );
  } finally {
    client.destroy();
  }
  return record.id;
}

beforeAll(async () => {
  browser = await launchChromium();
  t = await team(browser, 'AI console');
  itemId = await seedComment(t.orgId, await connectMastodon(t.orgId));
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

describe('the console’s AI generation', { timeout: 120_000 }, () => {
  it('suggests a reply into the owner’s reply box, sending nothing', async () => {
    const { page } = t.owner;
    await page.goto(at(`/console/inbox/${itemId}`));
    await page.getByRole('button', { name: 'Suggest a reply' }).click();
    const box = page.getByLabel('Reply to @ana');
    await box.waitFor();
    const suggested = await box.inputValue();
    expect(suggested).toContain('@ana');
    expect(await textOf(page.locator('#suggestion'))).toContain('not by a language model');
    expect(await textOf(page.locator('#replies'))).toBe('No reply yet.');
    await box.fill(`${suggested} Edited.`);
    expect(await box.inputValue()).toContain('Edited.');
    await checkPage(page);
  });

  it('shows a member, at a phone’s width, the suggestion to pass on', async () => {
    const { page } = t.member;
    await page.goto(at(`/console/inbox/${itemId}`));
    await page.getByRole('button', { name: 'Suggest a reply' }).click();
    expect(await textOf(page.locator('#suggestion'))).toContain('@ana');
    expect(await page.locator('textarea').count()).toBe(0);
    await checkPage(page);
  });

  it('shows the AI credits left beside the other meters, as getUsage counts them', async () => {
    const key = (await cliOk('key', 'mint', '--org', t.orgId, '--scopes', ALL_SCOPES, '--name', 'AI test'))
      .key as string;
    const usage = await api<{
      meters: Array<{ key: string; used: number; limit: number; remaining: number }>;
    }>('GET', '/v1/usage', { key });
    const credits = usage.body.meters.find((m) => m.key === 'ai_credits');
    // Two suggestions, each at least a credit; the team plan's 1,000 a month.
    expect(credits).toMatchObject({ limit: 1000 });
    expect(credits?.used).toBeGreaterThanOrEqual(2);
    const { page } = t.owner;
    await page.goto(at('/console'));
    const meter = page.locator('#meter-ai_credits');
    expect(await meter.getAttribute('max')).toBe('1000');
    expect(await meter.getAttribute('value')).toBe(String(credits?.used));
    expect(await page.locator('.meters').textContent()).toContain(`${credits?.remaining} left`);
    await checkPage(page);
  });
});
