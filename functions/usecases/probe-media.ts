import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadObject, putMediaObject } from '#adapters/media-store';
import {
  DEFAULT_LIMITS,
  ffprobe,
  PDF_LIMITS,
  PdfRefused,
  type PdfResult,
  ProbeError,
  type ProbeResult,
  pdfProbe,
  posterFrame,
} from '#adapters/media-tools';
import { kindOf, MAX_DOCUMENT_PAGES, streamsMatchClaim } from '#core/media-probe';
import type { ProbeRequest, ProbeResponse } from '#core/probe-contract';

// probeMedia: the one place ffprobe, ffmpeg and the PDF reader run. It reads one uploaded object, writes at most
// its poster, and answers the metadata; it has no table and no other object. A file the tools
// cannot read is an answer (`ok: false`: 400 to the client); a tool out of time, or not runnable,
// fails the invocation (500).

/** Each tool run gets the default limit, or what is left of the invocation less a margin. */
const MARGIN_MS = 1_500;

function limitsWithin(remainingMs: () => number) {
  const timeoutMs = Math.max(1_000, Math.min(DEFAULT_LIMITS.timeoutMs, remainingMs() - MARGIN_MS));
  return { ...DEFAULT_LIMITS, timeoutMs };
}

const refused = (message: string): ProbeResponse => ({ ok: false, message });

export async function probeMedia(request: ProbeRequest, remainingMs: () => number): Promise<ProbeResponse> {
  const kind = kindOf(request.content_type);
  const dir = await mkdtemp(join(tmpdir(), 'herald-probe-'));
  try {
    const file = join(dir, 'input');
    await downloadObject('uploads', request.upload_key, file);
    if (kind === 'document') return await probeDocument(file, join(dir, 'poster.jpg'), request, remainingMs);
    let info: ProbeResult;
    try {
      info = await ffprobe(file, limitsWithin(remainingMs));
    } catch (err) {
      if (err instanceof ProbeError && err.reason !== 'timeout')
        return refused(`The file could not be read as ${kind}; it may be corrupt.`);
      throw err;
    }
    if (!streamsMatchClaim(request.content_type, info))
      return refused(kind === 'video' ? 'The file has no video stream.' : 'The file is not audio-only.');
    const metadata = { width: info.width, height: info.height, duration_sec: info.durationSec };
    if (kind === 'audio')
      return { ok: true, width: null, height: null, duration_sec: info.durationSec, poster_key: null };
    if (request.poster_key === null) return { ok: true, ...metadata, poster_key: null };
    const poster = join(dir, 'poster.jpg');
    try {
      await posterFrame(file, poster, limitsWithin(remainingMs));
    } catch (err) {
      if (err instanceof ProbeError && err.reason !== 'timeout')
        return refused('No frame of the video could be decoded; it may be corrupt.');
      throw err;
    }
    await putMediaObject(request.poster_key, new Uint8Array(await readFile(poster)), 'image/jpeg');
    return { ok: true, ...metadata, poster_key: request.poster_key };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A PDF: its page count (at most MAX_DOCUMENT_PAGES) and its first page as the poster. */
async function probeDocument(
  file: string,
  poster: string,
  request: ProbeRequest,
  remainingMs: () => number,
): Promise<ProbeResponse> {
  let result: PdfResult;
  try {
    const limits = { ...PDF_LIMITS, timeoutMs: limitsWithin(remainingMs).timeoutMs };
    result = await pdfProbe(file, request.poster_key ? poster : null, MAX_DOCUMENT_PAGES, limits);
  } catch (err) {
    if (err instanceof PdfRefused) {
      if (err.reason === 'too_many_pages')
        return {
          ok: false,
          code: 'too_many_pages',
          message: `The PDF has ${err.pageCount} pages; documents are limited to ${MAX_DOCUMENT_PAGES} pages (LinkedIn's limit).`,
        };
      if (err.reason === 'encrypted')
        return refused('The PDF is encrypted (password-protected); upload it without protection.');
      return refused('The file could not be read as a PDF; it may be corrupt.');
    }
    // The reader crashed (out of memory, a bad page): the bytes, not the deployment.
    if (err instanceof ProbeError && err.reason !== 'timeout')
      return refused('The first page of the PDF could not be rendered; it may be corrupt.');
    throw err;
  }
  const metadata = { width: null, height: null, duration_sec: null, page_count: result.pageCount };
  if (request.poster_key === null) return { ok: true, ...metadata, poster_key: null };
  await putMediaObject(request.poster_key, new Uint8Array(await readFile(poster)), 'image/jpeg');
  return { ok: true, ...metadata, poster_key: request.poster_key };
}
