import type { Platform } from './constants.ts';
import type { FieldError } from './errors.ts';
import type { MediaAssetRecord } from './media.ts';
import { type KindLimits, MEDIA_LIMITS } from './media-limits.ts';

// Media fitting (`options.media_fit: "auto"`): which of an asset's probed facts the platform would
// refuse can be mended by a derived rendition, and how. Pure: createPost/validatePost drop the
// errors a plan mends (and refuse the rest with the same media codes); the delivery worker asks the
// fit function (usecases/fit-media.ts, the one with ffmpeg) to make the planned rendition, once per
// (asset, rendition), beside the original, which never changes.
//
// What is never fitted: a video longer (or shorter) than the platform takes (no trimming, no
// looping), audio, documents, and an image or video whose facts are missing (no size to aim at).

/** The codes a rendition can mend; media_too_long and media_too_short are not among them. */
export const FITTABLE_CODES: ReadonlySet<string> = new Set([
  'media_too_large',
  'unsupported_format',
  'unsupported_aspect_ratio',
]);

/** Pad to this aspect range (width ÷ height); both bounds inclusive, with letterbox or pillarbox bars. */
export interface PadOp {
  op: 'pad';
  width: number;
  height: number;
}

/** Re-encode an image as a baseline JPEG of at most `maxBytes` (lower quality, then smaller sides). */
export interface JpegOp {
  op: 'jpeg';
  maxBytes: number;
}

/**
 * Re-encode a video as H.264 (yuv420p) and AAC in MP4 (faststart), at most `maxBytes`: the bitrate
 * comes from the budget over the duration. A file already H.264/AAC and within the budget is
 * copied into MP4 instead (the fit function checks its streams).
 */
export interface Mp4Op {
  op: 'mp4';
  maxBytes: number;
  durationSec: number;
}

export type FitOp = PadOp | JpegOp | Mp4Op;

export interface FitPlan {
  /** Stable for (platform, limits, shape): the rendition's key is `<asset dir>/_fit-<rendition>.<ext>`. */
  rendition: string;
  kind: 'image' | 'video';
  /** Applied in order. */
  ops: FitOp[];
  /** The rendition's content type and extension. */
  contentType: 'image/jpeg' | 'video/mp4';
  ext: 'jpg' | 'mp4';
  /** What is done, in words (the delivery's `media_fitted` warning). */
  summary: string;
}

export type FitAnswer = FitPlan | null | { error: FieldError };

type Facts = Pick<
  MediaAssetRecord,
  'kind' | 'content_type' | 'size_bytes' | 'width' | 'height' | 'duration_sec'
>;

/** Renditions aim below the limit by this much: container overhead, and an encoder's overshoot. */
const VIDEO_BUDGET = 0.9;
/** Below this a video is not worth watching: refused rather than fitted into a smear. */
export const MIN_VIDEO_KBPS = 150;
/** The audio track of a rendition (AAC). */
export const AUDIO_KBPS = 128;

/** No limit given (e.g. Facebook videos): a re-encode still needs a budget. */
const NO_LIMIT_BYTES = 1024 * 1024 * 1024;

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);

/**
 * The smallest frame that holds `width`×`height` within [minAspect, maxAspect]: bars above and
 * below a too-wide picture, at its sides for a too-tall one. Null when the aspect already fits.
 */
export function padTarget(
  width: number,
  height: number,
  minAspect: number | undefined,
  maxAspect: number | undefined,
): { width: number; height: number } | null {
  const aspect = width / height;
  // The same hair of tolerance as checkMediaFacts.
  if (maxAspect !== undefined && aspect > maxAspect + 0.005)
    return { width: even(width), height: even(Math.ceil(width / maxAspect)) };
  if (minAspect !== undefined && aspect < minAspect - 0.005)
    return { width: even(Math.ceil(height * minAspect)), height: even(height) };
  return null;
}

const ratio = (n: number) => `${+n.toFixed(2)}`;

/**
 * The plan that pads (when `pad`) and then re-encodes with `encode`: its rendition is named by the
 * platform, the kind, the byte budget and the aspect range padded to.
 */
function planOf(
  platform: Platform,
  asset: Facts,
  rule: KindLimits,
  pad: { width: number; height: number } | null,
  encode: JpegOp | Mp4Op,
): FitPlan {
  const kind = encode.op === 'jpeg' ? 'image' : 'video';
  const ops: FitOp[] = [];
  const did: string[] = [];
  if (pad) {
    ops.push({ op: 'pad', ...pad });
    did.push(`padded ${asset.width}×${asset.height} to ${pad.width}×${pad.height}`);
  }
  ops.push(encode);
  did.push(
    encode.op === 'mp4'
      ? `re-encoded as H.264/AAC MP4 ≤ ${encode.maxBytes} bytes`
      : asset.content_type === 'image/jpeg'
        ? `re-encoded as JPEG ≤ ${encode.maxBytes} bytes`
        : `re-encoded ${asset.content_type} as JPEG ≤ ${encode.maxBytes} bytes`,
  );
  const shape =
    pad && rule.minAspect !== undefined && rule.maxAspect !== undefined
      ? `-pad${ratio(rule.minAspect)}-${ratio(rule.maxAspect)}`
      : '';
  return {
    rendition: `${platform}-${kind}-${encode.maxBytes}${shape}`,
    kind,
    ops,
    contentType: kind === 'image' ? 'image/jpeg' : 'video/mp4',
    ext: kind === 'image' ? 'jpg' : 'mp4',
    summary: did.join(', '),
  };
}

