import { crc32, deflateSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, personContext } from '../support/browser.ts';
import { at, checkPage, enroll, post, type Team, team, textOf } from './console-helpers.ts';
import { ALL_SCOPES, api, cliOk, uploadMedia } from './helpers.ts';

// The console's media library in a real browser, on the local stack (no model configured: the
// rule-based engine answers): an image uploaded through the API is listed and its page shows its
// facts (a member, at a phone's width); "Suggest alt text" puts the rules engine's suggestion in a
// read-only box and uses AI credits (getUsage); another workspace's person gets the 404 page.

let browser: Browser;
let t: Team;
let key: string;
let asset: { id: string; url: string; status: string };

/** A 1200×630 PNG of one colour (small: the rows compress to almost nothing). */
function bannerPng(width = 1200, height = 630): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const out = Buffer.alloc(body.length + 8);
    out.writeUInt32BE(data.length, 0);
    body.copy(out, 4);
    out.writeUInt32BE(crc32(body), body.length + 4);
    return out;
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, Buffer.from([0x1d, 0x70, 0xb8]))]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const aiCreditsUsed = async () => {
  const usage = await api<{ meters: Array<{ key: string; used: number }> }>('GET', '/v1/usage', { key });
  expect(usage.status, usage.text).toBe(200);
  return usage.body.meters.find((m) => m.key === 'ai_credits')?.used ?? Number.NaN;
};

beforeAll(async () => {
  browser = await launchChromium();
  t = await team(browser, 'Media console');
  key = (await cliOk('key', 'mint', '--org', t.orgId, '--scopes', ALL_SCOPES, '--name', 'Media test'))
    .key as string;
  asset = await uploadMedia(key, bannerPng(), 'launch-banner.png', 'image/png');
  expect(asset.status).toBe('ready');
}, 180_000);

afterAll(async () => {
  await browser?.close();
});

describe('the console’s media library', { timeout: 120_000 }, () => {
  it('lists the uploaded image and shows a member, at a phone’s width, its facts', async () => {
    const { page } = t.member;
    await page.goto(at('/console'));
    await page.getByText('Menu', { exact: true }).click();
    // The menu's link (the overview's Manage cards link the library too).
    await page
      .getByRole('navigation', { name: 'Console' })
      .getByRole('link', { name: 'Media', exact: true })
      .click();
    await page.waitForURL((u) => u.pathname === '/console/media');
    expect(await textOf(page.locator('#media'))).toContain('launch-banner.png');
    await checkPage(page);
    await page.getByRole('link', { name: 'launch-banner.png' }).click();
    await page.waitForURL((u) => u.pathname === `/console/media/${asset.id}`);
    const facts = await textOf(page.locator('dl.summary'));
    for (const fact of ['Ready', 'Image', 'image/png', '1200 × 630 pixels', asset.id])
      expect(facts).toContain(fact);
    expect(await page.getByRole('link', { name: 'Open the file' }).getAttribute('href')).toBe(asset.url);
    // The preview loads from the media origin: the page's CSP lets its images in (a refused or broken
    // image has no natural width).
    const preview = page.getByRole('img', { name: 'Preview of launch-banner.png' });
    expect(await preview.getAttribute('src')).toBe(asset.url);
    // A string the browser evaluates (the tests compile without the DOM's types).
    await page.waitForFunction("document.querySelector('.media-preview img')?.naturalWidth === 1200");
    await checkPage(page);
  });

  it('suggests alt text from the rules engine into a read-only box, using AI credits', async () => {
    const before = await aiCreditsUsed();
    const { page } = t.owner;
    await page.goto(at(`/console/media/${asset.id}`));
    await page.getByRole('button', { name: 'Suggest alt text' }).click();
    const box = page.getByLabel('Suggested alt text');
    await box.waitFor();
    expect((await box.inputValue()).trim()).not.toBe('');
    expect(await box.getAttribute('readonly')).not.toBeNull();
    const said = await textOf(page.locator('#suggestion'));
    expect(said).toContain('not by a language model');
    expect(said).toContain('Nothing is saved');
    expect(await aiCreditsUsed()).toBeGreaterThan(before);
    await checkPage(page, 'media-item');
  });

  it('answers another workspace’s person with the 404 page, and lists nothing of this one to them', async () => {
    const created = await cliOk(
      'org',
      'create',
      '--name',
      'Other media',
      '--plan',
      'team',
      '--owner-email',
      `owner-other-media-${Date.now()}@console.test`,
    );
    const stranger = await personContext(browser);
    try {
      await enroll(stranger.page, (created.enrollment as { url: string }).url);
      const res = await stranger.page.goto(at(`/console/media/${asset.id}`));
      expect(res?.status()).toBe(404);
      const suggest = await post(stranger.page, `/console/media/${asset.id}/suggest/alt-text`, {});
      expect(suggest.status()).toBe(404);
      await stranger.page.goto(at('/console/media'));
      expect(await stranger.page.locator('main').textContent()).not.toContain('launch-banner.png');
    } finally {
      await stranger.context.close();
    }
  });
});
