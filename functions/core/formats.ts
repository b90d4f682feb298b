import type { MediaKind, Platform } from './constants.ts';
import type { FieldError } from './errors.ts';
import { type MediaAssetRecord, mediaIdFromUrl } from './media.ts';
import { type KindLimits, MEDIA_LIMITS } from './media-limits.ts';
import { FORMATS, POLL_PLATFORMS, textLength } from './platforms.ts';

// What a variant may carry in each (platform, format): a Story's single item and no caption, a
// Reel's one video, a Short's shape and length, a LinkedIn document's one PDF, a poll without
// media, TikTok's inbox mode without the settings the creator makes in the app, YouTube's
// thumbnail and publish time. createPost, updatePost and validatePost run these beside the
// platform rules of core/platforms.ts (validatePostInput); the numbers are each platform's own,
// cited where they are set. The schema of each option is in core/platforms.ts: these rules look at
// combinations only, and skip a value the schema refuses (that error is reported there).

const MB = 1024 * 1024;
/** The LinkedIn Documents API's limits for a document post (PDF, 100 MB, 300 pages). */
export const DOCUMENT_MAX_BYTES = 100 * MB;
export const DOCUMENT_MAX_PAGES = 300;
/** YouTube thumbnails.set: image/jpeg or image/png, at most 2 MB. */
export const THUMBNAIL_MAX_BYTES = 2 * MB;
export const THUMBNAIL_TYPES = ['image/jpeg', 'image/png'] as const;
/** A LinkedIn poll's question (content.poll.question) is at most 140 characters. */
export const LINKEDIN_POLL_QUESTION_MAX = 140;

/** The format a variant asks for: its `options.format` when the platform takes it, else the default. */
export function formatOf(platform: Platform, options: Record<string, unknown> | undefined): string | null {
  const formats = FORMATS[platform];
  const asked = options?.format;
  if (typeof asked === 'string' && formats.includes(asked)) return asked;
  return formats[0] ?? null;
}

const withoutCarousel = ({ carouselMaxSec: _c, ...rest }: KindLimits): KindLimits => rest;

// Facebook Stories and Reels share one video specification: 9:16, at least 540×960, 3–90 s.
const FACEBOOK_VERTICAL_VIDEO = {
  minSec: 3,
  maxSec: 90,
  minAspect: 9 / 16,
  maxAspect: 9 / 16,
  minWidth: 540,
  minHeight: 960,
  formats: ['video/mp4', 'video/quicktime'],
} as const satisfies Omit<KindLimits, 'source'>;

/**
 * Media limits of a format, where they differ from the platform's (core/media-limits.ts): the
 * probed facts of each item are checked against these instead. Absent: the platform's.
 */
export const FORMAT_MEDIA_LIMITS: Partial<
  Record<Platform, Record<string, Partial<Record<'image' | 'video', KindLimits>>>>
> = {
  instagram: {
    story: {
      image: {
        maxBytes: 8 * MB,
        formats: ['image/jpeg'],
        label: 'instagram stories',
        source:
          'Instagram Graph API, IG User media, story images: JPEG, ≤ 8 MB, 9:16 recommended (any ratio taken)',
      },
      video: {
        maxBytes: 100 * MB,
        minSec: 3,
        maxSec: 60,
        formats: ['video/mp4', 'video/quicktime'],
        label: 'instagram story videos',
        source: 'Instagram Graph API, IG User media, story videos: MOV/MP4, ≤ 100 MB, 3–60 s',
      },
    },
    reel: {
      video: {
        ...withoutCarousel(MEDIA_LIMITS.instagram.video),
        label: 'instagram reels',
        source: 'Instagram Graph API, IG User media, Reels specifications: MOV/MP4 ≤ 300 MB, 3 s–15 min',
      },
    },
  },
  facebook: {
    story: {
      image: {
        ...MEDIA_LIMITS.facebook.image,
        label: 'facebook story photos',
        source: 'Facebook Stories API, photo specifications: JPEG, PNG, GIF (also BMP, TIFF) ≤ 10 MB',
      },
      video: {
        ...FACEBOOK_VERTICAL_VIDEO,
        label: 'facebook story videos',
        source:
          'Facebook Stories API, video specifications: 9:16, at least 540×960, 3–90 s, .mp4 recommended',
      },
    },
    reel: {
      video: {
        ...FACEBOOK_VERTICAL_VIDEO,
        label: 'facebook reels',
        source: 'Facebook Reels Publishing API, video specifications: 9:16, at least 540×960, 3–90 s',
      },
    },
  },
  youtube: {
    short: {
      video: {
        ...MEDIA_LIMITS.youtube.video,
        maxSec: 180,
        maxAspect: 1,
        label: 'youtube shorts',
        source:
          'YouTube Shorts: a square or vertical video of up to 3 minutes (YouTube Help, "Upload YouTube Shorts")',
      },
    },
  },
};

