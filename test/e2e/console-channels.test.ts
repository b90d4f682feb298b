import type { Browser, Page } from 'playwright-core';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { OAUTH_PLATFORMS } from '#core/connections';
import { FAKE_APPS } from '../fakes/oauth.ts';
import { launchChromium } from '../support/browser.ts';
import { at, checkPage, post, type Team, team, textOf } from './console-helpers.ts';
import { ALL_SCOPES, api, cliOk } from './helpers.ts';

// The Channels page in a real browser against the local stack and the platforms' contract fakes:
// connecting through the fakes' consent pages (the browser leaves the console for the platform's
// site and comes back), Bluesky by app password, several Facebook Pages ending in the account
// choice, a grant revoked at the platform shown as needing reconnecting and reconnected in place,
// a disconnect after its confirmation, a denied consent; an admin may act, a member's every POST is
// refused by the server and changes nothing.

type Json = Record<string, unknown>;
const fakes = () => inject('fakesOrigin');

let browser: Browser;
let t: Team;
let key: string;
const tag = `c${Date.now()}`;

// The team is made inside the first test that needs it (its helpers poll with expect, which only
// runs inside a test), once for the file.
let ready: Promise<void> | undefined;
const setUp = () => {
  ready ??= (async () => {
    // The operator's part, once per deployment: each platform's app (the fakes know these).
    for (const platform of OAUTH_PLATFORMS) {
      const app = FAKE_APPS[platform];
      await cliOk(
        'platform-app',
        'set',
        '--platform',
        platform,
        '--client-id',
        app.clientId,
        '--client-secret',
        app.clientSecret,
      );
    }
    browser = await launchChromium();
    t = await team(browser, 'Channels');
    key = (await cliOk('key', 'mint', '--org', t.orgId, '--scopes', ALL_SCOPES, '--name', 'channels'))
      .key as string;
  })();
  return ready;
};

afterAll(async () => {
  await browser?.close();
});

