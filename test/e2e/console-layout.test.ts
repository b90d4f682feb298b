import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, personContext } from '../support/browser.ts';
import { at, checkPage, connectMastodon, enroll, post, type Team, team } from './console-helpers.ts';
import { ALL_SCOPES, api, CREDENTIALS, cliOk } from './helpers.ts';

// The console's layout under what people and agents really put in it, at a laptop's width (1280 px)
// and a phone's (375 px): a post's 250-character word (a long URL), the audit log's long passkey
// ids, a key whose creator was removed, a long channel handle. The page never scrolls sideways, a
// table's columns stay in view, the header and navigation leave room for the page, a fresh
// workspace is told where to start, and a signed-in person's 404 keeps their frame.

type Json = Record<string, unknown>;

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 740 };
const LONG_WORD = `https://example.com/${'a1b2c3d4e5'.repeat(23)}`; // 250 characters, no break
const LONG_HANDLE = `a-rather-long-handle-for-the-layout-tests-${Date.now()}.bsky.social`;

/** What an owner can open from every page. */
const SECTIONS = [
  'Overview',
  'Channels',
  'Posts',
  'Approvals',
  'Media',
  'Webhooks',
  'API keys',
  'Members',
  'Settings',
  'Audit log',
  'Your passkeys',
];

let browser: Browser;
let t: Team;
let key: string;
let postId: string;
let removedKeyId: string;

/** How far the page scrolls sideways (0 when it fits). */
const overflow = (page: Page) =>
  page.evaluate(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  ) as Promise<number>;

/** At each width: the page fits, and axe is clean. */
async function fitsAt(page: Page, path: string, shot?: { desktop?: string; phone?: string }) {
  const seen: Record<string, number> = {};
  for (const [name, size] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(size);
    await page.goto(at(path));
    seen[name] = await overflow(page);
  }
  // Said before the assertion, so a failing run reports both widths.
  console.info(`${path}: scrolls sideways by ${JSON.stringify(seen)}`);
  for (const [name, size] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    await page.setViewportSize(size);
    await page.goto(at(path));
    await checkPage(page, shot?.[name]);
  }
  await page.setViewportSize(DESKTOP);
}

