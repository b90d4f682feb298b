import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

// The console's browser tests: Debian's Chromium (never a browser downloaded by npm) driven by
// playwright-core, a virtual WebAuthn authenticator per browser context (Chrome's DevTools
// protocol), axe-core for accessibility and screenshots for the docs.

export const CHROMIUM = process.env.HERALD_CHROMIUM ?? '/usr/bin/chromium';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true });
}

export interface Person {
  context: BrowserContext;
  page: Page;
  /** The passkeys the current authenticator holds. */
  credentials: () => Promise<unknown[]>;
  /** Unplugs the authenticator and plugs in an empty one (another device of the same person). */
  newDevice: () => Promise<void>;
}

const AUTHENTICATOR = {
  protocol: 'ctap2',
  transport: 'internal',
  hasResidentKey: true,
  hasUserVerification: true,
  isUserVerified: true,
  automaticPresenceSimulation: true,
} as const;

/**
 * A fresh context (its own cookies: one person) whose pages sign passkey ceremonies with a virtual
 * platform authenticator that holds resident keys and verifies the user.
 */
export async function personContext(browser: Browser, opts: { mobile?: boolean } = {}): Promise<Person> {
  const context = await browser.newContext(
    opts.mobile ? { viewport: { width: 375, height: 740 }, isMobile: true, hasTouch: true } : {},
  );
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  let { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: AUTHENTICATOR });
  const credentials = async () =>
    (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials as unknown[];
  const newDevice = async () => {
    await cdp.send('WebAuthn.removeVirtualAuthenticator', { authenticatorId });
    ({ authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', { options: AUTHENTICATOR }));
  };
  return { context, page, credentials, newDevice };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: number;
}

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.x A and AA rules). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, which the page's CSP does not govern.
  await page.evaluate(axeSource);
  const result = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } })`,
  )) as { violations: Array<{ id: string; impact: string | null; help: string; nodes: unknown[] }> };
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length }));
}

const SHOTS = resolve(import.meta.dirname, '../../docs/images/console');

/**
 * A screenshot for docs/console.md: written into docs/images/console when HERALD_SCREENSHOTS=1
 * (`HERALD_SCREENSHOTS=1 npx vitest run --project e2e test/e2e/console*.test.ts`), else into the OS
 * temp directory so a test run changes no tracked file.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir =
    process.env.HERALD_SCREENSHOTS === '1' ? SHOTS : join(process.env.TMPDIR ?? '/tmp', 'herald-shots');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
