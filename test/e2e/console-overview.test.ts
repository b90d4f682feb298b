import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { at, checkPage, connectMastodon, type Team, team } from './console-helpers.ts';
import { ALL_SCOPES, api, cliOk, failPlatform, waitForPost } from './helpers.ts';

// The overview in a real browser: what a workspace's people see in one look is what the API says
// about the same workspace — the 14-day timeline is getAnalytics', the meters getUsage's — and what
// needs a person (a failed post, a post waiting for approval) links to where it is acted on.

interface Analytics {
  posts: Record<string, number>;
  deliveries: { published: number; failed: number };
  timeline: Array<{ date: string; published: number; failed: number }>;
}
interface Usage {
  plan: string;
  meters: Array<{ key: string; used: number; limit: number; remaining: number }>;
}

let browser: Browser;
let t: Team;
let key: string;
let channel: string;
const posts = { ok: '', bad: '', waiting: '' };

beforeAll(async () => {
  browser = await launchChromium();
  t = await team(browser, 'Overview');
  key = (await cliOk('key', 'mint', '--org', t.orgId, '--scopes', ALL_SCOPES, '--name', 'overview'))
    .key as string;
  channel = await connectMastodon(t.orgId);
  await cliOk('settings', 'set', '--org', t.orgId, '--dangerous-ops', 'on');
  // One post published, one failed at the platform, one waiting for approval.
  const ok = await api<{ id: string }>('POST', '/v1/posts', {
    key,
    body: { variants: [{ channel_id: channel, body: 'overview ok' }], publish_now: true },
  });
  posts.ok = ok.body.id;
  await failPlatform('mastodon', {
    status: 422,
    pathPattern: '^/api/v1/statuses$',
    bodyIncludes: 'overview-bad',
    body: { error: 'Validation failed: Text character limit of 500 exceeded' },
  });
  const bad = await api<{ id: string }>('POST', '/v1/posts', {
    key,
    body: { variants: [{ channel_id: channel, body: 'overview-bad' }], publish_now: true },
  });
  posts.bad = bad.body.id;
  await waitForPost(key, posts.ok, (p) => p.status === 'published');
  await waitForPost(key, posts.bad, (p) => p.status === 'failed');
  await cliOk('settings', 'set', '--org', t.orgId, '--approval-required', 'on');
  const waiting = await api<{ id: string; status: string }>('POST', '/v1/posts', {
    key,
    body: { variants: [{ channel_id: channel, body: 'overview waits' }], scheduled_at: inHours(3) },
  });
  expect(waiting.body.status).toBe('needs_approval');
  posts.waiting = waiting.body.id;
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();

describe('the overview', { timeout: 120_000 }, () => {
  it('shows the same timeline as getAnalytics and the same meters as getUsage, and what needs a person', async () => {
    // The stream-kept counters settle shortly after the outcomes.
    let analytics: Analytics | undefined;
    const deadline = Date.now() + 40_000;
    while (Date.now() < deadline) {
      analytics = (await api<Analytics>('GET', '/v1/analytics', { key })).body;
      if (analytics.deliveries.published === 1 && analytics.deliveries.failed === 1) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Last, so its api_requests is the month's count the console shows (the console is not metered).
    const usage = (await api<Usage>('GET', '/v1/usage', { key })).body;

    const { page } = t.owner;
    await page.goto(at('/console'));
    // The numbers per day, as the page's table says them.
    const rows = await page
      .locator('#timeline tbody tr')
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').trim())),
      );
    expect(rows).toEqual(
      (analytics?.timeline ?? []).map((d) => [d.date, String(d.published), String(d.failed)]),
    );
    expect(rows.at(-1)).toEqual([new Date().toISOString().slice(0, 10), '1', '1']);
    for (const m of usage.meters) {
      const meter = page.locator(`#meter-${m.key}`);
      expect(await meter.getAttribute('max')).toBe(String(m.limit));
      expect(await meter.getAttribute('value')).toBe(String(Math.min(m.used, m.limit)));
      expect(await page.locator('.meters').textContent()).toContain(
        `${m.used.toLocaleString('en-GB')} of ${m.limit.toLocaleString('en-GB')} used, ${m.remaining.toLocaleString('en-GB')} left`,
      );
    }
    expect(await page.locator('.lead .tag').textContent()).toBe(`${usage.plan} plan`);

    // Needs a person: the failed post with the platform's words, the post waiting for approval.
    const needs = page.locator('#needs');
    expect(await needs.textContent()).toContain('Text character limit of 500 exceeded');
    expect(await needs.locator(`a[href="/console/posts/${posts.bad}"]`).count()).toBe(1);
    expect(await needs.textContent()).toContain('1 post waits for approval');
    expect(await needs.locator(`a[href="/console/posts/${posts.waiting}"]`).count()).toBe(1);
    await checkPage(page, 'overview');
    await t.member.page.goto(at('/console'));
    await checkPage(t.member.page, 'overview-phone');
  });

  it('refreshes what needs a person without a reload (htmx), and sends a signed-out page to sign-in', async () => {
    const { page } = t.admin;
    await page.goto(at('/console'));
    expect(await page.locator('#needs').textContent()).not.toContain('waits for approval: review them');
    // A second post waits: the region says so within its refresh period, the page never reloaded.
    await page.evaluate('window.__marker = 1');
    await api('POST', '/v1/posts', {
      key,
      body: { variants: [{ channel_id: channel, body: 'overview waits too' }], scheduled_at: inHours(4) },
    });
    await expect
      .poll(async () => page.locator('#needs').textContent(), { timeout: 20_000, interval: 500 })
      .toContain('2 posts wait for approval');
    expect(await page.evaluate('window.__marker')).toBe(1);

    // The session ends (sign-out elsewhere is the same server-side end): the next refresh takes the
    // whole page to sign-in, instead of swapping the sign-in page into the region.
    await page.context().clearCookies();
    await page.waitForURL((u) => u.pathname === '/console/sign-in', { timeout: 20_000 });
  });

  it('is refused to another organization: its people see their own workspace only', async () => {
    const other = await team(browser, 'Overview other');
    await other.owner.page.goto(at('/console'));
    const text = (await other.owner.page.locator('main').textContent()) ?? '';
    expect(text).toContain('Nothing needs you right now');
    expect(text).not.toContain('overview-bad');
    await other.owner.context.close();
    await other.admin.context.close();
    await other.member.context.close();
  });
});