/** The limits an item of `kind` is checked against in `format` (undefined: the platform's). */
export function formatMediaLimits(
  platform: Platform,
  format: string | null,
  kind: MediaKind,
): KindLimits | undefined {
  if (!format || (kind !== 'image' && kind !== 'video')) return undefined;
  return FORMAT_MEDIA_LIMITS[platform]?.[format]?.[kind];
}

/** What a variant carries, as these rules read it (a createPost variant). */
export interface FormatVariant {
  body: string;
  media?: ReadonlyArray<{ url: string; type: MediaKind; alt?: string | undefined }> | undefined;
  options?: Record<string, unknown> | undefined;
  first_comment?: { body: string } | null | undefined;
}

/** What the rules read beside the variant: the assets the post names, the post's title, the time. */
export interface FormatContext {
  media: ReadonlyMap<string, MediaAssetRecord>;
  /** The post's title (a LinkedIn poll's question). */
  title?: string | null | undefined;
  now: Date;
}

const err = (pointer: string, code: string, message: string): FieldError => ({ pointer, code, message });

type Check = (platform: Platform, v: FormatVariant, base: string, ctx: FormatContext) => FieldError[];

/** One image or video and nothing else (a Story): Instagram and Facebook publish exactly one. */
function oneItem(platform: Platform, v: FormatVariant, base: string, what: string): FieldError[] {
  const items = v.media ?? [];
  if (items.length === 0)
    return [err(`${base}/media`, 'media_required', `A ${platform} ${what} needs one image or video.`)];
  if (items.length > 1)
    return [
      err(
        `${base}/media`,
        'too_many_media',
        `A ${platform} ${what} carries exactly one image or video; this one has ${items.length}.`,
      ),
    ];
  return [];
}

/** One video and nothing else (a Reel). */
function oneVideo(platform: Platform, v: FormatVariant, base: string, what: string): FieldError[] {
  const items = v.media ?? [];
  if (items.length === 0)
    return [err(`${base}/media`, 'media_required', `A ${platform} ${what} needs one video.`)];
  if (items.length > 1)
    return [
      err(
        `${base}/media`,
        'too_many_media',
        `A ${platform} ${what} carries exactly one video; this one has ${items.length} items.`,
      ),
    ];
  if (items[0]?.type !== 'video')
    return [
      err(
        `${base}/media/0/type`,
        'unsupported_media',
        `A ${platform} ${what} is a video; this item is ${items[0]?.type}.`,
      ),
    ];
  return [];
}

/** A Story has no caption (Instagram: media_type=STORIES takes none; Facebook Stories carry no text). */
function noText(platform: Platform, v: FormatVariant, base: string, what: string): FieldError[] {
  if (v.body.trim() === '') return [];
  return [
    err(
      `${base}/body`,
      'text_too_long',
      `A ${platform} ${what} takes no caption: leave the body empty (this one has ${[...v.body].length} characters).`,
    ),
  ];
}

