import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { at, checkPage, connectMastodon, post, type Team, team, textOf } from './console-helpers.ts';
import { type WebhookReceiver, webhookReceiver } from './helpers.ts';

// The webhooks page in a real browser, on the local stack with real receivers on loopback
// (allow-listed) and the failure ladder under HERALD_TIME_SCALE (72 h ≈ 26 s): an owner adds an
// endpoint and sees its secret once — the secret the receiver's signatures verify with —, a URL into
// private address space is refused by its field, a test event and a rotation from the console, a
// change from a stale page refused (the server's version check wins), an endpoint driven into
// auto-disable by a failing receiver shown as such with its failed deliveries and re-enabled from
// the console, after which it receives again; a member sees it all, at a phone's width, and every
// act of theirs is a 403 that changes nothing.

let browser: Browser;
let t: Team;
let healthy: WebhookReceiver;
let failing: WebhookReceiver;
const ids = { healthy: '', failing: '' };
const secrets: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
  healthy = await webhookReceiver(200);
  failing = await webhookReceiver(500);
});

afterAll(async () => {
  await browser?.close();
});

/** Connects the fake's Mastodon account: a channel.connected event to every subscribed endpoint. */
const connectChannel = () => connectMastodon(t.orgId);

/** Adds an endpoint through the form; lands on the page showing its secret. */
async function addEndpoint(page: Page, url: string, events: string[], description = '') {
  await page.goto(at('/console/webhooks'));
  await page.getByLabel('URL', { exact: true }).fill(url);
  if (description) await page.getByLabel('Description (optional)').fill(description);
  for (const e of events) await page.getByRole('checkbox', { name: e, exact: true }).check();
  await page.getByRole('button', { name: 'Add endpoint' }).click();
}