/**
 * How to fit `asset` to `platform`, from its probed facts: a plan (a rendition to derive), null
 * (the platform takes the asset as it is), or the field error of what cannot be fitted (at
 * `opts.pointer`, with the media codes).
 */
export function fitPlan(
  platform: Platform,
  asset: Facts,
  opts: { pointer?: string; carousel?: boolean } = {},
): FitAnswer {
  const pointer = opts.pointer ?? '';
  if (asset.kind !== 'image' && asset.kind !== 'video') return null;
  const rule = MEDIA_LIMITS[platform][asset.kind];
  const refuse = (code: string, message: string) => ({ error: { pointer, code, message } });

  if (asset.kind === 'image') {
    // YouTube takes no images: nothing a rendition changes (checkVariant refuses the kind).
    if (!rule.formats && rule.maxBytes === undefined && rule.minAspect === undefined) return null;
    if (!asset.width || !asset.height)
      return refuse('unsupported_format', 'The image could not be measured, so it cannot be fitted.');
    const pad = padTarget(asset.width, asset.height, rule.minAspect, rule.maxAspect);
    const maxBytes = rule.maxBytesByType?.['image/jpeg'] ?? rule.maxBytes;
    const wrongFormat = rule.formats !== undefined && !rule.formats.includes(asset.content_type);
    const tooLarge = maxBytes !== undefined && asset.size_bytes > maxBytes;
    if (!pad && !wrongFormat && !tooLarge) return null;
    const budget = maxBytes ?? 20 * 1024 * 1024;
    return planOf(platform, asset, rule, pad, { op: 'jpeg', maxBytes: budget });
  }

  // Video: no trimming and no looping.
  const maxSec = (opts.carousel ? rule.carouselMaxSec : undefined) ?? rule.maxSec;
  if (asset.duration_sec !== null && maxSec !== undefined && asset.duration_sec > maxSec)
    return refuse(
      'media_too_long',
      `${platform} videos may last at most ${maxSec} s and this one lasts ${asset.duration_sec} s; media_fit does not trim.`,
    );
  const pad =
    asset.width && asset.height ? padTarget(asset.width, asset.height, rule.minAspect, rule.maxAspect) : null;
  const wrongFormat = rule.formats !== undefined && !rule.formats.includes(asset.content_type);
  const tooLarge = rule.maxBytes !== undefined && asset.size_bytes > rule.maxBytes;
  if (!pad && !wrongFormat && !tooLarge) return null;
  if (!asset.duration_sec)
    return refuse('media_too_large', 'The video has no known duration, so no bitrate can be set to fit it.');
  const maxBytes = rule.maxBytes ?? NO_LIMIT_BYTES;
  const kbps = (maxBytes * VIDEO_BUDGET * 8) / 1000 / asset.duration_sec - AUDIO_KBPS;
  if (kbps < MIN_VIDEO_KBPS)
    return refuse(
      'media_too_large',
      `${platform} videos may be at most ${maxBytes} bytes: ${asset.duration_sec} s of video would get under ${MIN_VIDEO_KBPS} kbit/s, too little to fit it.`,
    );
  return planOf(platform, asset, rule, pad, { op: 'mp4', maxBytes, durationSec: asset.duration_sec });
}

/**
 * checkMediaFacts' errors of one item as media_fit `auto` leaves them: the ones a plan mends are
 * dropped; what cannot be fitted stays, with the plan's own error when it adds one.
 */
export function fittedErrors(
  platform: Platform,
  asset: Facts,
  errors: FieldError[],
  opts: { pointer: string; carousel?: boolean },
): FieldError[] {
  if (!errors.some((e) => FITTABLE_CODES.has(e.code))) return errors;
  const plan = fitPlan(platform, asset, opts);
  // Not fittable: every refusal stands, the plan's wording in place of its code's.
  if (plan && 'error' in plan) return [...errors.filter((e) => e.code !== plan.error.code), plan.error];
  return plan ? errors.filter((e) => !FITTABLE_CODES.has(e.code)) : errors;
}

/** The rendition's object key: beside the original (`…/<med_id>/_fit-<rendition>.<ext>`). */
export function renditionKeyOf(objectKey: string, plan: Pick<FitPlan, 'rendition' | 'ext'>): string {
  return `${objectKey.slice(0, objectKey.lastIndexOf('/'))}/_fit-${plan.rendition}.${plan.ext}`;
}

/**
 * Every rendition key an asset can have (one per platform whose plan fits it, and their markers):
 * deleting the asset deletes these too. Derived from the facts, so nothing has to list them.
 */
export function renditionKeysOf(asset: Facts & Pick<MediaAssetRecord, 'object_key'>): string[] {
  const keys = new Set<string>();
  for (const platform of Object.keys(MEDIA_LIMITS) as Platform[])
    for (const carousel of [false, true]) {
      const plan = fitPlan(platform, asset, { carousel });
      if (plan && !('error' in plan)) keys.add(renditionKeyOf(asset.object_key, plan));
    }
  return [...keys].flatMap((k) => [k, `${k}.pending`]);
}