function noFirstComment(platform: Platform, v: FormatVariant, base: string, what: string): FieldError[] {
  if (!v.first_comment) return [];
  return [
    err(
      `${base}/first_comment`,
      'first_comment_unsupported',
      `Herald posts no first comment under a ${platform} ${what}.`,
    ),
  ];
}

// Instagram (Graph API, IG User media): a story is media_type=STORIES with one image_url or
// video_url and no caption; alt_text is for feed images only ("Reels and stories are not
// supported"). A reel is media_type=REELS with one video_url, the caption allowed.
const instagram: Check = (platform, v, base) => {
  const format = formatOf(platform, v.options);
  if (format === 'story') {
    const errors = [...oneItem(platform, v, base, 'story'), ...noText(platform, v, base, 'story')];
    (v.media ?? []).forEach((m, j) => {
      if (m.alt)
        errors.push(
          err(
            `${base}/media/${j}/alt`,
            'text_too_long',
            'Instagram takes no alt text on a story (alt_text is for feed images only): remove `alt`.',
          ),
        );
    });
    errors.push(...noFirstComment(platform, v, base, 'story'));
    return errors;
  }
  if (format === 'reel') {
    const errors = oneVideo(platform, v, base, 'reel');
    if (v.media?.[0]?.alt)
      errors.push(
        err(
          `${base}/media/0/alt`,
          'text_too_long',
          'Instagram takes no alt text on a reel (alt_text is for feed images only): remove `alt`.',
        ),
      );
    return errors;
  }
  return [];
};

// Facebook Pages: a story (photo_stories / video_stories) is one photo or one video and no text;
// a reel (video_reels) is one vertical video with its description. Neither shares a link.
const facebook: Check = (platform, v, base) => {
  const format = formatOf(platform, v.options);
  if (format !== 'story' && format !== 'reel') return [];
  const errors =
    format === 'story'
      ? [
          ...oneItem(platform, v, base, 'story'),
          ...noText(platform, v, base, 'story'),
          ...noFirstComment(platform, v, base, 'story'),
        ]
      : oneVideo(platform, v, base, 'reel');
  if (v.options?.link !== undefined)
    errors.push(
      err(
        `${base}/options/link`,
        'invalid_option',
        `facebook: a ${format} shares no link; put it in a feed post.`,
      ),
    );
  return errors;
};

// YouTube: a Short's shape and length are checked on its media facts (FORMAT_MEDIA_LIMITS). The
// thumbnail is set with thumbnails.set from one of the organization's ready images (JPEG or PNG,
// at most 2 MB); publishAt "can be set only if the privacy status of the video is private", and
// must be ahead (Herald uploads the video private and YouTube makes it public then).
const youtube: Check = (_platform, v, base, ctx) => {
  const errors: FieldError[] = [];
  const o = v.options ?? {};
  if (typeof o.thumbnail_url === 'string') {
    const id = mediaIdFromUrl(o.thumbnail_url);
    const asset = id ? ctx.media.get(id) : undefined;
    const at = `${base}/options/thumbnail_url`;
    if (asset?.status !== 'ready' || asset.url !== o.thumbnail_url || asset.kind !== 'image')
      errors.push(
        err(
          at,
          'invalid_option',
          'youtube: thumbnail_url must be the url of a ready image asset of this organization.',
        ),
      );
    else if (!(THUMBNAIL_TYPES as readonly string[]).includes(asset.content_type))
      errors.push(
        err(
          at,
          'invalid_option',
          `youtube: a thumbnail is JPEG or PNG; this asset is ${asset.content_type}.`,
        ),
      );
    else if (asset.size_bytes > THUMBNAIL_MAX_BYTES)
      errors.push(
        err(
          at,
          'invalid_option',
          `youtube: a thumbnail may be at most 2 MB (${THUMBNAIL_MAX_BYTES} bytes); this one is ${asset.size_bytes} bytes.`,
        ),
      );
  }
  if (typeof o.publish_at === 'string') {
    const at = `${base}/options/publish_at`;
    const when = Date.parse(o.publish_at);
    if (Number.isFinite(when) && when <= ctx.now.getTime())
      errors.push(err(at, 'invalid_option', 'youtube: publish_at must be in the future.'));
    if (o.privacy_status !== undefined && o.privacy_status !== 'private')
      errors.push(
        err(
          at,
          'invalid_option',
          `youtube: a video with publish_at is uploaded private and goes public then; leave privacy_status out (or private), not ${String(o.privacy_status)}.`,
        ),
      );
  }
  return errors;
};

