import type { Platform } from './constants.ts';
import type { FieldError } from './errors.ts';
import type { MediaAssetRecord } from './media.ts';

// What each platform takes of an image or a video, in the platform's own numbers (docs/api/media.md,
// "What each platform takes"): createPost, updatePost and validatePost check every media item's
// probed facts (size, duration, width/height, container) against its channel's platform here, so a
// post the platform would refuse is refused before it is scheduled, not hours later at delivery.
// A fact the probe did not give (null) is not checked. The contract fakes (test/fakes/<platform>.ts)
// refuse with the same numbers where they look at the media.

const MB = 1024 * 1024;

export interface KindLimits {
  /** Largest file, in bytes. */
  maxBytes?: number;
  /** Per container type, where it differs from maxBytes (X's animated GIFs). */
  maxBytesByType?: Readonly<Record<string, number>>;
  minSec?: number;
  maxSec?: number;
  /** Within a carousel (several media items), where the platform is stricter. */
  carouselMaxSec?: number;
  /** Width ÷ height bounds (inclusive). */
  minAspect?: number;
  maxAspect?: number;
  /** Smallest width and height in pixels (Facebook Reels and Stories: 540×960). */
  minWidth?: number;
  minHeight?: number;
  /** Container types taken (absent: every type Herald accepts for the kind). */
  formats?: readonly string[];
  /** Where the numbers come from. */
  source: string;
  /** How messages name the media, where not `<platform> <kind>s` (a format's: "instagram stories"). */
  label?: string;
}

export interface PlatformMediaLimits {
  image: KindLimits;
  video: KindLimits;
}

const IMAGES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

export const MEDIA_LIMITS: Readonly<Record<Platform, PlatformMediaLimits>> = {
  x: {
    image: {
      maxBytes: 5 * MB,
      maxBytesByType: { 'image/gif': 15 * MB },
      formats: IMAGES,
      source: 'X media best practices: images ≤ 5 MB, animated GIFs ≤ 15 MB (docs.x.com, media upload)',
    },
    video: {
      maxBytes: 512 * MB,
      minSec: 0.5,
      maxSec: 140,
      minAspect: 1 / 3,
      maxAspect: 3,
      formats: ['video/mp4', 'video/quicktime'],
      source: 'X media best practices: video ≤ 512 MB, 0.5–140 s, aspect 1:3–3:1, MP4/MOV (docs.x.com)',
    },
  },
  bluesky: {
    image: {
      maxBytes: 1_000_000,
      formats: IMAGES,
      source: 'app.bsky.embed.images lexicon: image blob maxSize 1000000 bytes',
    },
    video: {
      maxBytes: 100_000_000,
      maxSec: 180,
      formats: ['video/mp4'],
      source:
        'app.bsky.embed.video lexicon: maxSize 100000000, accept video/mp4; uploads ≤ 3 min (docs.bsky.app)',
    },
  },
  threads: {
    image: {
      maxBytes: 8 * MB,
      minAspect: 1 / 10,
      maxAspect: 10,
      formats: ['image/jpeg', 'image/png'],
      source: 'Threads API media specifications: JPEG/PNG ≤ 8 MB, aspect ratio limit 10:1',
    },
    video: {
      maxBytes: 1024 * MB,
      maxSec: 300,
      minAspect: 1 / 10,
      maxAspect: 10,
      formats: ['video/mp4', 'video/quicktime'],
      source: 'Threads API media specifications: MOV/MP4 ≤ 1 GB, ≤ 5 min',
    },
  },
  instagram: {
    image: {
      maxBytes: 8 * MB,
      minAspect: 4 / 5,
      maxAspect: 1.91,
      formats: ['image/jpeg'],
      source: 'Instagram Graph API, IG User media: JPEG only, ≤ 8 MB, aspect 4:5 to 1.91:1',
    },
    video: {
      maxBytes: 300 * MB,
      minSec: 3,
      maxSec: 900,
      carouselMaxSec: 60,
      minAspect: 0.01,
      maxAspect: 10,
      formats: ['video/mp4', 'video/quicktime'],
      source:
        'Instagram Graph API, IG User media: reels MOV/MP4 ≤ 300 MB, 3 s–15 min; carousel videos ≤ 60 s',
    },
  },
  facebook: {
    image: {
      maxBytes: 10 * MB,
      formats: ['image/jpeg', 'image/png', 'image/gif'],
      source: 'Graph API, Page photos: JPEG, PNG, GIF (also BMP, TIFF) ≤ 10 MB',
    },
    video: {
      formats: ['video/mp4', 'video/quicktime', 'video/webm'],
      source: 'Graph API, Page videos: ≤ 10 GB and 240 min, beyond what Herald takes (docs/api/media.md)',
    },
  },
  linkedin: {
    image: {
      formats: ['image/jpeg', 'image/png', 'image/gif'],
      source: 'LinkedIn Images API: JPG, GIF, PNG (≤ 36,152,320 pixels)',
    },
    video: {
      maxBytes: 500 * MB,
      minSec: 3,
      maxSec: 1800,
      formats: ['video/mp4'],
      source: 'LinkedIn Videos API: MP4, 75 KB–500 MB, 3 s–30 min',
    },
  },
  tiktok: {
    image: {
      maxBytes: 20 * MB,
      formats: ['image/jpeg', 'image/webp'],
      source: 'TikTok Content Posting API, photo: JPG/JPEG/WEBP ≤ 20 MB',
    },
    video: {
      maxSec: 600,
      minSec: 3,
      formats: ['video/mp4', 'video/webm', 'video/quicktime'],
      source:
        'TikTok Content Posting API, video: MP4/WebM/MOV ≤ 4 GB, 3 s to the creator’s max_video_post_duration_sec (≤ 10 min)',
    },
  },
  youtube: {
    image: { source: 'YouTube takes no image posts through the Data API (videos only)' },
    video: {
      maxSec: 12 * 3600,
      source: 'YouTube Data API videos.insert: ≤ 256 GB, ≤ 12 h (verified accounts); MOV, MP4, WebM and more',
    },
  },
  pinterest: {
    image: {
      maxBytes: 20 * MB,
      formats: IMAGES,
      source: 'Pinterest API v5, image Pins: BMP, JPEG, PNG, TIFF, GIF, WEBP ≤ 20 MB',
    },
    video: {
      maxBytes: 2048 * MB,
      minSec: 4,
      maxSec: 900,
      formats: ['video/mp4', 'video/quicktime'],
      source: 'Pinterest API v5, video Pins: MP4/MOV/M4V ≤ 2 GB, 4 s–15 min',
    },
  },
  mastodon: {
    image: {
      maxBytes: 16 * MB,
      formats: IMAGES,
      source: "Mastodon's defaults (MediaAttachment IMAGE_LIMIT 16 MB); an instance may set its own",
    },
    video: {
      maxBytes: 99 * MB,
      formats: ['video/mp4', 'video/webm', 'video/quicktime'],
      source: "Mastodon's defaults (MediaAttachment VIDEO_LIMIT 99 MB); an instance may set its own",
    },
  },
};

