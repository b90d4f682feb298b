import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { makeSamples } from '../support/media-samples.ts';
import { at, checkPage, connectMastodon, post, type Team, team } from './console-helpers.ts';
import {
  ALL_SCOPES,
  api,
  CREDENTIALS,
  cliOk,
  failPlatform,
  fakeState,
  mcpClient,
  waitForPost,
} from './helpers.ts';

// Posts and Approvals in a real browser, on the local stack and the platforms' contract fakes: with
// approval required, a post an agent creates through MCP waits in Approvals with its key and "via
// MCP"; an admin approves it and it reaches the fake, or rejects it (with a reason) and it never
// does; a failed delivery shows the platform's words; a reschedule into the past and a member's
// acts are refused; a stale second tab's act is refused, saying what changed.

interface Post {
  id: string;
  status: string;
  scheduled_at: string | null;
  deliveries: Array<{
    stage: string;
    error: string | null;
    error_category: string | null;
    url: string | null;
  }>;
}

let browser: Browser;
let t: Team;
let key: string;
let keyId: string;
let channel: string;

// The team is set up by the first test that needs it, not in beforeAll: its invitations poll
// (expect.poll), which vitest allows only inside a test.
let ready: Promise<void> | undefined;
const setUp = () => {
  ready ??= (async () => {
    t = await team(browser, 'Posts');
    const minted = await cliOk(
      'key',
      'mint',
      '--org',
      t.orgId,
      '--scopes',
      ALL_SCOPES,
      '--name',
      'Launch agent',
    );
    key = minted.key as string;
    keyId = minted.id as string;
    channel = await connectMastodon(t.orgId);
    await cliOk('settings', 'set', '--org', t.orgId, '--approval-required', 'on');
  })();
  return ready;
};

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();
const getPost = async (id: string) => (await api<Post>('GET', `/v1/posts/${id}`, { key })).body;
const onFake = async (marker: string) =>
  JSON.stringify((await fakeState('mastodon')).posts ?? []).includes(marker);

/** A post created by an agent through the MCP server, waiting for approval. */
async function agentPost(marker: string, scheduledAt = inSeconds(8)): Promise<string> {
  const client = await mcpClient(key, 'console-posts-agent');
  const res = await client.callTool({
    name: 'create_post',
    arguments: { variants: [{ channel_id: channel, body: marker }], scheduled_at: scheduledAt },
  });
  expect(res.isError).toBeFalsy();
  const created = res.structuredContent as { id: string; status: string };
  expect(created.status).toBe('needs_approval');
  return created.id;
}

/** The version a page of this post would show now (the form's hidden field). */
async function shownOn(page: Page, id: string) {
  await page.goto(at(`/console/posts/${id}`));
  return {
    version: (await page.locator('input[name="version"]').first().getAttribute('value')) ?? '',
    status: (await page.locator('input[name="status"]').first().getAttribute('value')) ?? '',
  };
}