// LinkedIn: a document post is content.media of one document (Documents API: PDF, ≤ 100 MB,
// ≤ 300 pages) and nothing else; a poll's question is the post's title, else its text (≤ 140).
const linkedin: Check = (platform, v, base, ctx) => {
  const errors: FieldError[] = [];
  const format = formatOf(platform, v.options);
  const items = v.media ?? [];
  if (format === 'document') {
    if (items.length === 0)
      errors.push(
        err(
          `${base}/media`,
          'media_required',
          'A linkedin document post needs one PDF (a media item of type document).',
        ),
      );
    else if (items.length > 1)
      errors.push(
        err(
          `${base}/media`,
          'too_many_media',
          `A linkedin document post carries exactly one PDF and nothing else; this one has ${items.length} items.`,
        ),
      );
    items.forEach((m, j) => {
      if (m.type !== 'document') {
        errors.push(
          err(
            `${base}/media/${j}/type`,
            'unsupported_media',
            `A linkedin document post carries a PDF (type document); this item is ${m.type}.`,
          ),
        );
        return;
      }
      const asset = ctx.media.get(mediaIdFromUrl(m.url) ?? '');
      if (asset?.status !== 'ready' || asset.url !== m.url || asset.kind !== 'document') return; // reported as unknown_media
      errors.push(...documentFacts(asset, `${base}/media/${j}`));
    });
  } else {
    items.forEach((m, j) => {
      if (m.type === 'document')
        errors.push(
          err(
            `${base}/media/${j}/type`,
            'unsupported_media',
            'linkedin posts a PDF only as options.format "document" (one PDF, nothing else).',
          ),
        );
    });
    if (v.options?.document_title !== undefined)
      errors.push(
        err(
          `${base}/options/document_title`,
          'invalid_option',
          'linkedin: document_title goes with options.format "document" only.',
        ),
      );
  }
  if (isPoll(v.options?.poll)) {
    const [text, pointer] = ctx.title?.trim() ? [ctx.title, '/title'] : [v.body, `${base}/body`];
    const length = textLength('code_points', text.trim());
    if (length === 0)
      errors.push(
        err(
          pointer,
          'too_short',
          "A linkedin poll needs a question: the post's title, else the variant's text.",
        ),
      );
    else if (length > LINKEDIN_POLL_QUESTION_MAX)
      errors.push(
        err(
          pointer,
          'text_too_long',
          `A linkedin poll's question (the post's title, else its text) may be at most ${LINKEDIN_POLL_QUESTION_MAX} characters; this one is ${length}.`,
        ),
      );
  }
  return errors;
};

/** A PDF for a LinkedIn document post: its type, size and probed page count. */
function documentFacts(asset: MediaAssetRecord, pointer: string): FieldError[] {
  const errors: FieldError[] = [];
  if (asset.content_type !== 'application/pdf')
    errors.push(
      err(pointer, 'unsupported_format', `linkedin documents are PDFs; this one is ${asset.content_type}.`),
    );
  if (asset.size_bytes > DOCUMENT_MAX_BYTES)
    errors.push(
      err(
        pointer,
        'media_too_large',
        `linkedin documents may be at most 100 MB (${DOCUMENT_MAX_BYTES} bytes); this one is ${asset.size_bytes} bytes.`,
      ),
    );
  // The probe's page count (null: not read, not checked).
  const pages = asset.page_count;
  if (typeof pages === 'number' && pages > DOCUMENT_MAX_PAGES)
    errors.push(
      err(
        pointer,
        'media_too_long',
        `linkedin documents may have at most ${DOCUMENT_MAX_PAGES} pages; this one has ${pages}.`,
      ),
    );
  return errors;
}

