import { stat } from 'node:fs/promises';
import type { FitOp } from '#core/media-fit';
import { AUDIO_KBPS, MIN_VIDEO_KBPS } from '#core/media-fit';
import { ffmpegPath, ffprobe, ProbeError, runTool, type ToolLimits } from './media-tools.ts';

// The ffmpeg runs of media fitting (core/media-fit.ts plans them; usecases/fit-media.ts runs
// them in the fit function), each under the limits of adapters/media-tools.ts. The command lines
// are built by pure functions so the unit tests read them as they run.

const BASE = ['-v', 'error', '-nostdin', '-y'] as const;

/** EXIF orientation → the filters that show the picture upright (this ffmpeg does not apply it to stills). */
const ORIENT: Readonly<Record<number, string>> = {
  2: 'hflip',
  3: 'hflip,vflip',
  4: 'vflip',
  5: 'transpose=0',
  6: 'transpose=1',
  7: 'transpose=3',
  8: 'transpose=2',
};

/** Bars of black around the centred picture, never cropping it (the frame grows to at least its size). */
const padFilter = (op: Extract<FitOp, { op: 'pad' }>) =>
  `pad=w='max(iw\\,${op.width})':h='max(ih\\,${op.height})':x='(ow-iw)/2':y='(oh-ih)/2':color=black`;

/** One JPEG attempt: quality `q` (ffmpeg's qscale, 2 best–31), sides scaled by `scale`. */
export interface JpegStep {
  q: number;
  scale: number;
}

/**
 * The attempts, best first: lower quality at full size, then smaller sides. The first whose file
 * is within the budget is kept (usecases/fit-media.ts stops there).
 */
export const JPEG_STEPS: readonly JpegStep[] = [
  { q: 2, scale: 1 },
  { q: 4, scale: 1 },
  { q: 7, scale: 1 },
  { q: 5, scale: 0.75 },
  { q: 5, scale: 0.5 },
  { q: 7, scale: 0.35 },
  { q: 9, scale: 0.25 },
  { q: 12, scale: 0.15 },
];

/** ffmpeg's arguments for one JPEG attempt of a still (the first frame of an animated GIF). */
export function jpegArgs(
  input: string,
  output: string,
  ops: readonly FitOp[],
  step: JpegStep,
  orientation = 1,
): string[] {
  const filters: string[] = [];
  if (ORIENT[orientation]) filters.push(ORIENT[orientation]);
  for (const op of ops) if (op.op === 'pad') filters.push(padFilter(op));
  if (step.scale < 1) filters.push(`scale='max(2\\,trunc(iw*${step.scale}/2)*2)':-2`);
  // Full-range 4:2:0, what every JPEG decoder reads; alpha is dropped.
  filters.push('format=yuvj420p');
  // Strict decoding: a damaged picture fails (the lenient default would pass on a grey smear).
  return [
    ...BASE,
    ...[
      '-err_detect',
      'explode',
      '-i',
      input,
      '-xerror',
      '-frames:v',
      '1',
      '-an',
      '-sn',
      '-map_metadata',
      '-1',
    ],
    ...['-vf', filters.join(','), '-c:v', 'mjpeg', '-q:v', String(step.q), '-f', 'image2', output],
  ];
}

export interface VideoEncoding {
  videoKbps: number;
  /** Longest side of the picture: less bitrate, fewer pixels. */
  maxSide: number;
}

/** The bitrate a budget gives over the duration (less the audio), and the picture size it can carry. */
export function videoEncoding(maxBytes: number, durationSec: number, share = 0.9): VideoEncoding {
  const videoKbps = Math.floor((maxBytes * share * 8) / 1000 / durationSec - AUDIO_KBPS);
  const maxSide = videoKbps >= 2500 ? 1920 : videoKbps >= 1200 ? 1280 : videoKbps >= 600 ? 854 : 640;
  return { videoKbps: Math.max(videoKbps, MIN_VIDEO_KBPS), maxSide };
}

/** ffmpeg's arguments for an H.264/AAC MP4 within a bitrate (its first video and first audio stream). */
export function mp4Args(input: string, output: string, ops: readonly FitOp[], enc: VideoEncoding): string[] {
  const { videoKbps, maxSide } = enc;
  const filters = [
    // Only ever smaller, even sides (yuv420p needs them); ffmpeg applies the display rotation first.
    `scale='if(gte(iw,ih),min(${maxSide},iw),-2)':'if(gte(iw,ih),-2,min(${maxSide},ih))'`,
    'scale=trunc(iw/2)*2:trunc(ih/2)*2',
    ...ops.flatMap((op) => (op.op === 'pad' ? [padFilter(evenPad(op, maxSide))] : [])),
    'format=yuv420p',
  ];
  return [
    ...BASE,
    ...['-i', input, '-map', '0:v:0', '-map', '0:a:0?', '-sn', '-dn', '-map_metadata', '-1'],
    ...['-vf', filters.join(',')],
    ...['-c:v', 'libx264', '-preset', 'veryfast', '-profile:v', 'high', '-pix_fmt', 'yuv420p'],
    // Average bitrate capped by a VBV buffer: the file's size follows the budget.
    ...['-b:v', `${videoKbps}k`, '-maxrate', `${videoKbps}k`, '-bufsize', `${videoKbps * 2}k`],
    ...['-c:a', 'aac', '-b:a', `${AUDIO_KBPS}k`, '-ac', '2', '-ar', '44100'],
    ...['-movflags', '+faststart', '-f', 'mp4', output],
  ];
}

/** The pad target scaled like the picture (same aspect), even sides. */
function evenPad(op: Extract<FitOp, { op: 'pad' }>, maxSide: number) {
  const k = Math.min(1, maxSide / Math.max(op.width, op.height));
  const e = (n: number) => Math.max(2, Math.floor((n * k) / 2) * 2);
  return { ...op, width: e(op.width), height: e(op.height) };
}

/** Streams already H.264 (+ AAC or none) in another container: a copy into MP4, no re-encode. */
export function remuxArgs(input: string, output: string): string[] {
  return [
    ...BASE,
    ...['-i', input, '-map', '0:v:0', '-map', '0:a:0?', '-sn', '-dn', '-c', 'copy'],
    ...['-movflags', '+faststart', '-f', 'mp4', output],
  ];
}

export async function sizeOf(path: string): Promise<number> {
  return (await stat(path)).size;
}

/** Runs ffmpeg with `args` within `limits`. */
export function runFfmpeg(args: readonly string[], limits: ToolLimits): Promise<string> {
  return runTool(ffmpegPath(), args, 'ffmpeg', limits);
}

/** The output decodes: ffprobe finds its video stream (a failed decode is a ProbeError). */
export async function decodable(path: string, limits: ToolLimits): Promise<boolean> {
  try {
    const info = await ffprobe(path, limits);
    return info.hasVideo;
  } catch (err) {
    if (err instanceof ProbeError && err.reason !== 'timeout') return false;
    throw err;
  }
}

export { ffprobe, ProbeError };
