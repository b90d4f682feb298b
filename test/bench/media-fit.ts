import { execFileSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ffmpegPath, ffprobe } from '#adapters/media-tools';
import { type FitPlan, fitPlan } from '#core/media-fit';
import { fitImage, fitVideo } from '#usecases/fit-media';
import { machine, table, today } from './support.ts';

// Media fitting (usecases/fit-media.ts) on the two sizes the issue names: a 20 MB photo to Bluesky
// (≤ 1,000,000 bytes: several JPEG attempts) and a 200 MB video to Bluesky (MOV → H.264/AAC MP4
// ≤ 100,000,000 bytes: a full re-encode). Both are generated here with the same ffmpeg. The figures
// are wall time, the peak RSS of the ffmpeg runs (VmHWM, read from /proc while they run) and of
// this Node process, the output's size and whether it decodes. Run alone:
// `node --import tsx test/bench/media-fit.ts` (prints the section; nothing else is written).

const MB = 1_000_000;

export interface FitRow {
  name: string;
  inputBytes: number;
  outputBytes: number;
  limit: number;
  ms: number;
  ffmpegPeakMb: number;
  nodePeakMb: number;
  decodes: boolean;
  summary: string;
}

function ffmpeg(args: string[]): void {
  execFileSync(ffmpegPath(), ['-v', 'error', '-nostdin', '-y', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

/** The highest VmHWM of any ffmpeg process working in `dir`, sampled every 50 ms until stopped. */
function watchPeak(dir: string): { stop(): number } {
  let peakKb = 0;
  const tick = async () => {
    for (const pid of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(pid)) continue;
      const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (!cmd.includes('ffmpeg') || !cmd.includes(dir)) continue;
      const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      if (hwm > peakKb) peakKb = hwm;
    }
  };
  const timer = setInterval(() => void tick(), 50);
  return {
    stop() {
      clearInterval(timer);
      return peakKb / 1024;
    },
  };
}

const planOf = (answer: ReturnType<typeof fitPlan>): FitPlan => {
  if (!answer || 'error' in answer) throw new Error(`no plan: ${JSON.stringify(answer)}`);
  return answer;
};

async function measure(
  name: string,
  dir: string,
  input: string,
  plan: FitPlan,
  limit: number,
): Promise<FitRow> {
  const inputBytes = (await stat(input)).size;
  const watch = watchPeak(dir);
  const t0 = performance.now();
  const made =
    plan.kind === 'image'
      ? await fitImage(input, dir, plan.ops, () => 900_000)
      : await fitVideo(input, dir, plan.ops, () => 900_000);
  const ms = performance.now() - t0;
  const ffmpegPeakMb = watch.stop();
  if ('message' in made) throw new Error(`${name}: ${made.message}`);
  const info = await ffprobe(made.path).catch(() => null);
  return {
    name,
    inputBytes,
    outputBytes: made.size,
    limit,
    ms,
    ffmpegPeakMb,
    nodePeakMb: process.resourceUsage().maxRSS / 1024,
    decodes: info?.hasVideo === true,
    summary: plan.summary,
  };
}

export async function benchMediaFit(): Promise<{ rows: FitRow[]; machine: string; date: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'herald-bench-fit-'));
  try {
    // A 24-megapixel photo of noise (noise does not compress: ≈ 20 MB at JPEG quality 2).
    const photo = join(dir, 'photo.jpg');
    ffmpeg([
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=6000x4000:rate=1,noise=alls=50:allf=t',
      '-frames:v',
      '1',
      '-q:v',
      '2',
      photo,
    ]);
    const photoBytes = (await stat(photo)).size;
    const imagePlan = planOf(
      fitPlan('bluesky', {
        kind: 'image',
        content_type: 'image/jpeg',
        size_bytes: photoBytes,
        width: 6000,
        height: 4000,
        duration_sec: null,
      }),
    );
    // A 1080p30 phone-like MOV of ≈ 200 MB: 5 s encoded at 16 Mbit/s, then copied end to end.
    const segment = join(dir, 'segment.mov');
    ffmpeg([
      ...[
        '-f',
        'lavfi',
        '-i',
        'testsrc2=size=1920x1080:rate=30',
        '-f',
        'lavfi',
        '-i',
        'sine=frequency=440:sample_rate=48000',
      ],
      ...['-t', '5', '-vf', 'noise=alls=12:allf=t', '-c:v', 'libx264', '-preset', 'ultrafast'],
      ...[
        '-b:v',
        '16M',
        '-maxrate',
        '16M',
        '-bufsize',
        '32M',
        '-pix_fmt',
        'yuv420p',
        '-c:a',
        'aac',
        '-f',
        'mov',
        segment,
      ],
    ]);
    const loops = Math.ceil((200 * MB) / (await stat(segment)).size);
    const clip = join(dir, 'clip.mov');
    ffmpeg(['-stream_loop', String(loops - 1), '-i', segment, '-c', 'copy', '-f', 'mov', clip]);
    await rm(segment);
    const clipInfo = await ffprobe(clip);
    const videoPlan = planOf(
      fitPlan('bluesky', {
        kind: 'video',
        content_type: 'video/quicktime',
        size_bytes: (await stat(clip)).size,
        width: clipInfo.width,
        height: clipInfo.height,
        duration_sec: clipInfo.durationSec,
      }),
    );
    const rows = [
      await measure(
        `${(photoBytes / MB).toFixed(1)} MB JPEG (6000×4000) → Bluesky image`,
        dir,
        photo,
        imagePlan,
        1_000_000,
      ),
      await measure(
        `${((await stat(clip)).size / MB).toFixed(0)} MB MOV (1080p30, ${clipInfo.durationSec?.toFixed(0)} s) → Bluesky video`,
        dir,
        clip,
        videoPlan,
        100_000_000,
      ),
    ];
    return { rows, machine: machine(), date: today() };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function mediaFitSection(r: Awaited<ReturnType<typeof benchMediaFit>>): string {
  const rows = r.rows.map((row) => [
    row.name,
    `${(row.inputBytes / MB).toFixed(1)} MB`,
    `${row.outputBytes.toLocaleString('en')} B (≤ ${row.limit.toLocaleString('en')})`,
    `${(row.ms / 1000).toFixed(1)} s`,
    `${row.ffmpegPeakMb.toFixed(0)} MB`,
    `${row.nodePeakMb.toFixed(0)} MB`,
    row.decodes ? 'yes' : 'NO',
  ]);
  return [
    `Measured ${r.date} on ${r.machine}, the installer package's ffmpeg (the layer's), one run each.`,
    '',
    table(
      ['case', 'input', 'rendition', 'time', 'ffmpeg peak RSS', 'Node peak RSS', 'decodes'],
      ['l', 'r', 'r', 'r', 'r', 'r', 'c'],
      rows,
    ),
    '',
    ...r.rows.map((row) => `- ${row.name}: ${row.summary}.`),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(mediaFitSection(await benchMediaFit()));
}