/** The receiver got a request this secret signs (Standard Webhooks: any of the signatures). */
function verifies(secret: string, r: { headers: Record<string, unknown>; body: string }) {
  try {
    new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

async function until<T>(probe: () => Promise<T | undefined | false>, timeoutMs = 60_000, everyMs = 500) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const idFromUrl = (page: Page) => new URL(page.url()).pathname.split('/').at(-1) ?? '';

describe('the webhooks page', { timeout: 120_000 }, () => {
  // In a test rather than beforeAll: the invitations wait with expect.poll, which needs a test.
  it('starts with a workspace: an owner, an admin and a member, each signed in', async () => {
    t = await team(browser, 'Webhooks');
  }, 180_000);

  it('an owner adds an endpoint and sees its signing secret once', async () => {
    const { page } = t.owner;
    await addEndpoint(page, healthy.url, ['post.published', 'post.failed'], 'CRM sync');

    expect(await textOf(page.getByRole('heading', { level: 1 }))).toBe('Endpoint added');
    const secret = await page.locator('#webhook-secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    secrets.push(secret);
    await checkPage(page, 'webhook-created');

    await page.getByRole('link', { name: 'Go to the endpoint' }).click();
    ids.healthy = idFromUrl(page);
    expect(ids.healthy).toMatch(/^whe_/);
    expect(await page.content()).not.toContain(secret);
  });

  it('refuses a URL into private address space by its field, storing nothing', async () => {
    const { page } = t.owner;
    await addEndpoint(page, 'http://10.0.0.1/hook', ['post.failed']);

    const summary = page.locator('.error-summary');
    expect(await textOf(summary)).toContain('The URL names or resolves to an address webhooks may not reach');
    expect(await page.getByLabel('URL', { exact: true }).inputValue()).toBe('http://10.0.0.1/hook');
    expect(await page.getByRole('checkbox', { name: 'post.failed', exact: true }).isChecked()).toBe(true);
    await checkPage(page);
    expect(await page.locator('#webhook-endpoints tbody tr').count()).toBe(1);
  });

  it('sends a test event, signed with the secret shown, and shows it in the delivery log', async () => {
    const { page } = t.owner;
    await page.goto(at(`/console/webhooks/${ids.healthy}`));
    await page.getByRole('button', { name: 'Send a test event' }).click();

    expect(await textOf(page.locator('.notice'))).toContain('The test event was delivered');
    const row = page.locator('#webhook-deliveries tbody tr').first();
    expect(await textOf(row)).toContain('webhook.test');
    expect(await textOf(row)).toContain('Delivered');
    const [received] = healthy.ofType('webhook.test');
    expect(received && verifies(secrets[0] ?? '', received)).toBe(true);
    await checkPage(page, 'webhook');
  });

  it('rotates the secret after asking: the new one is shown once, and both sign for the overlap', async () => {
    const { page } = t.owner;
    await page.goto(at(`/console/webhooks/${ids.healthy}`));
    await page.getByRole('link', { name: 'Rotate signing secret' }).click();
    expect(await textOf(page.getByRole('heading', { level: 1 }))).toContain('Rotate the signing secret of');
    await checkPage(page);
    await page.getByRole('button', { name: 'Rotate secret' }).click();

    expect(await textOf(page.getByRole('heading', { level: 1 }))).toBe('New signing secret');
    const secret = await page.locator('#webhook-secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(secrets[0]);
    secrets.push(secret);
    await checkPage(page, 'webhook-rotated');

    await page.goto(at(`/console/webhooks/${ids.healthy}`));
    expect(await page.content()).not.toContain(secret);
    await page.getByRole('button', { name: 'Send a test event' }).click();
    await textOf(page.locator('.notice'));
    const tests = healthy.ofType('webhook.test');
    const last = tests.at(-1);
    expect(tests).toHaveLength(2);
    expect(last && verifies(secret, last)).toBe(true);
    expect(last && verifies(secrets[0] ?? '', last)).toBe(true);
  });

  it('saves a change from a current page, and refuses one from a stale page saying so', async () => {
    const stale = t.owner.page;
    const current = t.admin.page;
    await stale.goto(at(`/console/webhooks/${ids.healthy}`));
    await current.goto(at(`/console/webhooks/${ids.healthy}`));
    await current.getByLabel('Description (optional)').fill('CRM sync (EU)');
    await current.getByRole('button', { name: 'Save changes' }).click();
    expect(await textOf(current.locator('.notice'))).toContain('The endpoint is saved');

    await stale.getByLabel('Description (optional)').fill('Something else');
    await stale.getByRole('button', { name: 'Save changes' }).click();
    expect(await textOf(stale.locator('.notice'))).toContain(
      'This endpoint changed after you opened the page, so nothing was saved.',
    );
    expect(await stale.getByLabel('Description (optional)').inputValue()).toBe('CRM sync (EU)');
    await checkPage(stale);
  });

  it('shows an endpoint the failure ladder turned off, with its failed deliveries, and re-enables it', async () => {
    const { page } = t.admin;
    await addEndpoint(page, failing.url, ['channel.connected'], 'Failing receiver');
    await page.getByRole('link', { name: 'Go to the endpoint' }).click();
    ids.failing = idFromUrl(page);
    await connectChannel();

    // 8 attempts (≈ 11 s scaled), then the ladder's 72 h (≈ 26 s): the page says so on a reload.
    await until(
      async () => {
        await page.goto(at(`/console/webhooks/${ids.failing}`));
        return (await page.locator('#endpoint').textContent())?.includes('Auto-disabled');
      },
      80_000,
      1000,
    );
    const state = await textOf(page.locator('#endpoint dl'));
    expect(state).toContain('Turned off by the failure ladder at');
    expect(state).toContain('8 failed attempts in a row, the last answered HTTP 500');
    const row = page.locator('#webhook-deliveries tbody tr').first();
    expect(await textOf(row)).toContain('channel.connected');
    expect(await textOf(row.locator('td').nth(0))).toBe('Failed');
    expect(await textOf(row.locator('td').nth(1))).toBe('8');
    await checkPage(page, 'webhook-disabled');
    await page.goto(at('/console/webhooks'));
    expect(await textOf(page.locator('#webhook-endpoints'))).toContain('Auto-disabled');
    await checkPage(page, 'webhooks');

    failing.status = 200;
    await page.goto(at(`/console/webhooks/${ids.failing}`));
    await page.getByRole('button', { name: 'Re-enable endpoint' }).click();
    expect(await textOf(page.locator('.notice'))).toContain('The endpoint is on again');
    expect(await textOf(page.locator('#endpoint dl'))).toContain('Active');

    const before = failing.ofType('channel.connected').length;
    await connectChannel();
    await until(async () => failing.ofType('channel.connected').length > before, 30_000, 200);
    // The live region picks up the delivery without a reload.
    await until(
      async () =>
        (await page.locator('#webhook-deliveries tbody tr').first().textContent())?.includes('Delivered'),
      30_000,
    );
    await checkPage(page);
  });

  it('shows a member everything but no secret and no form, at a phone’s width, and refuses their acts', async () => {
    const { page } = t.member;
    await page.goto(at('/console/webhooks'));
    // The receiver's host only: its path and query may be its credential.
    const listed = await textOf(page.locator('#webhook-endpoints'));
    expect(listed).toContain(`${new URL(healthy.url).origin}/…`);
    expect(listed).not.toContain(healthy.url);
    expect(await page.locator('form[action="/console/webhooks"]').count()).toBe(0);
    await checkPage(page, 'webhooks-phone');
    await page.goto(at(`/console/webhooks/${ids.healthy}`));
    expect(await page.locator(`form[action$="/edit"]`).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Send a test event' }).count()).toBe(0);
    const html = await page.content();
    for (const s of secrets) expect(html).not.toContain(s);
    await checkPage(page);

    const received = healthy.received.length;
    const attempts: Array<[string, Record<string, string>]> = [
      ['/console/webhooks', { url: healthy.url, event_types: 'post.failed' }],
      ...(['test', 'rotate', 'delete'] as const).map((a): [string, Record<string, string>] => [
        `/console/webhooks/${ids.healthy}/${a}`,
        {},
      ]),
      [
        `/console/webhooks/${ids.healthy}/edit`,
        { url: 'https://example.com/', event_types: 'post.failed', version: '1' },
      ],
      [`/console/webhooks/${ids.failing}/enable`, { version: '1' }],
    ];
    for (const [path, form] of attempts) {
      const res = await post(page, path, form);
      expect(res.status(), path).toBe(403);
      expect(await res.text()).not.toContain('whsec_');
    }
    const confirm = await page.goto(at(`/console/webhooks/${ids.healthy}?confirm=delete`));
    expect(confirm?.status()).toBe(403);

    // Nothing changed: the owner still sees both endpoints as they were, and nothing was sent.
    await t.owner.page.goto(at('/console/webhooks'));
    expect(await t.owner.page.locator('#webhook-endpoints tbody tr').count()).toBe(2);
    expect(await textOf(t.owner.page.locator('#webhook-endpoints'))).toContain('CRM sync');
    expect(healthy.received.length).toBe(received);
  });

  it('records every act in the audit log, with the endpoint’s host and no secret', async () => {
    const { page } = t.owner;
    await page.goto(at('/console/audit'));
    const log = await textOf(page.locator('main'));
    for (const label of [
      'Webhook endpoint created',
      'Webhook endpoint changed',
      'Webhook test event sent',
      'Webhook secret rotated',
      'Webhook endpoint re-enabled',
    ])
      expect(log).toContain(label);
    for (const s of secrets) expect(log).not.toContain(s);
    expect(log).not.toContain('/hooks/herald');
  });

  it('deletes an endpoint after asking', async () => {
    const { page } = t.owner;
    await page.goto(at(`/console/webhooks/${ids.failing}`));
    await page.getByRole('link', { name: 'Delete endpoint' }).click();
    expect(await textOf(page.getByRole('heading', { level: 1 }))).toContain('Delete the endpoint');
    await page.getByRole('button', { name: 'Delete endpoint' }).click();

    expect(await textOf(page.locator('.notice'))).toContain('The endpoint is deleted');
    expect(await page.locator('#webhook-endpoints tbody tr').count()).toBe(1);
    const gone = await page.goto(at(`/console/webhooks/${ids.failing}`));
    expect(gone?.status()).toBe(404);
  });
});
