import type { Browser, Locator, Page } from 'playwright-core';
import { expect } from 'vitest';
import { type Person, personContext, screenshot, seriousViolations } from '../support/browser.ts';
import { baseUrl, CREDENTIALS, cliOk } from './helpers.ts';

// What the console's browser tests share: the console's address, the page checks (axe-core, a
// phone's width, the screenshot for the docs), the passkey ceremonies as a person performs them, and
// a fresh organization with its owner, an admin and a member signed in, each in their own context.

type Json = Record<string, unknown>;

/** Passkeys refuse IP addresses: the console is opened on localhost. */
export const consoleOrigin = () => baseUrl().replace('127.0.0.1', 'localhost');
export const at = (path: string) => `${consoleOrigin()}${path}`;

/** The page is accessible (no serious or critical axe violation) and fits its viewport's width. */
export async function checkPage(page: Page, shot?: string) {
  expect(await seriousViolations(page), `axe on ${page.url()}`).toEqual([]);
  const overflow = (await page.evaluate(
    'document.documentElement.scrollWidth - document.documentElement.clientWidth',
  )) as number;
  expect(overflow, `${page.url()} scrolls sideways`).toBeLessThanOrEqual(0);
  if (shot) await screenshot(page, shot);
}

/** The element's text once it is shown (trimmed). */
export async function textOf(locator: Locator): Promise<string> {
  await locator.waitFor();
  return ((await locator.textContent()) ?? '').trim();
}

/** Opens an enrollment link and registers the context's passkey; lands signed in on the console. */
export async function enroll(page: Page, link: string) {
  await page.goto(link);
  await page.getByRole('button', { name: 'Create a passkey' }).click();
  await page.waitForURL((u) => u.pathname === '/console');
}

export async function signIn(page: Page) {
  await page.goto(at('/console/sign-in'));
  await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
  await page.waitForURL((u) => u.pathname === '/console');
}

/** A form POST from within the signed-in context (its cookies), as a script on another page could not. */
export async function post(page: Page, path: string, form: Record<string, string>, origin = consoleOrigin()) {
  return page.request.post(at(path), {
    form,
    headers: origin ? { origin } : {},
    maxRedirects: 0,
    failOnStatusCode: false,
  });
}

export async function inviteFromConsole(page: Page, email: string, role: string): Promise<string> {
  await page.goto(at('/console/members'));
  await page.getByLabel('Email address').fill(email);
  await page.getByRole('radio', { name: role, exact: true }).check();
  await page.getByRole('button', { name: 'Invite' }).click();
  // A locator wait, not expect.poll: team() runs this in beforeAll too.
  await page.getByRole('heading', { level: 1, name: /is invited/ }).waitFor();
  return page.locator('#enrollment-link').inputValue();
}

export interface Team {
  orgId: string;
  owner: Person;
  admin: Person;
  member: Person;
  emails: { owner: string; admin: string; member: string };
}

/**
 * A new organization (`herald org create`) whose owner enrolls through the printed link and invites
 * an admin and a member from the console; each enrolls in their own browser context (the member's
 * at a phone's width) and lands signed in.
 */
export async function team(browser: Browser, name: string, opts: { plan?: string } = {}): Promise<Team> {
  const tag = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${Date.now()}`;
  const emails = {
    owner: `owner-${tag}@console.test`,
    admin: `admin-${tag}@console.test`,
    member: `member-${tag}@console.test`,
  };
  const created = await cliOk(
    'org',
    'create',
    '--name',
    name,
    '--plan',
    opts.plan ?? 'team',
    '--owner-email',
    emails.owner,
  );
  const owner = await personContext(browser);
  await enroll(owner.page, (created.enrollment as Json).url as string);
  const adminLink = await inviteFromConsole(owner.page, emails.admin, 'admin');
  const memberLink = await inviteFromConsole(owner.page, emails.member, 'member');
  const admin = await personContext(browser);
  await enroll(admin.page, adminLink);
  const member = await personContext(browser, { mobile: true });
  await enroll(member.page, memberLink);
  return { orgId: (created.org as Json).id as string, owner, admin, member, emails };
}

/** Connects the Mastodon fake's account to the organization through the CLI; the channel's id. */
export async function connectMastodon(orgId: string): Promise<string> {
  const channel = await cliOk(
    'channel',
    'connect',
    '--org',
    orgId,
    '--platform',
    'mastodon',
    '--credentials',
    JSON.stringify(CREDENTIALS.mastodon),
  );
  return channel.id as string;
}
