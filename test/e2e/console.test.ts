import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, personContext } from '../support/browser.ts';
import {
  at,
  checkPage,
  consoleOrigin,
  enroll,
  inviteFromConsole,
  post,
  signIn,
  textOf,
} from './console-helpers.ts';
import { api, CREDENTIALS, cliOk, mcpClient } from './helpers.ts';

// The console in a real browser (Debian's Chromium, a virtual passkey authenticator per person):
// an owner gets in through the link `herald org create` printed, mints a key and revokes it, turns
// on Dangerous AI operations, invites an admin and a member; the server — not hidden buttons —
// keeps each role to its acts, another organization's person sees nothing, a cross-site form is
// refused, sign-out ends the session and the audit log tells all of it. Every page is checked with
// axe-core and photographed for docs/console.md.

type Json = Record<string, unknown>;

let browser: Browser;
const stamp = Date.now();

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe('the console in a browser', { timeout: 180_000 }, () => {
  const org = { id: '', ownerEmail: `owner-${stamp}@console.test`, channel: '', keyId: '', key: '' };
  let owner: Awaited<ReturnType<typeof personContext>>;
  let admin: Awaited<ReturnType<typeof personContext>>;
  let member: Awaited<ReturnType<typeof personContext>>;

  it('the owner enrolls through the link herald org create printed, and the link works once', async () => {
    const created = await cliOk(
      'org',
      'create',
      '--name',
      `Console ${stamp}`,
      '--plan',
      'team',
      '--owner-email',
      org.ownerEmail,
    );
    org.id = (created.org as Json).id as string;
    const link = (created.enrollment as Json).url as string;
    expect(link.startsWith(`${consoleOrigin()}/console/enroll#`)).toBe(true);
    const channel = await cliOk(
      'channel',
      'connect',
      '--org',
      org.id,
      '--platform',
      'bluesky',
      '--credentials',
      JSON.stringify(CREDENTIALS.bluesky),
    );
    org.channel = channel.id as string;

    owner = await personContext(browser);
    await owner.page.goto(link);
    await checkPage(owner.page, 'enroll');
    await enroll(owner.page, link);
    expect(await owner.credentials()).toHaveLength(1);
    await expect.poll(() => owner.page.getByRole('heading', { level: 1 }).textContent()).toContain('Console');
    await checkPage(owner.page, 'home');

    // The same link again, in another browser: spent.
    const stranger = await personContext(browser);
    await stranger.page.goto(link);
    await stranger.page.getByRole('button', { name: 'Create a passkey' }).click();
    expect(await textOf(stranger.page.getByRole('alert'))).toMatch(/expired|already used/i);
    expect(await stranger.credentials()).toHaveLength(0);
    await stranger.context.close();
  });

  it('signs out, and signs in again with the passkey alone', async () => {
    const cookiesBefore = await owner.context.cookies();
    await owner.page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await owner.page.waitForURL((u) => u.pathname === '/console/sign-in');
    await checkPage(owner.page, 'sign-in');
    // The old cookie is worth nothing now: the session ended on the server.
    const old = cookiesBefore.find((c) => c.name.endsWith('herald_session'));
    expect(old).toBeDefined();
    const replay = await fetch(at('/console/keys'), {
      headers: { cookie: `${old?.name}=${old?.value}` },
      redirect: 'manual',
    });
    expect(replay.status).toBe(303);
    expect(replay.headers.get('location')).toContain('/console/sign-in');

    await signIn(owner.page);
    expect(await owner.page.getByText(org.ownerEmail).count()).toBeGreaterThan(0);
  });

  it('mints a key shown once, which works against the API', async () => {
    const { page } = owner;
    await page.goto(at('/console/keys'));
    await checkPage(page);
    await page.getByLabel('Name (optional)').fill(`ci <b>${stamp}</b>`);
    for (const scope of ['posts:read', 'posts:write', 'channels:read'])
      await page.getByRole('checkbox', { name: scope, exact: true }).check();
    await page.getByRole('button', { name: 'Mint key' }).click();
    expect(await textOf(page.getByRole('heading', { level: 1 }))).toBe('Your new API key');
    org.key = await page.locator('#minted-key').inputValue();
    expect(org.key).toMatch(/^svc_live_/);
    await checkPage(page, 'key-minted');

    const channels = await api('GET', '/v1/channels', { key: org.key });
    expect(channels.status).toBe(200);

    // The list shows the name as typed (escaped, not markup) and never the secret.
    await page.goto(at('/console/keys'));
    await page.getByRole('rowheader', { name: `ci <b>${stamp}</b>` }).waitFor();
    expect(await page.content()).not.toContain(org.key);
    await checkPage(page, 'keys');
    const keys = (await cliOk('key', 'list', '--org', org.id)).data as Json[];
    org.keyId = keys.find((k) => String(k.name).startsWith('ci '))?.id as string;
    expect(org.keyId).toMatch(/^key_/);
  });

  it('turns on Dangerous AI operations: publish-now then passes over REST and MCP', async () => {
    const draft = () =>
      api<Json>('POST', '/v1/posts', {
        key: org.key,
        body: { variants: [{ channel_id: org.channel, body: `console ${Date.now()}` }], draft: true },
      });
    const first = await draft();
    expect(first.status).toBe(201);
    const refused = await api<Json>('POST', `/v1/posts/${first.body.id}/publish`, { key: org.key });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('dangerous_ops_disabled');

    const { page } = owner;
    await page.goto(at('/console/settings'));
    await checkPage(page, 'settings');
    await page.getByRole('checkbox', { name: 'Dangerous AI operations' }).check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    expect(await textOf(page.getByRole('status').first())).toMatch(/saved/i);

    const published = await api<Json>('POST', `/v1/posts/${first.body.id}/publish`, { key: org.key });
    expect(published.status).toBe(202);
    const second = await draft();
    const client = await mcpClient(org.key, 'console-e2e');
    const viaMcp = await client.callTool({ name: 'publish_post', arguments: { id: second.body.id } });
    expect(viaMcp.isError).toBeFalsy();
    await client.close();
  });

  it('invites an admin and a member, who enroll in their own browsers (the member at a phone’s width)', async () => {
    const adminLink = await inviteFromConsole(owner.page, `admin-${stamp}@console.test`, 'admin');
    await checkPage(owner.page, 'member-invited');
    const memberLink = await inviteFromConsole(owner.page, `member-${stamp}@console.test`, 'member');
    admin = await personContext(browser);
    await enroll(admin.page, adminLink);
    member = await personContext(browser, { mobile: true });
    await enroll(member.page, memberLink);
    await checkPage(member.page);

    await owner.page.goto(at('/console/members'));
    await checkPage(owner.page, 'members');
    for (const email of [`admin-${stamp}@console.test`, `member-${stamp}@console.test`])
      await owner.page.getByRole('rowheader', { name: email }).waitFor();
  });

  it('keeps each role to its acts on the server: the member cannot mint, the admin cannot change settings', async () => {
    await member.page.goto(at('/console/keys'));
    await checkPage(member.page, 'keys-phone');
    expect(await member.page.getByRole('button', { name: 'Mint key' }).count()).toBe(0);
    const keysBefore = ((await cliOk('key', 'list', '--org', org.id)).data as Json[]).length;
    const mintByMember = await post(member.page, '/console/keys', { name: 'sneaky', scopes: 'posts:read' });
    expect(mintByMember.status()).toBe(403);
    const revokeByMember = await post(member.page, `/console/keys/${org.keyId}/revoke`, {});
    expect(revokeByMember.status()).toBe(403);
    expect(((await cliOk('key', 'list', '--org', org.id)).data as Json[]).length).toBe(keysBefore);

    await admin.page.goto(at('/console/settings'));
    expect(await admin.page.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    const toggleByAdmin = await post(admin.page, '/console/settings', { landing_origins: '' });
    expect(toggleByAdmin.status()).toBe(403);
    const inviteByAdmin = await post(admin.page, '/console/members', {
      email: 'x@console.test',
      role: 'owner',
    });
    expect(inviteByAdmin.status()).toBe(403);
    // Still on: the admin's refused form changed nothing.
    const draft = await api<Json>('POST', '/v1/posts', {
      key: org.key,
      body: { variants: [{ channel_id: org.channel, body: `still on ${Date.now()}` }], draft: true },
    });
    expect((await api('POST', `/v1/posts/${draft.body.id}/publish`, { key: org.key })).status).toBe(202);

    // The admin mints keys (their role's act).
    await admin.page.goto(at('/console/keys'));
    await admin.page.getByRole('checkbox', { name: 'posts:read', exact: true }).check();
    await admin.page.getByRole('button', { name: 'Mint key' }).click();
    expect(await textOf(admin.page.getByRole('heading', { level: 1 }))).toBe('Your new API key');
  });

  it('shows a person of another organization none of it (404 for its ids)', async () => {
    const other = await cliOk(
      'org',
      'create',
      '--name',
      `Other ${stamp}`,
      '--plan',
      'team',
      '--owner-email',
      `other-${stamp}@console.test`,
    );
    const outsider = await personContext(browser);
    await enroll(outsider.page, (other.enrollment as Json).url as string);
    const seen = await outsider.page.request.get(at(`/console/keys?revoke=${org.keyId}`), {
      failOnStatusCode: false,
    });
    expect(seen.status()).toBe(404);
    const revoke = await post(outsider.page, `/console/keys/${org.keyId}/revoke`, {});
    expect(revoke.status()).toBe(404);
    await outsider.page.goto(at('/console/members'));
    expect(await outsider.page.content()).not.toContain(org.ownerEmail);
    await outsider.page.goto(at('/console/keys'));
    expect(await outsider.page.content()).not.toContain(org.keyId);
    await outsider.context.close();
  });

  it('refuses cross-site posts: a form on another site, a foreign or missing Origin', async () => {
    // Another site (127.0.0.1 is not localhost) whose page posts a form to the console on load.
    const evil: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><form id="f" method="post" action="${at('/console/settings')}">
<input name="settings" value="approval_required"><input name="landing_origins" value="https://evil.example">
</form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((ok) => evil.listen(0, '127.0.0.1', ok));
    const page = await owner.context.newPage();
    const answer = page.waitForResponse((r) => r.url() === at('/console/settings'));
    await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    expect((await answer).status()).toBe(403);
    await page.close();
    evil.close();

    expect(
      (await post(owner.page, '/console/settings', { landing_origins: '' }, 'https://evil.example')).status(),
    ).toBe(403);
    expect((await post(owner.page, '/console/settings', { landing_origins: '' }, '')).status()).toBe(403);

    // Nothing changed: dangerous operations still on, approval still off, no landing origin.
    await owner.page.goto(at('/console/settings'));
    expect(await owner.page.getByRole('checkbox', { name: 'Dangerous AI operations' }).isChecked()).toBe(
      true,
    );
    expect(await owner.page.getByRole('checkbox', { name: 'Approval required' }).isChecked()).toBe(false);
    expect(await owner.page.getByLabel('Landing origins').inputValue()).toBe('');
  });

  it('revokes the key: its very next API call is 401', async () => {
    const { page } = owner;
    await page.goto(at(`/console/keys?revoke=${org.keyId}`));
    await checkPage(page, 'key-revoke');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL((u) => u.pathname === '/console/keys');
    expect((await api('GET', '/v1/channels', { key: org.key })).status).toBe(401);
  });

  it('lists every act in the audit log, newest first, the CLI’s as the operator’s', async () => {
    const { page } = owner;
    await page.goto(at('/console/audit'));
    await checkPage(page, 'audit');
    const text = (await page.locator('main').textContent()) ?? '';
    for (const what of [
      'Workspace created',
      'Passkey added',
      'Signed in',
      'Signed out',
      'API key minted',
      'Settings changed',
      'Member invited',
      'API key revoked',
    ])
      expect(text).toContain(what);
    expect(text).toContain('Operator');
    // Newest first: the revocation comes before the first mint.
    expect(text.indexOf('API key revoked')).toBeLessThan(text.lastIndexOf('API key minted'));

    const audit = await member.page.request.get(at('/console/audit'), { failOnStatusCode: false });
    expect(audit.status()).toBe(403);
  });

  it('lets a person add a passkey on a second device, sign in with it and remove the first', async () => {
    const { page } = owner;
    await page.goto(at('/console/passkeys'));
    await checkPage(page, 'passkeys');
    const rows = page.getByRole('table').getByRole('row');
    expect(await rows.count()).toBe(2); // the header and the enrolled passkey
    expect(await page.getByRole('link', { name: /^Remove/ }).count()).toBe(0); // never the last one

    await owner.newDevice();
    await page.getByLabel('Name (optional)').fill('Second <device>');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('rowheader', { name: 'Second <device>' }).waitFor();
    expect(await owner.credentials()).toHaveLength(1);

    // The new device alone signs in.
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/console/sign-in');
    await signIn(page);

    await page.goto(at('/console/passkeys'));
    const first = page.getByRole('link', { name: /^Remove/ }).filter({ hasNotText: 'Second' });
    await first.click();
    await checkPage(page, 'passkey-remove');
    await page.getByRole('button', { name: 'Remove passkey' }).click();
    await page.waitForURL((u) => u.pathname === '/console/passkeys');
    expect(await rows.count()).toBe(2);
    await page.getByRole('rowheader', { name: 'Second <device>' }).waitFor();

    // Signing out everywhere ends this browser's session too: the console asks to sign in again.
    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.waitForURL((u) => u.pathname === '/console/sign-in');
    await page.getByText('You are signed out on every device, this one too.').waitFor();
    await page.goto(at('/console/passkeys'));
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
  });

  it('brings a person who had to sign in back to the page they opened', async () => {
    const { page } = owner;
    await page.context().clearCookies();
    await page.goto(at('/console/audit?x=1'));
    await page.waitForURL((u) => u.pathname === '/console/sign-in');
    expect(new URL(page.url()).searchParams.get('next')).toBe('/console/audit?x=1');
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await page.waitForURL((u) => u.pathname === '/console/audit');
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
  });
});
