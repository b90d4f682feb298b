import { execFile } from 'node:child_process';
import { rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { localPdfReader } from './pdf-reader-bundle.ts';

// ffprobe and ffmpeg, run as child processes on files the caller has downloaded to /tmp. In Lambda
// the binaries come from a layer (/opt/bin) named by HERALD_FFPROBE_PATH / HERALD_FFMPEG_PATH; the
// installer packages are only the local/test fallback and are loaded lazily through a renamed
// require, which bundlers leave alone, so no function bundle carries them.

/**
 * Every run of either tool is bounded, as the bytes it reads come from anyone with an API key:
 * `timeoutMs` (then SIGKILL and a `timeout` ProbeError), and `memoryMb` of address space
 * (`ulimit -v` in the shell that execs the tool; past it allocations fail and the tool exits or
 * crashes: a `failed` ProbeError) with no single allocation over `maxAllocMb` (the tools' own
 * `-max_alloc`). The probe function's 3008 MB leave room for the Node process beside the tool.
 */
export interface ToolLimits {
  timeoutMs: number;
  memoryMb: number;
  maxAllocMb: number;
}

export const DEFAULT_LIMITS: ToolLimits = { timeoutMs: 20_000, memoryMb: 2048, maxAllocMb: 512 };

/**
 * The tool's whole environment: no AWS credentials or anything else of the function's; PATH for
 * the shell, the C locale for stable output.
 */
export const TOOL_ENV: Readonly<Record<string, string>> = { PATH: '/usr/bin:/bin', LC_ALL: 'C' };

/** Sets the address-space limit, then becomes the tool (exec: the timeout's SIGKILL reaches it). */
const LIMITED_EXEC = 'ulimit -v "$1" || exit 125; shift; exec "$@"';

export type ProbeErrorReason = 'timeout' | 'failed' | 'unreadable' | 'no_frame';

/**
 * The file could not be probed: the tool exited non-zero (`failed`), found no audio or video
 * (`unreadable`), made no poster (`no_frame`), or ran out of time (`timeout`). A missing or
 * unrunnable binary is a plain Error instead.
 */
export class ProbeError extends Error {
  override readonly name = 'ProbeError';
  constructor(
    readonly reason: ProbeErrorReason,
    message: string,
    /** The tool's stderr (trimmed), for the logs; never shown to API clients. */
    readonly detail = '',
  ) {
    super(message);
  }
}

const loadPackage = createRequire(import.meta.url);

function binary(envName: string, pkg: string): string {
  const fromEnv = process.env[envName];
  if (fromEnv) return fromEnv;
  return (loadPackage(pkg) as { path: string }).path;
}

export const ffprobePath = () => binary('HERALD_FFPROBE_PATH', '@ffprobe-installer/ffprobe');
export const ffmpegPath = () => binary('HERALD_FFMPEG_PATH', '@ffmpeg-installer/ffmpeg');

/** Runs ffmpeg or ffprobe within `limits`; resolves with stdout, rejects with a ProbeError. */
export function runTool(
  file: string,
  args: readonly string[],
  tool: string,
  limits: ToolLimits = DEFAULT_LIMITS,
): Promise<string> {
  return runLimited(file, ['-max_alloc', String(limits.maxAllocMb * 1024 * 1024), ...args], tool, limits);
}

/** Runs any program within `limits`' time and address space (runTool without the tools' flags). */
export function runLimited(
  file: string,
  argv: readonly string[],
  tool: string,
  limits: ToolLimits = DEFAULT_LIMITS,
): Promise<string> {
  const { timeoutMs, memoryMb } = limits;
  return new Promise((resolve, reject) => {
    execFile(
      '/bin/sh',
      ['-c', LIMITED_EXEC, 'sh', String(memoryMb * 1024), file, ...argv],
      {
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
        env: TOOL_ENV,
      },
      (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        // A string code (ENOENT, EACCES…) means the shell did not run, 126/127 that the tool did
        // not (missing or not executable), 125 that the limit could not be set: a deployment fault
        // (500), not a ProbeError, which callers turn into "these bytes are not media" (400).
        const notRun =
          typeof error.code === 'string' || (!error.killed && [125, 126, 127].includes(Number(error.code)));
        if (notRun) {
          const why = stderr.trim().slice(-500) || error.message;
          return reject(new Error(`cannot run ${tool} at ${file}: ${why}`, { cause: error }));
        }
        const detail = stderr.trim().slice(-2000);
        if (error.killed)
          reject(new ProbeError('timeout', `${tool} timed out after ${timeoutMs} ms and was killed`, detail));
        else if (error.signal)
          reject(
            new ProbeError('failed', `${tool} died of ${error.signal} (within ${memoryMb} MB?)`, detail),
          );
        else reject(new ProbeError('failed', `${tool} failed: ${detail || error.message}`, detail));
      },
    );
  });
}

export interface ProbeResult {
  /** Null when the container tells no duration (e.g. a still image). */
  durationSec: number | null;
  /** Displayed size of the first video stream (rotation applied); null without video. */
  width: number | null;
  height: number | null;
  /** Real video only: an MP3's or M4A's cover art (an `attached_pic` stream) does not count. */
  hasVideo: boolean;
  hasAudio: boolean;
  /** ffprobe's demuxer list, e.g. `mov,mp4,m4a,3gp,3g2,mj2`, `matroska,webm`, `mp3`, `wav`. */
  formatName: string;
  videoCodec: string | null;
  audioCodec: string | null;
}

interface FfprobeStream {
  codec_type?: string;
  codec_name?: string;
  width?: number;
  height?: number;
  duration?: string;
  disposition?: { attached_pic?: number };
  tags?: { rotate?: string };
  side_data_list?: { rotation?: number }[];
}

interface FfprobeOutput {
  streams?: FfprobeStream[];
  format?: { format_name?: string; duration?: string };
}

const seconds = (s: string | undefined) => {
  const n = Number(s);
  return s !== undefined && Number.isFinite(n) && n >= 0 ? n : null;
};

/** Phones store portrait video as landscape plus a display rotation (tag or display matrix). */
function rotation(s: FfprobeStream): number {
  const fromMatrix = s.side_data_list?.find((d) => typeof d.rotation === 'number')?.rotation;
  return Math.abs(Number(fromMatrix ?? s.tags?.rotate ?? 0)) % 180;
}

export async function ffprobe(filePath: string, limits?: ToolLimits): Promise<ProbeResult> {
  const out = await runTool(
    ffprobePath(),
    ['-v', 'error', '-print_format', 'json', '-show_format', '-show_streams', filePath],
    'ffprobe',
    limits,
  );
  let parsed: FfprobeOutput;
  try {
    parsed = JSON.parse(out) as FfprobeOutput;
  } catch {
    throw new ProbeError('unreadable', 'ffprobe printed no JSON', out.slice(0, 500));
  }
  const streams = parsed.streams ?? [];
  const video = streams.find((s) => s.codec_type === 'video' && !s.disposition?.attached_pic);
  const audio = streams.find((s) => s.codec_type === 'audio');
  if (!parsed.format || (!video && !audio)) {
    throw new ProbeError('unreadable', 'no audio or video stream found');
  }
  const turned = video ? rotation(video) === 90 : false;
  const w = video?.width ?? null;
  const h = video?.height ?? null;
  return {
    durationSec: seconds(parsed.format.duration) ?? seconds(video?.duration) ?? seconds(audio?.duration),
    width: turned ? h : w,
    height: turned ? w : h,
    hasVideo: video !== undefined,
    hasAudio: audio !== undefined,
    formatName: parsed.format.format_name ?? '',
    videoCodec: video?.codec_name ?? null,
    audioCodec: audio?.codec_name ?? null,
  };
}

async function nonEmpty(path: string): Promise<boolean> {
  const info = await stat(path).catch(() => null);
  return info?.isFile() === true && info.size > 0;
}

/**
 * A JPEG poster frame of a video, at most 1280 px wide (aspect kept, even height). Taken at 0.5 s,
 * past the black or fade-in first frame many clips start with; a video shorter than that yields no
 * frame there (ffmpeg still exits 0), so the first frame is taken instead. ffmpeg applies the
 * display rotation itself, so the poster matches `ffprobe`'s width/height. Returns `outJpegPath`.
 */
export async function posterFrame(
  videoPath: string,
  outJpegPath: string,
  limits?: ToolLimits,
): Promise<string> {
  for (const at of ['0.5', '0']) {
    // The image muxer leaves the file alone when no frame comes: a stale one must not pass.
    await rm(outJpegPath, { force: true });
    await runTool(
      ffmpegPath(),
      [
        ...['-v', 'error', '-nostdin', '-y', '-ss', at, '-i', videoPath],
        ...['-frames:v', '1', '-an', '-sn', '-vf', "scale='min(1280,iw)':-2", '-q:v', '3', outJpegPath],
      ],
      'ffmpeg',
      limits,
    );
    if (await nonEmpty(outJpegPath)) return outJpegPath;
  }
  throw new ProbeError('no_frame', 'ffmpeg produced no poster frame');
}

// ---- PDF --------------------------------------------------------------------------------------

/** What the PDF reader (pdf-render-child.ts) prints: its one line of JSON. */
type PdfAnswer =
  | { ok: true; pages: number; poster: { width: number; height: number } | null }
  | { ok: false; reason: 'encrypted' | 'too_many_pages' | 'unreadable'; pages?: number; detail?: string };

export interface PdfResult {
  pageCount: number;
  /** The poster's size in pixels; null when none was asked for. */
  poster: { width: number; height: number } | null;
}

/** Why a PDF is refused: `encrypted`, `too_many_pages` (with its count) or `unreadable`. */
export class PdfRefused extends Error {
  override readonly name = 'PdfRefused';
  constructor(
    readonly reason: 'encrypted' | 'too_many_pages' | 'unreadable',
    readonly pageCount: number | null,
    /** pdf.js's own words, for the logs. */
    readonly detail = '',
  ) {
    super(`PDF refused: ${reason}${detail ? ` (${detail})` : ''}`);
  }
}

/**
 * The reader's bundle and the directory holding pdf.js's standard_fonts/, cmaps/ and wasm/: in
 * Lambda the layer's (HERALD_PDF_RENDERER, its assets beside it); elsewhere the same bundle built
 * into the repository's .build/ and the installed pdfjs-dist's assets.
 */
export function pdfRenderer(): { script: string; assets: string } {
  const fromEnv = process.env.HERALD_PDF_RENDERER;
  if (fromEnv) return { script: fromEnv, assets: dirname(fromEnv) };
  return { script: localPdfReader(), assets: dirname(loadPackage.resolve('pdfjs-dist/package.json')) };
}

/**
 * The reader's limits: DEFAULT_LIMITS' time, and more address space than ffmpeg's, since Node and
 * skia reserve about 2 GB of it before reading a byte (measured: 0.75 GB for Node, 1.2 GB more
 * once the canvas binary loads). What it really uses stays small: embedded images over 25 MP are
 * not decoded, the canvas is at most 1280 × 4096 and the heap at most NODE_FLAGS' size.
 */
export const PDF_LIMITS: ToolLimits = { ...DEFAULT_LIMITS, memoryMb: 3072 };

/**
 * Node flags of the reader: without the WebAssembly trap handler V8 does not reserve its 10 GB
 * guard regions per memory, so pdf.js's decoders (OpenJPEG, JBIG2) run under the address-space
 * limit; a JavaScript heap well inside that limit, so the heap fails first with a clear error.
 */
const NODE_FLAGS = ['--disable-wasm-trap-handler', '--max-old-space-size=768'];

/**
 * Page count of a PDF and, when `posterPath` is given, its first page rendered as a JPEG there
 * (at most 1280 px wide). pdf.js runs in a child Node process within `limits` (timeout, address
 * space; `maxAllocMb` is ffmpeg's and unused here), like ffmpeg: a timeout is a `timeout` ProbeError, a crash a `failed` one. A PDF that is
 * encrypted, has more than `maxPages` pages, or cannot be read is a PdfRefused.
 */
export async function pdfProbe(
  pdfPath: string,
  posterPath: string | null,
  maxPages: number,
  limits: ToolLimits = PDF_LIMITS,
): Promise<PdfResult> {
  const { script, assets } = pdfRenderer();
  if (posterPath) await rm(posterPath, { force: true });
  const out = await runLimited(
    process.execPath,
    [...NODE_FLAGS, script, pdfPath, posterPath ?? '-', String(maxPages), assets],
    'the PDF reader',
    limits,
  );
  let answer: PdfAnswer;
  try {
    answer = JSON.parse(out.trim().split('\n').pop() ?? '') as PdfAnswer;
  } catch {
    throw new ProbeError('failed', 'the PDF reader printed no answer', out.slice(0, 500));
  }
  if (!answer.ok) throw new PdfRefused(answer.reason, answer.pages ?? null, answer.detail ?? '');
  if (posterPath && !(await nonEmpty(posterPath)))
    throw new ProbeError('no_frame', 'the PDF reader wrote no poster');
  return { pageCount: answer.pages, poster: answer.poster };
}