const mb = (n: number) => (n % MB === 0 ? `${n / MB} MB` : `${n.toLocaleString('en')} bytes`);
const ratio = (n: number) => (n >= 1 ? `${+n.toFixed(2)}:1` : `1:${+(1 / n).toFixed(2)}`);

/**
 * The field errors of one media item of a variant (a ready asset of the kind the item says) on
 * `platform`, at `pointer` (`/variants/<i>/media/<k>`). `carousel`: the variant carries several items.
 */
export function checkMediaFacts(
  platform: Platform,
  asset: Pick<MediaAssetRecord, 'kind' | 'content_type' | 'size_bytes' | 'width' | 'height' | 'duration_sec'>,
  pointer: string,
  opts: { carousel?: boolean; limits?: KindLimits | undefined } = {},
): FieldError[] {
  if (asset.kind !== 'image' && asset.kind !== 'video') return [];
  // A format's own limits (core/formats.ts: an Instagram story, a YouTube Short) replace the platform's.
  const rule = opts.limits ?? MEDIA_LIMITS[platform][asset.kind];
  const errors: FieldError[] = [];
  const what = rule.label ?? `${platform} ${asset.kind}s`;
  if (rule.formats && !rule.formats.includes(asset.content_type))
    errors.push({
      pointer,
      code: 'unsupported_format',
      message: `${platform} takes ${asset.kind}s as ${rule.formats.join(', ')}; this one is ${asset.content_type}.`,
    });
  const maxBytes = rule.maxBytesByType?.[asset.content_type] ?? rule.maxBytes;
  if (maxBytes !== undefined && asset.size_bytes > maxBytes)
    errors.push({
      pointer,
      code: 'media_too_large',
      message: `${what} may be at most ${mb(maxBytes)} (${maxBytes} bytes); this one is ${asset.size_bytes} bytes.`,
    });
  const maxSec = (opts.carousel ? rule.carouselMaxSec : undefined) ?? rule.maxSec;
  if (asset.duration_sec !== null && maxSec !== undefined && asset.duration_sec > maxSec)
    errors.push({
      pointer,
      code: 'media_too_long',
      message: `${what}${opts.carousel && rule.carouselMaxSec ? ' in a carousel' : ''} may last at most ${maxSec} s; this one lasts ${asset.duration_sec} s.`,
    });
  if (asset.duration_sec !== null && rule.minSec !== undefined && asset.duration_sec < rule.minSec)
    errors.push({
      pointer,
      code: 'media_too_short',
      message: `${what} must last at least ${rule.minSec} s; this one lasts ${asset.duration_sec} s.`,
    });
  if (asset.width && asset.height && (rule.minAspect !== undefined || rule.maxAspect !== undefined)) {
    const aspect = asset.width / asset.height;
    // A hair of tolerance: 1080×566 is Instagram's own example of 1.91:1 (1.908).
    const low = (rule.minAspect ?? 0) - 0.005;
    const high = (rule.maxAspect ?? Number.POSITIVE_INFINITY) + 0.005;
    if (aspect < low || aspect > high)
      errors.push({
        pointer,
        code: 'unsupported_aspect_ratio',
        message: `${what} must be between ${ratio(rule.minAspect ?? 0)} and ${ratio(rule.maxAspect ?? Number.POSITIVE_INFINITY)} (width:height); this one is ${asset.width}×${asset.height} (${ratio(aspect)}).`,
      });
  }
  if (
    asset.width &&
    asset.height &&
    (asset.width < (rule.minWidth ?? 0) || asset.height < (rule.minHeight ?? 0))
  )
    errors.push({
      pointer,
      code: 'media_too_small',
      message: `${what} must be at least ${rule.minWidth ?? 0}×${rule.minHeight ?? 0} pixels; this one is ${asset.width}×${asset.height}.`,
    });
  return errors;
}