describe('approvals and posts', { timeout: 150_000 }, () => {
  it("shows an MCP-created post in Approvals with its key and 'via MCP'; approved, it publishes to the fake", async () => {
    await setUp();
    const marker = `console-approve-${Date.now()}`;
    const id = await agentPost(marker);
    const { page } = t.admin;

    await page.goto(at('/console/approvals'));
    const row = page.locator('#approvals tbody tr', { hasText: marker });
    const text = (await row.textContent()) ?? '';
    expect(text).toContain('Key “Launch agent”');
    expect(text).toContain(keyId);
    expect(text).toContain('via MCP');
    expect(text).toContain('Mastodon');
    await checkPage(page, 'approvals');
    await t.member.page.goto(at('/console/approvals'));
    await checkPage(t.member.page);

    await row.getByRole('button', { name: /^Approve/ }).click();
    await page.waitForURL((u) => u.pathname === `/console/posts/${id}`);
    expect(await page.locator('.messages').textContent()).toContain('The post is approved');
    // Published at its time, to the fake; the page (polled here) shows the platform's link.
    await expect
      .poll(
        async () => {
          await page.goto(at(`/console/posts/${id}`));
          return page.locator('#outcome .tag').first().textContent();
        },
        { timeout: 60_000, interval: 1_000 },
      )
      .toBe('Published');
    const link = page.locator('#deliveries a[rel="noopener noreferrer"]');
    expect(await link.getAttribute('href')).toBe((await getPost(id)).deliveries[0]?.url);
    expect(await link.getAttribute('href')).toMatch(/^https?:\/\//);
    expect(await page.locator('main').textContent()).toContain(`Approved`);
    expect(await page.locator('main').textContent()).toContain(t.emails.admin);
    expect(await onFake(marker)).toBe(true);
    await checkPage(page, 'post');
    await t.member.page.goto(at(`/console/posts/${id}`));
    await checkPage(t.member.page);
  });

  it('rejects another with a reason: it is a draft, the decision is on the post, and it never reaches the fake', async () => {
    await setUp();
    const marker = `console-reject-${Date.now()}`;
    const id = await agentPost(marker, inSeconds(6));
    const { page } = t.owner;

    await page.goto(at(`/console/approvals`));
    await page
      .locator('#approvals tbody tr', { hasText: marker })
      .getByRole('link', { name: /^Reject/ })
      .click();
    await page.waitForURL((u) => u.pathname === `/console/posts/${id}` && u.search === '?act=reject');
    await checkPage(page, 'post-reject');
    // No reason: refused by its field, nothing changed.
    await page.getByRole('button', { name: 'Reject post' }).click();
    expect(await page.locator('.error-summary').textContent()).toContain('Say why the post is rejected.');
    expect((await getPost(id)).status).toBe('needs_approval');
    await checkPage(page);
    await page.getByLabel('Reason').fill('Off-brand: no launch dates before the press release.');
    await page.getByRole('button', { name: 'Reject post' }).click();
    await page.waitForURL((u) => u.pathname === `/console/posts/${id}`);

    const main = (await page.locator('main').textContent()) ?? '';
    expect(main).toContain('The post is rejected');
    expect(main).toContain('Off-brand: no launch dates before the press release.');
    expect(await page.locator('#outcome .tag').first().textContent()).toBe('Draft');
    // Its time passes: nothing publishes.
    await new Promise((r) => setTimeout(r, 10_000));
    expect(await getPost(id)).toMatchObject({ status: 'draft', scheduled_at: null });
    expect(await onFake(marker)).toBe(false);
    await checkPage(page);
  });

  it("shows a failed delivery's error category in people's words and the platform's on the post", async () => {
    await setUp();
    const marker = `console-fail-${Date.now()}`;
    await failPlatform('mastodon', {
      status: 422,
      pathPattern: '^/api/v1/statuses$',
      bodyIncludes: marker,
      body: { error: 'Validation failed: Text character limit of 500 exceeded' },
    });
    const created = await api<Post>('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: channel, body: marker }], scheduled_at: inSeconds(5) },
    });
    await cliOk('post', 'approve', '--org', t.orgId, '--id', created.body.id);
    const failed = await waitForPost<Post>(key, created.body.id, (p) => p.status === 'failed', 60_000);
    const category = failed.deliveries[0]?.error_category ?? '';
    expect(category).not.toBe('');

    const { page } = t.owner;
    await page.goto(at(`/console/posts/${created.body.id}`));
    const outcome = (await page.locator('#deliveries').textContent()) ?? '';
    // The API's code (user_content) reads as what it means; the platform's own words follow.
    expect(category).toBe('user_content');
    expect(outcome).toContain('The platform refused the text');
    expect(outcome).not.toContain(category);
    expect(outcome).toContain('Text character limit of 500 exceeded');
    expect(await page.locator('#outcome .tag').first().textContent()).toBe('Failed');
    await checkPage(page, 'post-failed');

    // The list, filtered by status and channel, finds it.
    await page.goto(at('/console/posts'));
    await page.getByLabel('Status').selectOption('failed');
    await page.getByLabel('Channel').selectOption(channel);
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL((u) => u.searchParams.get('status') === 'failed');
    expect(await page.locator('#posts').textContent()).toContain(marker);
    expect(await page.locator('#posts').textContent()).not.toContain('console-reject-');
    await checkPage(page, 'posts');
    await t.member.page.goto(at('/console/posts'));
    await checkPage(t.member.page);
  });

  it('refuses a reschedule into the past by its field, nothing changed', async () => {
    await setUp();
    const created = await api<Post>('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: channel, body: `console-past-${Date.now()}` }], draft: true },
    });
    const { page } = t.admin;
    await page.goto(at(`/console/posts/${created.body.id}`));
    await page.getByLabel('New time (UTC)').fill('2020-01-01T09:00');
    await page.getByRole('button', { name: 'Schedule' }).click();

    expect(await page.locator('.error-summary').textContent()).toContain('Choose a time in the future.');
    expect(await page.locator('#post-scheduled-at').getAttribute('aria-invalid')).toBe('true');
    expect(await getPost(created.body.id)).toMatchObject({ status: 'draft', scheduled_at: null });
    await checkPage(page);
  });

  it("answers a member's acts with 403, changing nothing", async () => {
    await setUp();
    const id = await agentPost(`console-member-${Date.now()}`, inSeconds(3600));
    const shown = await shownOn(t.admin.page, id);
    for (const act of ['approve', 'reject', 'reschedule', 'publish', 'delete', 'edit']) {
      const res = await post(t.member.page, `/console/posts/${id}/${act}`, {
        ...shown,
        reason: 'member says no',
        scheduled_at: '2031-01-01T09:00',
        [`variant:${channel}`]: 'member edit',
      });
      expect(res.status(), act).toBe(403);
    }
    expect((await getPost(id)).status).toBe('needs_approval');
    // Nor do they get the forms.
    await t.member.page.goto(at(`/console/posts/${id}`));
    expect(await t.member.page.locator('form[method="post"][action^="/console/posts/"]').count()).toBe(0);
  });

  it("refuses a stale second tab's act, saying what changed; the post is approved once", async () => {
    await setUp();
    const marker = `console-stale-${Date.now()}`;
    const id = await agentPost(marker, inSeconds(3600));
    const first = t.admin.page;
    const second = await t.admin.context.newPage();
    await first.goto(at(`/console/posts/${id}`));
    await second.goto(at(`/console/posts/${id}`));

    await first.getByRole('button', { name: 'Approve' }).click();
    await first.waitForURL((u) => u.searchParams.get('msg') === 'post_approved');
    await second.getByRole('button', { name: 'Approve' }).click();

    const refusal = second.locator('.error-summary');
    expect(await refusal.textContent()).toContain('This post was approved meanwhile. Nothing was done.');
    expect(await second.locator('#outcome .tag').first().textContent()).toBe('Scheduled');
    expect((await getPost(id)).status).toBe('scheduled');
    await checkPage(second);
    await second.close();
  });

  it("edits a waiting post's text through updatePost: too long is refused by its field, a stale tab is refused", async () => {
    await setUp();
    const marker = `console-edit-${Date.now()}`;
    const id = await agentPost(marker, inSeconds(3600));
    const first = t.admin.page;
    await first.goto(at(`/console/posts/${id}`));
    await first.getByRole('link', { name: 'Edit text…' }).click();
    await first.waitForURL((u) => u.pathname === `/console/posts/${id}` && u.search === '?act=edit');
    await checkPage(first, 'post-edit');
    const second = await t.admin.context.newPage();
    await second.goto(at(`/console/posts/${id}?act=edit`));

    // Over Mastodon's 500 characters: refused at its field, as typed, nothing changed.
    const field = first.getByLabel(/^Text for Mastodon/);
    await field.fill(`${marker} ${'x'.repeat(500)}`);
    await first.getByRole('button', { name: 'Save' }).click();
    expect(await first.locator('.error-summary').textContent()).toContain('mastodon allows 500 characters');
    expect(await first.locator('#edit-variant-0').getAttribute('aria-invalid')).toBe('true');
    expect(await first.locator('#edit-variant-0').inputValue()).toContain('x'.repeat(500));
    expect(await api<{ variants: Array<{ body: string }> }>('GET', `/v1/posts/${id}`, { key })).toMatchObject(
      {
        body: { variants: [{ body: marker }] },
      },
    );
    await checkPage(first);

    await first.getByLabel(/^Text for Mastodon/).fill(`${marker} (fixed)`);
    await first.getByLabel('Title (optional)').fill('Launch');
    await first.getByRole('button', { name: 'Save' }).click();
    await first.waitForURL((u) => u.searchParams.get('msg') === 'post_edited');
    expect(await first.locator('.messages').textContent()).toContain('The post is saved with its new text.');
    const edited = (
      await api<{ title: string; status: string; variants: Array<{ body: string }> }>(
        'GET',
        `/v1/posts/${id}`,
        { key },
      )
    ).body;
    expect(edited).toMatchObject({
      title: 'Launch',
      status: 'needs_approval',
      variants: [{ body: `${marker} (fixed)` }],
    });
    const audit = await cliOk('audit', 'list', '--org', t.orgId);
    expect(JSON.stringify(audit)).toContain('post_edited');

    // The second tab still shows the version before: refused, saying so, nothing changed.
    await second.getByLabel(/^Text for Mastodon/).fill(`${marker} (stale)`);
    await second.getByRole('button', { name: 'Save' }).click();
    expect(await second.locator('.error-summary').textContent()).toContain(
      'This post was changed meanwhile. Nothing was done.',
    );
    expect((await getPost(id)).status).toBe('needs_approval');
    expect(
      (await api<{ variants: Array<{ body: string }> }>('GET', `/v1/posts/${id}`, { key })).body.variants[0]
        ?.body,
    ).toBe(`${marker} (fixed)`);
    await checkPage(second);
    await second.close();

    // At phone width the form fits.
    const size = first.viewportSize();
    await first.setViewportSize({ width: 360, height: 740 });
    await first.goto(at(`/console/posts/${id}?act=edit`));
    await checkPage(first);
    if (size) await first.setViewportSize(size);
  });

  it('unpublishes a published post after a confirmation: the fake no longer has it, the page says Removed', async () => {
    await setUp();
    const marker = `console-unpublish-${Date.now()}`;
    const id = await agentPost(marker, inSeconds(6));
    await cliOk('post', 'approve', '--org', t.orgId, '--id', id);
    await waitForPost<Post>(key, id, (p) => p.status === 'published', 60_000);
    expect(await onFake(marker)).toBe(true);
    const { page } = t.admin;

    await cliOk('settings', 'set', '--org', t.orgId, '--dangerous-ops', 'off');
    await page.goto(at(`/console/posts/${id}`));
    expect(await page.getByRole('button', { name: 'Unpublish…' }).isDisabled()).toBe(true);

    await cliOk('settings', 'set', '--org', t.orgId, '--dangerous-ops', 'on');
    await page.goto(at(`/console/posts/${id}`));
    await page.getByRole('link', { name: 'Unpublish…' }).click();
    await page.waitForURL((u) => u.searchParams.get('act') === 'unpublish');
    expect(await page.locator('main').textContent()).toContain('deleted from the platform');
    await checkPage(page);
    await page.getByRole('button', { name: 'Unpublish post' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'post_unpublishing');
    await expect
      .poll(
        async () => {
          await page.goto(at(`/console/posts/${id}`));
          return page.locator('#deliveries .tag').first().textContent();
        },
        { timeout: 40_000, interval: 500 },
      )
      .toBe('Removed');
    expect(await onFake(marker)).toBe(false);
    expect((await getPost(id)).deliveries[0]?.stage).toBe('removed');
    await checkPage(page, 'post-unpublished');
    await cliOk('settings', 'set', '--org', t.orgId, '--dangerous-ops', 'off');
  });

  it("shows each variant's format, its poll and TikTok's post mode", async () => {
    await setUp();
    const connect = async (platform: string) =>
      (
        await cliOk(
          'channel',
          'connect',
          '--org',
          t.orgId,
          '--platform',
          platform,
          '--credentials',
          JSON.stringify(CREDENTIALS[platform]),
        )
      ).id as string;
    const [linkedin, tiktok] = [await connect('linkedin'), await connect('tiktok')];
    const samples = await makeSamples(mkdtempSync(join(tmpdir(), 'herald-console-formats-')));
    try {
      const bytes = readFileSync(samples.files.jpeg.path);
      const ticket = await api<{ asset_id: string; upload_url: string }>('POST', '/v1/media/uploads', {
        key,
        body: { filename: 'p.jpg', content_type: 'image/jpeg', size_bytes: bytes.length },
      });
      await fetch(ticket.body.upload_url, {
        method: 'PUT',
        body: bytes,
        headers: { 'content-type': 'image/jpeg' },
      });
      const photo = (
        await api<{ url: string }>('POST', `/v1/media/uploads/${ticket.body.asset_id}/complete`, { key })
      ).body.url;
      const created = await api<Post>('POST', '/v1/posts', {
        key,
        body: {
          draft: true,
          variants: [
            {
              channel_id: channel,
              body: 'Tabs or spaces?',
              options: { poll: { choices: ['Tabs', 'Spaces'], duration_minutes: 1440 } },
            },
            { channel_id: linkedin, body: 'Our update' },
            {
              channel_id: tiktok,
              body: 'A photo',
              media: [{ url: photo, type: 'image' }],
              options: { post_mode: 'inbox' },
            },
          ],
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);

      const { page } = t.owner;
      await page.goto(at(`/console/posts/${created.body.id}`));
      const panels = page.locator('.panel');
      const mastodon = (await panels.filter({ hasText: 'Tabs or spaces?' }).textContent()) ?? '';
      expect(mastodon).toMatch(/Poll\s*Tabs\s*Spaces\s*Open for 1 day/);
      expect(mastodon).not.toContain('Format');
      expect(await panels.filter({ hasText: 'Our update' }).textContent()).toMatch(/Format\s*Post/);
      expect(await panels.filter({ hasText: 'A photo' }).textContent()).toMatch(
        /Post mode\s*Inbox: sent to the creator to finish in the TikTok app/,
      );
      await checkPage(page, 'post-formats');
    } finally {
      rmSync(samples.dir, { recursive: true, force: true });
    }
  });
});
