import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PDF_LIMITS, PdfRefused, ProbeError, pdfProbe } from '#adapters/media-tools';
import { imageDimensions, MAX_DOCUMENT_PAGES, sniff } from '#core/media-probe';
import { makePdf, writePdf } from '../../support/media-samples.ts';

// The PDF reader (adapters/pdf-render-child.ts) run for real, as the probe function runs it: a
// child Node process with pdf.js and @napi-rs/canvas, within a timeout and an address-space limit,
// on hand-written PDFs.

let dir: string;
const file = (name: string) => join(dir, name);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'herald-pdf-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function refusal(promise: Promise<unknown>): Promise<PdfRefused> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(PdfRefused);
  return error as PdfRefused;
}

describe('pdfProbe', () => {
  it('counts the pages of a 10-page PDF and renders page 1 as a JPEG poster at most 1280 px wide', async () => {
    // Arrange
    const pdf = await writePdf(file('ten.pdf'), 10);

    // Act
    const result = await pdfProbe(pdf, file('ten.jpg'), MAX_DOCUMENT_PAGES);

    // Assert
    expect(result.pageCount).toBe(10);
    const jpeg = new Uint8Array(await readFile(file('ten.jpg')));
    expect(sniff(jpeg)).toBe('image/jpeg');
    // US Letter (612 × 792 pt) at 2 px per point.
    expect(imageDimensions(jpeg)).toEqual({ width: 1224, height: 1584 });
    expect(result.poster).toEqual({ width: 1224, height: 1584 });
  });

  it('draws the page: the poster is white paper with the blue rectangle, not a blank image', async () => {
    const pdf = await writePdf(file('drawn.pdf'), 1);
    await pdfProbe(pdf, file('drawn.jpg'), MAX_DOCUMENT_PAGES);
    const { createCanvas, loadImage } = await import('@napi-rs/canvas');
    const image = await loadImage(await readFile(file('drawn.jpg')));
    const canvas = createCanvas(image.width, image.height);
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0);
    const pixel = (x: number, y: number) => [...context.getImageData(x, y, 1, 1).data.subarray(0, 3)];
    // The rectangle: 36 pt from the bottom-left corner, 72 pt tall (2 px per point).
    const blue = pixel(100, image.height - 100);
    expect(blue[2]).toBeGreaterThan(200);
    expect(blue[0]).toBeLessThan(60);
    expect(pixel(image.width - 20, image.height / 2).every((c) => c > 240)).toBe(true);
  });

  it('scales a wide page down to 1280 px and never blows a small one up past 2 px per point', async () => {
    const wide = await pdfProbe(
      await writePdf(file('wide.pdf'), 1, { width: 3000, height: 1000 }),
      file('w.jpg'),
      300,
    );
    expect(wide.poster?.width).toBe(1280);
    expect(wide.poster?.height).toBe(426);
    const small = await pdfProbe(
      await writePdf(file('small.pdf'), 1, { width: 100, height: 50 }),
      file('s.jpg'),
      300,
    );
    expect(small.poster).toEqual({ width: 200, height: 100 });
  });

  it('accepts exactly 300 pages and refuses 301 with the count', async () => {
    const ok = await pdfProbe(await writePdf(file('300.pdf'), 300), file('300.jpg'), MAX_DOCUMENT_PAGES);
    expect(ok.pageCount).toBe(300);
    const error = await refusal(
      pdfProbe(await writePdf(file('301.pdf'), 301), file('301.jpg'), MAX_DOCUMENT_PAGES),
    );
    expect(error).toMatchObject({ reason: 'too_many_pages', pageCount: 301 });
    // Refused before rendering: no poster left behind.
    await expect(stat(file('301.jpg'))).rejects.toThrow();
  });

  it('refuses an encrypted PDF, with a user password and with an owner password only', async () => {
    const locked = await writePdf(file('locked.pdf'), 2, {
      encrypt: { userPassword: 'secret', ownerPassword: 'owner' },
    });
    const restricted = await writePdf(file('restricted.pdf'), 2, {
      encrypt: { userPassword: '', ownerPassword: 'owner' },
    });
    expect(await refusal(pdfProbe(locked, file('l.jpg'), 300))).toMatchObject({ reason: 'encrypted' });
    expect(await refusal(pdfProbe(restricted, file('r.jpg'), 300))).toMatchObject({ reason: 'encrypted' });
  });

  it('refuses bytes that are not a readable PDF: text named .pdf, a PDF cut in half', async () => {
    await writeFile(file('text.pdf'), 'this is not a PDF\n');
    const whole = makePdf(3);
    await writeFile(file('cut.pdf'), whole.subarray(0, 40));
    expect(await refusal(pdfProbe(file('text.pdf'), file('t.jpg'), 300))).toMatchObject({
      reason: 'unreadable',
    });
    expect(await refusal(pdfProbe(file('cut.pdf'), file('c.jpg'), 300))).toMatchObject({
      reason: 'unreadable',
    });
  });

  it('counts without rendering when no poster is asked for', async () => {
    const result = await pdfProbe(await writePdf(file('count.pdf'), 4), null, 300);
    expect(result).toEqual({ pageCount: 4, poster: null });
  });

  it('is bounded: out of time it is killed (timeout), out of address space it fails, never hangs', async () => {
    const pdf = await writePdf(file('bounded.pdf'), 1);
    const slow = await pdfProbe(pdf, file('b.jpg'), 300, { ...PDF_LIMITS, timeoutMs: 50 }).catch(
      (e: unknown) => e,
    );
    expect(slow).toBeInstanceOf(ProbeError);
    expect(slow).toMatchObject({ reason: 'timeout' });
    const starved = await pdfProbe(pdf, file('b.jpg'), 300, { ...PDF_LIMITS, memoryMb: 256 }).catch(
      (e: unknown) => e,
    );
    expect(starved).toBeInstanceOf(ProbeError);
    expect(starved).toMatchObject({ reason: 'failed' });
  });
});