beforeAll(async () => {
  browser = await launchChromium();
  t = await team(browser, 'Layout');
  await t.owner.page.setViewportSize(DESKTOP);
  await t.admin.page.setViewportSize(DESKTOP);
  key = (await cliOk('key', 'mint', '--org', t.orgId, '--scopes', ALL_SCOPES, '--name', 'layout'))
    .key as string;
  const mastodon = await connectMastodon(t.orgId);
  await cliOk(
    'channel',
    'connect',
    '--org',
    t.orgId,
    '--platform',
    'bluesky',
    '--credentials',
    JSON.stringify({ ...CREDENTIALS.bluesky, identifier: LONG_HANDLE }),
  );
  const created = await api<{ id: string }>('POST', '/v1/posts', {
    key,
    body: {
      variants: [{ channel_id: mastodon, body: `Read this: ${LONG_WORD} and tell me.` }],
      scheduled_at: new Date(Date.now() + 3 * 3_600_000).toISOString(),
    },
  });
  expect(created.status).toBe(201);
  postId = created.body.id;

  // The admin mints a key in the console, then the owner removes the admin and keeps the key.
  const { page } = t.admin;
  await page.goto(at('/console/keys'));
  await page.getByLabel('Name (optional)').fill('minted by a removed admin');
  await page.getByRole('checkbox', { name: 'posts:read', exact: true }).check();
  await page.getByRole('button', { name: 'Mint key' }).click();
  await page.getByRole('heading', { level: 1, name: 'Your new API key' }).waitFor();
  const keys = (await cliOk('key', 'list', '--org', t.orgId)).data as Json[];
  removedKeyId = keys.find((k) => k.name === 'minted by a removed admin')?.id as string;
  await t.owner.page.goto(at('/console/members'));
  await t.owner.page.getByRole('link', { name: `Remove ${t.emails.admin}` }).click();
  // The owner keeps the admin's key working (the removal page offers to revoke it, ticked).
  await t.owner.page.getByRole('checkbox', { name: 'Revoke this key too' }).uncheck();
  await t.owner.page.getByRole('button', { name: 'Remove member' }).click();
  await t.owner.page.waitForURL((u) => u.pathname === '/console/members');
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

describe('the console’s layout', { timeout: 120_000 }, () => {
  it('wraps a post’s 250-character word instead of widening the page', async () => {
    await fitsAt(t.owner.page, `/console/posts/${postId}`, { phone: 'post-phone' });
  });

  it('keeps the posts’ channel filter within a phone’s width with a long handle', async () => {
    await fitsAt(t.owner.page, '/console/posts');
    expect(await t.owner.page.locator('#filter-channel').textContent()).toContain(LONG_HANDLE);
  });

  it('gives the audit log’s Details room next to long passkey ids, and the table fits its region', async () => {
    const { page } = t.owner;
    await fitsAt(page, '/console/audit');
    await page.goto(at('/console/audit'));
    const m = (await page.evaluate(`(() => {
      const wrap = document.querySelector('.table-wrap');
      const cells = [...document.querySelectorAll('#audit tbody tr')].map((tr) => tr.children[4]);
      return {
        regionOverflow: wrap.scrollWidth - wrap.clientWidth,
        detailsWidth: Math.min(...cells.filter((c) => c.textContent.trim()).map((c) => c.getBoundingClientRect().width)),
        rows: cells.length,
        height: document.documentElement.scrollHeight,
      };
    })()`)) as { regionOverflow: number; detailsWidth: number; rows: number; height: number };
    console.info(`audit at 1280 px: ${JSON.stringify(m)}`);
    expect(m.regionOverflow).toBeLessThanOrEqual(0);
    expect(m.detailsWidth).toBeGreaterThanOrEqual(200);
    // A passkey id is shown shortened, the whole of it in its title.
    const id = page.locator('#audit code[title]').first();
    expect(((await id.getAttribute('title')) ?? '').length).toBeGreaterThan((await id.innerText()).length);
  });

  it('names a removed creator, and keeps the keys table’s Status and Revoke in view', async () => {
    const { page } = t.owner;
    await fitsAt(page, '/console/keys');
    await page.goto(at('/console/keys'));
    const m = (await page.evaluate(`(() => {
      const wrap = document.querySelector('.table-wrap').getBoundingClientRect();
      const revoke = document.querySelector('#keys a[href*="revoke=${removedKeyId}"]').getBoundingClientRect();
      const status = [...document.querySelectorAll('#keys td[data-label="Status"]')].map((c) => c.getBoundingClientRect().right);
      return { wrapRight: wrap.right, revokeRight: revoke.right, statusRight: Math.max(...status) };
    })()`)) as { wrapRight: number; revokeRight: number; statusRight: number };
    console.info(`keys at 1280 px: ${JSON.stringify(m)}`);
    const row = page.getByRole('row', { name: /minted by a removed admin/ });
    expect(await row.textContent()).toContain('by a removed member');
    expect(await row.textContent()).not.toMatch(/by usr_/);
    expect(m.revokeRight).toBeLessThanOrEqual(m.wrapRight);
    expect(m.statusRight).toBeLessThanOrEqual(m.wrapRight);
  });

  it('moves focus to the key just minted', async () => {
    const { page } = t.owner;
    await page.goto(at('/console/keys'));
    await page.getByRole('checkbox', { name: 'posts:read', exact: true }).check();
    await page.getByRole('button', { name: 'Mint key' }).click();
    await page.getByRole('heading', { level: 1, name: 'Your new API key' }).waitFor();
    await expect.poll(() => page.evaluate('document.activeElement?.id')).toBe('minted-key');
  });

  it('puts the navigation in one row at 1280 px, and header and navigation in little room at 375 px', async () => {
    const { page } = t.owner;
    await page.setViewportSize(DESKTOP);
    await page.goto(at('/console'));
    // The navigation's links in one row; every section still a link in view in the header.
    const rows = (await page.evaluate(
      `new Set([...document.querySelectorAll('header nav a')].filter((a) => a.offsetParent).map((a) => Math.round(a.getBoundingClientRect().top))).size`,
    )) as number;
    console.info(`navigation at 1280 px: ${rows} row(s)`);
    const header = page.locator('header');
    const shown = await Promise.all(
      SECTIONS.map((name) => header.getByRole('link', { name, exact: true }).isVisible()),
    );

    const phone = t.member.page; // a phone-width context (375 × 740)
    await phone.goto(at('/console'));
    const height = (await phone.evaluate(
      `document.querySelector('main').getBoundingClientRect().top`,
    )) as number;
    console.info(`header and navigation at 375 px: ${height} px of 740`);
    expect(shown).toEqual(SECTIONS.map(() => true));
    expect(rows).toBe(1);
    expect(height).toBeLessThanOrEqual(160);
    await checkPage(phone, 'nav-phone');
  });

  it('opens the phone’s navigation without script, and the skip link is the first stop', async () => {
    // The member's session in a context that runs no script at all.
    const context = await browser.newContext({
      viewport: PHONE,
      isMobile: true,
      hasTouch: true,
      javaScriptEnabled: false,
      storageState: await t.member.context.storageState(),
    });
    const page = await context.newPage();
    await page.goto(at('/console'));
    const posts = page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Posts' });
    expect(await posts.isVisible()).toBe(false);
    await page.getByText('Menu', { exact: true }).click();
    expect(await posts.isVisible()).toBe(true);
    await posts.click();
    await page.waitForURL((u) => u.pathname === '/console/posts');

    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Skip to main content');
    await context.close();

    // Open, the menu is as accessible as the rest (axe runs only where script does).
    const phone = t.member.page;
    await phone.goto(at('/console'));
    await phone.getByText('Menu', { exact: true }).click();
    await checkPage(phone, 'nav-phone-open');

    // At 1280 px there is nothing to open: the navigation is simply there.
    await t.owner.page.setViewportSize(DESKTOP);
    await t.owner.page.goto(at('/console'));
    expect(
      await t.owner.page
        .getByRole('navigation', { name: 'Console' })
        .getByRole('link', { name: 'Posts' })
        .isVisible(),
    ).toBe(true);
  });

  it('keeps the signed-in frame on a 404, and the workspace’s name on 403 and 409 pages', async () => {
    const { page } = t.owner;
    const res = await page.goto(at('/console/no-such-page'));
    expect(res?.status()).toBe(404);
    expect(await page.locator('.header__person .header__org').allTextContents()).toEqual(['Layout']);
    expect(await page.getByRole('navigation', { name: 'Console' }).count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Back to the console' }).count()).toBe(1);
    await checkPage(page, 'not-found');

    // Signed out, the same address shows the signed-out frame.
    const stranger = await personContext(browser);
    expect((await stranger.page.goto(at('/console/no-such-page')))?.status()).toBe(404);
    expect(await stranger.page.getByRole('link', { name: 'Go to sign-in' }).count()).toBe(1);
    expect(await stranger.page.locator('.header__org').count()).toBe(0);
    await stranger.context.close();

    // A member opening the audit log: 403, in their workspace's frame.
    const member = t.member.page;
    expect((await member.goto(at('/console/audit')))?.status()).toBe(403);
    expect(await member.locator('.header__person .header__org').allTextContents()).toEqual(['Layout']);

    // Revoking a key twice: 409, in the workspace's frame.
    const again = await post(page, `/console/keys/${removedKeyId}/revoke`, {});
    expect(again.status()).toBe(303);
    const twice = await post(page, `/console/keys/${removedKeyId}/revoke`, {});
    expect(twice.status()).toBe(409);
    expect(await twice.text()).toContain('<span class="header__org">Layout</span>');
  });
});

describe('a fresh workspace’s overview', { timeout: 120_000 }, () => {
  it('lists the first steps, ticks each when done, and says the chart has nothing yet', async () => {
    const email = `fresh-${Date.now()}@console.test`;
    const created = await cliOk('org', 'create', '--name', 'Fresh', '--plan', 'team', '--owner-email', email);
    const orgId = (created.org as Json).id as string;
    const owner = await personContext(browser);
    await owner.page.setViewportSize(DESKTOP);
    await enroll(owner.page, (created.enrollment as Json).url as string);
    const { page } = owner;
    const steps = page.locator('#first-steps');
    const text = async () => ((await page.locator('main').textContent()) ?? '').replace(/\s+/g, ' ');
    expect(await text()).not.toContain('every channel is live');
    expect(await text()).toMatch(/nothing (published|delivered) yet/i);
    expect(await steps.locator('li').count()).toBe(3);
    expect(await steps.locator('a[href="/console/channels"]').count()).toBe(1);
    expect(await steps.locator('a[href="/console/keys"]').count()).toBe(1);
    expect(await steps.locator('a[href="/console/members"]').count()).toBe(1);
    expect(await steps.locator('.steps__item--done').count()).toBe(0);
    await checkPage(page, 'overview-fresh');

    // A key is minted: that step is ticked, the others not yet.
    await cliOk('key', 'mint', '--org', orgId, '--scopes', 'posts:read', '--name', 'first');
    await page.reload();
    expect(await steps.locator('.steps__item--done').count()).toBe(1);
    expect(await steps.locator('.steps__item--done').textContent()).toMatch(/key/i);
    await owner.context.close();

    // A workspace with channels, keys and people has no first steps left.
    await t.owner.page.goto(at('/console'));
    expect(await t.owner.page.locator('#first-steps').count()).toBe(0);
  });
});
