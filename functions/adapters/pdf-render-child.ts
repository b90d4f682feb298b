import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createCanvas } from '@napi-rs/canvas';

// The PDF reader, run as its own process by media-tools.ts (pdfProbe) so that a hostile PDF is
// bounded like an ffmpeg run: a timeout (SIGKILL), an address-space limit, and nothing of the
// function's environment. It imports nothing of Herald's and always runs bundled with pdf.js
// (pdf-reader-bundle.ts): from the probe layer in Lambda, from .build/ elsewhere.
//
// argv: <input.pdf> <poster.jpg or -> <max pages> <assets dir (standard_fonts/, cmaps/, wasm/)>
// stdout: one JSON line, a PdfAnswer (media-tools.ts).

/** The poster's largest width (like a video's) and height (a very tall page is scaled down). */
const MAX_WIDTH = 1280;
const MAX_HEIGHT = 4096;
/** At most 2 px per PDF point (144 dpi): a small page is not blown up past that. */
const MAX_SCALE = 2;
/** Embedded images over this many pixels are not decoded (pdf.js skips them). */
const MAX_IMAGE_PIXELS = 25_000_000;

type Answer =
  | { ok: true; pages: number; poster: { width: number; height: number } | null }
  | { ok: false; reason: 'encrypted' | 'too_many_pages' | 'unreadable'; pages?: number; detail?: string };

function answer(a: Answer): Promise<void> {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(a)}\n`, () => resolve()));
}

async function main(argv: string[]): Promise<Answer> {
  const [input, poster, maxPagesArg, assets] = argv;
  if (!input || !poster || !maxPagesArg || !assets) throw new Error('usage: <in> <poster|-> <max> <assets>');
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  // The worker's code in this process (pdf.js's "fake worker"): no Worker thread to bundle or find.
  (globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = await import(
    'pdfjs-dist/legacy/build/pdf.worker.mjs'
  );
  const data = new Uint8Array(await readFile(input));
  const task = pdfjs.getDocument({
    data,
    // pdf.js reads these with fs in Node; the trailing slash is required.
    standardFontDataUrl: `${join(assets, 'standard_fonts')}/`,
    cMapUrl: `${join(assets, 'cmaps')}/`,
    cMapPacked: true,
    wasmUrl: `${join(assets, 'wasm')}/`,
    useSystemFonts: false,
    disableFontFace: true,
    enableXfa: false,
    maxImageSize: MAX_IMAGE_PIXELS,
    verbosity: 0,
  });
  try {
    return await read(await task.promise, poster, Number(maxPagesArg));
  } catch (err) {
    const e = err as Error;
    // A user password: nothing can be read without it.
    if (e?.name === 'PasswordException') return { ok: false, reason: 'encrypted' };
    return { ok: false, reason: 'unreadable', detail: String(e?.message ?? e).slice(0, 300) };
  } finally {
    await task.destroy();
  }
}

type Doc = Awaited<ReturnType<typeof import('pdfjs-dist/legacy/build/pdf.mjs').getDocument>['promise']>;

async function read(doc: Doc, poster: string, maxPages: number): Promise<Answer> {
  // Encrypted with an owner password only: readable here, but its author restricted what may be
  // done with it (copying, printing); refused as well rather than republished.
  const { info } = (await doc.getMetadata()) as { info: { EncryptFilterName?: string | null } };
  if (info.EncryptFilterName) return { ok: false, reason: 'encrypted' };
  const pages = doc.numPages;
  if (pages > maxPages) return { ok: false, reason: 'too_many_pages', pages };
  if (poster === '-') return { ok: true, pages, poster: null };
  try {
    const page = await doc.getPage(1);
    const natural = page.getViewport({ scale: 1 });
    const scale = Math.min(MAX_SCALE, MAX_WIDTH / natural.width, MAX_HEIGHT / natural.height);
    const viewport = page.getViewport({ scale });
    const width = Math.max(1, Math.floor(viewport.width));
    const height = Math.max(1, Math.floor(viewport.height));
    const canvas = createCanvas(width, height);
    const context = canvas.getContext('2d');
    // JPEG has no transparency: the page's paper is white, as a reader shows it.
    context.fillStyle = '#ffffff';
    context.fillRect(0, 0, width, height);
    await page.render({
      canvas: canvas as never,
      canvasContext: context as never,
      viewport,
    }).promise;
    await writeFile(poster, await canvas.encode('jpeg', 85));
    return { ok: true, pages, poster: { width, height } };
  } catch (err) {
    return {
      ok: false,
      reason: 'unreadable',
      pages,
      detail: String((err as Error)?.message ?? err).slice(0, 300),
    };
  }
}

main(process.argv.slice(2)).then(
  async (a) => {
    await answer(a);
    process.exit(0);
  },
  (err: unknown) => {
    process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