/** The workspace's channels as the API lists them. */
async function apiChannels(): Promise<Json[]> {
  const res = await api<{ data: Json[] }>('GET', '/v1/channels', { key });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

/** Starts an OAuth connection from the list's form: lands on the session's page, awaiting consent. */
async function startOAuth(page: Page, platform: string) {
  await page.goto(at('/console/channels'));
  await page.getByRole('radio', { name: platform, exact: true }).check();
  await page.getByRole('button', { name: 'Continue to the platform' }).click();
  await page.waitForURL((u) => /^\/console\/channels\/connections\/conn_/.test(u.pathname));
  expect(await textOf(page.getByRole('heading', { level: 1 }))).toBe(`Continue to ${platform}`);
}

/**
 * The person follows the page's link to the platform, where they decide (the fake's consent: `extra`
 * says what they do there), and the platform's page sends them back through Herald's callback to
 * the console: the session's page. As at a real platform, the trip back starts from a page of the
 * platform's own site (another site than the console's), so its first request to the console
 * carries no SameSite=Strict cookie.
 */
async function consentAtPlatform(page: Page, platform: string, extra: Record<string, string>) {
  const link = page.getByRole('link', { name: `Continue to ${platform}` });
  const url = new URL(String(await link.getAttribute('href')));
  expect(url.origin).toBe(new URL(fakes()).origin);
  expect(new URL(at('/')).hostname).not.toBe(url.hostname);
  for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
  // The platform's consent page, then its "Allow" (or "Cancel"): a navigation the platform's page starts.
  await page.goto(`${url.origin}/__fakes/consent-page`);
  await page.evaluate((to) => {
    (globalThis as unknown as { location: { href: string } }).location.href = to;
  }, url.toString());
  // Back from the platform's site: the return page continues to the session's page, signed in.
  await page.waitForURL((u) => /^\/console\/channels\/connections\/conn_/.test(u.pathname));
  await page.getByRole('heading', { level: 1 }).waitFor();
}

const heading = (page: Page) => textOf(page.getByRole('heading', { level: 1 }));
const connectionIdOf = (page: Page) => new URL(page.url()).pathname.split('/').pop() ?? '';

describe('the channels page', { timeout: 240_000 }, () => {
  it('connects LinkedIn and Mastodon through their consent pages, back on the console signed in', async () => {
    await setUp();
    const { page } = t.owner;
    await page.goto(at('/console/channels'));
    await checkPage(page);

    await startOAuth(page, 'LinkedIn');
    await checkPage(page, 'channel-connect');
    const callbacks: string[] = [];
    const seen = (r: { url(): string }) => {
      if (r.url().includes('/oauth/callback/')) callbacks.push(r.url());
    };
    page.on('request', seen);
    await consentAtPlatform(page, 'LinkedIn', { fake_user: `li-${tag}` });
    page.off('request', seen);
    expect(await heading(page)).toBe('LinkedIn is connected');
    await checkPage(page);
    // The platform's callback replayed (the back button): the API's answer, a page that connects nothing.
    expect(callbacks).toHaveLength(1);
    const replay = await page.goto(String(callbacks[0]));
    expect(replay?.status()).toBe(400);
    expect(await textOf(page.locator('h1'))).toBe('Link expired');
    expect((await apiChannels()).filter((c) => c.platform === 'linkedin')).toHaveLength(1);

    await page.goto(at('/console/channels'));
    await page.getByLabel('Mastodon server').fill(`${fakes()}/mastodon`);
    await page.getByRole('button', { name: 'Continue to Mastodon' }).click();
    await page.waitForURL((u) => u.pathname.startsWith('/console/channels/connections/conn_'));
    await consentAtPlatform(page, 'Mastodon', { fake_user: `md-${tag}` });
    expect(await heading(page)).toBe('Mastodon is connected');

    const listed = await apiChannels();
    expect(listed.map((c) => [c.platform, c.status]).sort()).toEqual([
      ['linkedin', 'live'],
      ['mastodon', 'live'],
    ]);
    // The audit log names the owner for both.
    const log = await cliOk('audit', 'list', '--org', t.orgId);
    expect(JSON.stringify(log)).toContain('channel_connected');
  });

  it('shows what each channel can publish, at desktop and phone widths, accessibly', async () => {
    await setUp();
    const { page } = t.owner;
    // LinkedIn and Mastodon, connected by the test above (run alone: connect Mastodon here).
    if (!(await apiChannels()).some((c) => c.platform === 'mastodon')) {
      await page.goto(at('/console/channels'));
      await page.getByLabel('Mastodon server').fill(`${fakes()}/mastodon`);
      await page.getByRole('button', { name: 'Continue to Mastodon' }).click();
      await page.waitForURL((u) => u.pathname.startsWith('/console/channels/connections/conn_'));
      await consentAtPlatform(page, 'Mastodon', { fake_user: `md-${tag}` });
    }
    const listed = await apiChannels();
    const mastodon = listed.find((c) => c.platform === 'mastodon');
    expect(mastodon?.capabilities).toMatchObject({ thread: true, first_comment: true, unpublish: true });
    for (const size of [
      { width: 1280, height: 900 },
      { width: 375, height: 812 },
    ]) {
      await page.setViewportSize(size);
      await page.goto(at('/console/channels'));
      const cell = page.locator(`tr:has(#channel-${String(mastodon?.id)}) td[data-label="Can publish"]`);
      await cell.waitFor();
      expect(await cell.locator('li').allTextContents()).toEqual([
        'Posts',
        'Threads',
        'First comments',
        'Unpublishing',
      ]);
      await checkPage(page);
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('Bluesky by app password (an admin): a wrong one is refused by its field, a good one connects at once', async () => {
    await setUp();
    const { page } = t.admin;
    await page.goto(at('/console/channels'));
    await page.getByLabel('Handle').fill('e2e.bsky.social');
    await page.getByLabel('App password').fill('wrong-password');
    await page.getByLabel('Server (optional)').fill(`${fakes()}/bluesky`);
    await page.getByRole('button', { name: 'Connect Bluesky' }).click();
    await page.locator('.error-summary').waitFor();
    expect(await textOf(page.locator('#bluesky-app-password-error'))).toContain(
      'Bluesky did not accept this handle and app password',
    );
    // The typed password is never sent back; the handle is kept.
    expect(await page.getByLabel('App password').inputValue()).toBe('');
    expect(await page.getByLabel('Handle').inputValue()).toBe('e2e.bsky.social');
    await checkPage(page);
    expect((await apiChannels()).some((c) => c.platform === 'bluesky')).toBe(false);

    await page.getByLabel('App password').fill('app-password');
    await page.getByLabel('Server (optional)').fill(`${fakes()}/bluesky`);
    await page.getByRole('button', { name: 'Connect Bluesky' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'channel_connected');
    expect(await textOf(page.locator('.notice'))).toContain('connected');
    expect((await apiChannels()).find((c) => c.platform === 'bluesky')).toMatchObject({ status: 'live' });
  });

  it('a Facebook grant covering several Pages ends in the account choice', async () => {
    await setUp();
    const { page } = t.owner;
    await startOAuth(page, 'Facebook');
    await consentAtPlatform(page, 'Facebook', {});
    expect(await heading(page)).toBe('Choose the account to connect');
    await checkPage(page, 'channel-select-account');
    // A member sees the choice but gets no form; their POST is refused.
    const id = connectionIdOf(page);
    await t.member.page.goto(at(`/console/channels/connections/${id}`));
    await checkPage(t.member.page);
    expect(await t.member.page.getByRole('button', { name: 'Connect this account' }).count()).toBe(0);
    const refused = await post(t.member.page, `/console/channels/connections/${id}`, {
      account_id: '104857600000002',
    });
    expect(refused.status()).toBe(403);

    await page.getByRole('radio', { name: /Acme Outlet/ }).check();
    await page.getByRole('button', { name: 'Connect this account' }).click();
    await page.waitForURL((u) => u.pathname.endsWith(id));
    expect(await heading(page)).toBe('Facebook is connected');
    const facebook = (await apiChannels()).filter((c) => c.platform === 'facebook');
    expect(facebook).toHaveLength(1);
    expect(facebook[0]).toMatchObject({ status: 'live' });
  });

  it('a consent denied at the platform says so, and connects nothing', async () => {
    await setUp();
    const { page } = t.owner;
    const before = (await apiChannels()).length;
    await startOAuth(page, 'X');
    await consentAtPlatform(page, 'X', { fake_consent: 'deny' });
    expect(await heading(page)).toBe('You did not allow Herald');
    expect(await textOf(page.locator('main'))).toContain('Nothing was connected');
    await checkPage(page);
    expect(await apiChannels()).toHaveLength(before);
  });

  it('a grant revoked at the platform shows as needing reconnecting after the sync, and is reconnected in place', async () => {
    await setUp();
    const { page } = t.owner;
    const user = `rv-${tag}`;
    await startOAuth(page, 'LinkedIn');
    await consentAtPlatform(page, 'LinkedIn', { fake_user: user });
    const linkedin = (await apiChannels()).find(
      (c) => c.platform === 'linkedin' && String(c.handle).includes(user),
    );
    const id = String(linkedin?.id);
    const res = await fetch(`${fakes()}/__fakes/linkedin/revoke`, {
      method: 'POST',
      body: JSON.stringify({ user }),
    });
    expect(res.status).toBe(200);
    await cliOk('channel', 'sync', '--org', t.orgId, '--id', id);

    await page.goto(at('/console/channels'));
    const row = page.locator('tr', { has: page.locator(`#channel-${id}`) });
    expect(await textOf(row.locator('.tag'))).toBe('Needs reconnecting');
    await checkPage(page, 'channel-reauth');
    await t.member.page.goto(at('/console/channels'));
    await checkPage(t.member.page, 'channels-member');
    // A member's reconnect is refused.
    expect((await post(t.member.page, `/console/channels/${id}/reconnect`, {})).status()).toBe(403);

    await row.getByRole('button', { name: /Reconnect/ }).click();
    await page.waitForURL((u) => u.pathname.startsWith('/console/channels/connections/conn_'));
    await consentAtPlatform(page, 'LinkedIn', { fake_user: user });
    expect(await heading(page)).toBe('LinkedIn is connected');
    expect((await apiChannels()).find((c) => c.id === id)).toMatchObject({ status: 'live' });
    const log = JSON.stringify(await cliOk('audit', 'list', '--org', t.orgId));
    expect(log).toContain('channel_reconnected');
  });

  it("disconnects after a confirmation that says what happens to the channel's scheduled posts", async () => {
    await setUp();
    const { page } = t.admin;
    const bluesky = (await apiChannels()).find((c) => c.platform === 'bluesky');
    const id = String(bluesky?.id);
    const scheduled = await api('POST', '/v1/posts', {
      key,
      body: {
        variants: [{ channel_id: id, body: 'later' }],
        scheduled_at: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    expect(scheduled.status, scheduled.text).toBe(201);

    // A member's disconnect is refused by the server; the channel stays live.
    expect((await post(t.member.page, `/console/channels/${id}/disconnect`, {})).status()).toBe(403);
    expect((await post(t.member.page, '/console/channels', { platform: 'linkedin' })).status()).toBe(403);
    expect((await apiChannels()).find((c) => c.id === id)).toMatchObject({ status: 'live' });

    await page.goto(at('/console/channels'));
    await page
      .locator('tr', { has: page.locator(`#channel-${id}`) })
      .getByRole('link', { name: /Disconnect/ })
      .click();
    await page.waitForURL((u) => u.searchParams.get('disconnect') === id);
    expect(await textOf(page.locator('main'))).toContain('1 scheduled post publishes to this channel');
    await checkPage(page, 'channel-disconnect');
    await page.getByRole('button', { name: 'Disconnect channel' }).click();
    await page.waitForURL((u) => u.searchParams.get('msg') === 'channel_disconnected');
    const row = page.locator('tr', { has: page.locator(`#channel-${id}`) });
    expect(await textOf(row.locator('.tag'))).toBe('Disconnected');
    expect((await apiChannels()).find((c) => c.id === id)).toMatchObject({ status: 'disconnected' });
    await checkPage(page, 'channels');
  });
});