const isPoll = (poll: unknown): boolean => typeof poll === 'object' && poll !== null;

// TikTok. Inbox mode (/v2/post/publish/inbox/video/init/, photo post_mode MEDIA_UPLOAD) sends the
// media to the creator, who sets privacy and interactions in the app: Herald refuses those options
// rather than drop them. Branded content "cannot be set to private" (TikTok's content sharing
// guidelines: SELF_ONLY is unavailable once Branded Content is on). cover_timestamp_ms picks a
// video frame (video_cover_timestamp_ms): a photo post has none.
const TIKTOK_APP_SETTINGS = ['privacy_level', 'disable_comment', 'disable_duet', 'disable_stitch'] as const;
const tiktok: Check = (_platform, v, base, ctx) => {
  const errors: FieldError[] = [];
  const o = v.options ?? {};
  if (o.post_mode === 'inbox') {
    for (const name of TIKTOK_APP_SETTINGS)
      if (o[name] !== undefined)
        errors.push(
          err(
            `${base}/options/${name}`,
            'invalid_option',
            `tiktok: in inbox mode the creator sets ${name} in the TikTok app; leave it out (or use post_mode "direct").`,
          ),
        );
  }
  if (o.brand_content === true && o.privacy_level === 'SELF_ONLY')
    errors.push(
      err(
        `${base}/options/privacy_level`,
        'invalid_option',
        'tiktok: branded content (brand_content) cannot be private: choose another privacy_level.',
      ),
    );
  if (o.cover_timestamp_ms !== undefined) {
    const at = `${base}/options/cover_timestamp_ms`;
    const items = v.media ?? [];
    if (items.some((m) => m.type === 'image'))
      errors.push(
        err(at, 'invalid_option', 'tiktok: cover_timestamp_ms picks a video frame; a photo post has none.'),
      );
    else if (typeof o.cover_timestamp_ms === 'number') {
      const asset = ctx.media.get(mediaIdFromUrl(items[0]?.url ?? '') ?? '');
      const sec = asset?.kind === 'video' ? asset.duration_sec : null;
      if (sec !== null && sec !== undefined && o.cover_timestamp_ms > sec * 1000)
        errors.push(
          err(
            at,
            'invalid_option',
            `tiktok: cover_timestamp_ms is past the end of the video (${Math.round(sec * 1000)} ms).`,
          ),
        );
    }
  }
  return errors;
};

// Polls (x, linkedin, mastodon, threads) take no media: X refuses media with a poll, Threads
// attaches polls to text-only posts, Mastodon refuses media_ids with poll, LinkedIn's content is
// one of poll or media.
function pollErrors(platform: Platform, v: FormatVariant, base: string): FieldError[] {
  if (!POLL_PLATFORMS.includes(platform) || !isPoll(v.options?.poll) || !v.media?.length) return [];
  return [
    err(
      `${base}/media`,
      'too_many_media',
      `A ${platform} poll takes no media: remove the media or the poll.`,
    ),
  ];
}

const BY_PLATFORM: Partial<Record<Platform, Check>> = { instagram, facebook, youtube, linkedin, tiktok };

/**
 * Field errors of one variant's format and the options that go with it on `platform`; pointers
 * start at `base` (`/variants/<i>`). The media facts of a format are checked with the other media
 * facts (formatMediaLimits).
 */
export function checkFormat(
  platform: Platform,
  v: FormatVariant,
  base: string,
  ctx: FormatContext,
): FieldError[] {
  return [...pollErrors(platform, v, base), ...(BY_PLATFORM[platform]?.(platform, v, base, ctx) ?? [])];
}
