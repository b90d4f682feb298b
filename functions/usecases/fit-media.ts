import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { imageSize } from 'image-size';
import {
  decodable,
  ffprobe,
  JPEG_STEPS,
  jpegArgs,
  mp4Args,
  ProbeError,
  remuxArgs,
  runFfmpeg,
  sizeOf,
  videoEncoding,
} from '#adapters/fit-tools';
import {
  deleteObject,
  downloadObject,
  headObject,
  putMediaFile,
  putMediaObject,
} from '#adapters/media-store';
import { DEFAULT_LIMITS, type ToolLimits } from '#adapters/media-tools';
import { FIT_PENDING_SECONDS, type FitRequest, type FitResponse, pendingKeyOf } from '#core/fit-contract';
import type { FitOp } from '#core/media-fit';

// fitMedia: derives one rendition of a media-bucket object (core/media-fit.ts plans it) with
// ffmpeg, in the fit function (no table, no keys; it reads media and writes `_fit-` keys only).
// Once per (asset, rendition): a rendition already stored is answered as it is. The rendition is
// written whole with one PutObject of the finished file, so a crash or a timeout never leaves part
// of one under its key; the original is only read. While it is made, an empty `<key>.pending`
// marker tells a second call (its caller stopped waiting and asked again) to wait rather than
// encode it twice; a marker older than the function's timeout is a call that died.

/** Left of the invocation for the upload after the last tool run. */
const MARGIN_MS = 5_000;

/** Each tool run gets what is left of the invocation less the margin (the probe's 20 s is for probing). */
function limitsWithin(remainingMs: () => number, capMs: number): ToolLimits {
  return { ...DEFAULT_LIMITS, timeoutMs: Math.max(1_000, Math.min(capMs, remainingMs() - MARGIN_MS)) };
}

const refused = (message: string): FitResponse => ({ ok: false, message });

/** The EXIF orientation of a still (1 when it has none or is not a JPEG). */
function orientationOf(head: Uint8Array): number {
  try {
    return imageSize(new Uint8Array(head)).orientation ?? 1;
  } catch {
    return 1;
  }
}

export async function fitMedia(
  request: FitRequest,
  remainingMs: () => number,
  now: () => Date = () => new Date(),
): Promise<FitResponse> {
  const contentType = request.kind === 'image' ? 'image/jpeg' : 'video/mp4';
  const stored = await headObject('media', request.target_key);
  if (stored && stored.size > 0)
    return {
      ok: true,
      key: request.target_key,
      content_type: contentType,
      size_bytes: stored.size,
      made: false,
    };
  // Another call making it now (a caller that stopped waiting, asking again): not a second encode.
  const pending = await headObject('media', pendingKeyOf(request.target_key));
  const since = pending?.lastModified?.getTime();
  if (since !== undefined && now().getTime() - since < FIT_PENDING_SECONDS * 1000)
    return { ok: false, in_progress: true, message: 'The rendition is being made; ask again later.' };
  await putMediaObject(pendingKeyOf(request.target_key), new Uint8Array(), 'application/octet-stream');
  const dir = await mkdtemp(join(tmpdir(), 'herald-fit-'));
  try {
    const input = join(dir, 'input');
    await downloadObject('media', request.source_key, input);
    const made =
      request.kind === 'image'
        ? await fitImage(input, dir, request.ops, remainingMs)
        : await fitVideo(input, dir, request.ops, remainingMs);
    if ('message' in made) return refused(made.message);
    await putMediaFile(request.target_key, made.path, contentType);
    return {
      ok: true,
      key: request.target_key,
      content_type: contentType,
      size_bytes: made.size,
      made: true,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
    // Made or refused, the next call answers for itself (a failed removal ages out).
    await deleteObject('media', pendingKeyOf(request.target_key)).catch(() => undefined);
  }
}

type Made = { path: string; size: number } | { message: string };

/** The best JPEG within the budget: the first of JPEG_STEPS that fits. */
export async function fitImage(
  input: string,
  dir: string,
  ops: readonly FitOp[],
  remainingMs: () => number,
): Promise<Made> {
  const jpeg = ops.find((o) => o.op === 'jpeg');
  if (!jpeg) throw new Error('an image fit needs a jpeg op');
  const head = new Uint8Array((await readFile(input)).subarray(0, 256 * 1024));
  const orientation = orientationOf(head);
  const out = join(dir, 'out.jpg');
  for (const step of JPEG_STEPS) {
    await rm(out, { force: true });
    try {
      await runFfmpeg(jpegArgs(input, out, ops, step, orientation), limitsWithin(remainingMs, 60_000));
    } catch (err) {
      if (err instanceof ProbeError && err.reason !== 'timeout')
        return { message: 'The image could not be decoded, so it cannot be fitted; it may be corrupt.' };
      throw err;
    }
    const size = await sizeOf(out).catch(() => 0);
    if (size === 0)
      return { message: 'The image could not be decoded, so it cannot be fitted; it may be corrupt.' };
    if (size <= jpeg.maxBytes) return { path: out, size };
  }
  return { message: `No JPEG of the image fits in ${jpeg.maxBytes} bytes.` };
}

const H264_AUDIO = new Set(['aac', null]);

/** An H.264/AAC MP4 within the budget: a stream copy when the codecs already are, else an encode. */
export async function fitVideo(
  input: string,
  dir: string,
  ops: readonly FitOp[],
  remainingMs: () => number,
): Promise<Made> {
  const mp4 = ops.find((o) => o.op === 'mp4');
  if (!mp4) throw new Error('a video fit needs an mp4 op');
  const out = join(dir, 'out.mp4');
  const limits = () => limitsWithin(remainingMs, Number.POSITIVE_INFINITY);
  let info: Awaited<ReturnType<typeof ffprobe>>;
  try {
    info = await ffprobe(input, limitsWithin(remainingMs, DEFAULT_LIMITS.timeoutMs));
  } catch (err) {
    if (err instanceof ProbeError && err.reason !== 'timeout')
      return { message: 'The video could not be read, so it cannot be fitted; it may be corrupt.' };
    throw err;
  }
  if (!info.hasVideo) return { message: 'The file has no video stream to fit.' };
  const inputSize = await sizeOf(input);
  const copyable =
    info.videoCodec === 'h264' &&
    H264_AUDIO.has(info.audioCodec) &&
    !ops.some((o) => o.op === 'pad') &&
    inputSize <= mp4.maxBytes;
  try {
    if (copyable) {
      await runFfmpeg(remuxArgs(input, out), limits());
      const size = await sizeOf(out);
      if (size <= mp4.maxBytes && (await decodable(out, limits()))) return { path: out, size };
    }
    // One encode at the budget's bitrate; an overshoot (rare with the VBV cap) gets one more at
    // the bitrate scaled down by how much it missed.
    const duration = info.durationSec ?? mp4.durationSec;
    let share = 0.9;
    for (let i = 0; i < 2; i++) {
      await rm(out, { force: true });
      await runFfmpeg(mp4Args(input, out, ops, videoEncoding(mp4.maxBytes, duration, share)), limits());
      const size = await sizeOf(out);
      if (size <= mp4.maxBytes) {
        if (!(await decodable(out, limits()))) return { message: 'The re-encoded video does not decode.' };
        return { path: out, size };
      }
      share *= (mp4.maxBytes / size) * 0.95;
    }
  } catch (err) {
    if (err instanceof ProbeError && err.reason !== 'timeout')
      return { message: 'The video could not be decoded, so it cannot be fitted; it may be corrupt.' };
    throw err;
  }
  return { message: `No H.264 encoding of the video fits in ${mp4.maxBytes} bytes.` };
}
