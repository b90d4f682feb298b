import type { MediaKind } from './constants.ts';

// The media Herald accepts (docs/api/media.md), without the probing code (media-probe.ts): the upload
// ticket and createPost need only these, not image-size.

const MB = 1024 * 1024;

export type AllowedContentType =
  | 'image/jpeg'
  | 'image/png'
  | 'image/gif'
  | 'image/webp'
  | 'video/mp4'
  | 'video/quicktime'
  | 'video/webm'
  | 'audio/mpeg'
  | 'audio/mp4'
  | 'audio/wav'
  | 'application/pdf';

export interface AllowedMedia {
  kind: MediaKind;
  maxBytes: number;
  extensions: readonly string[];
}

/**
 * Types, kinds, extensions and size limits. `.aac` is deliberately absent from audio/mp4: an `.aac`
 * file is raw ADTS, not an MP4 container, so its bytes could never pass the audio/mp4 check below.
 */
export const ALLOWED_MEDIA: Readonly<Record<AllowedContentType, AllowedMedia>> = {
  'image/jpeg': { kind: 'image', maxBytes: 20 * MB, extensions: ['jpg', 'jpeg'] },
  'image/png': { kind: 'image', maxBytes: 20 * MB, extensions: ['png'] },
  'image/gif': { kind: 'image', maxBytes: 20 * MB, extensions: ['gif'] },
  'image/webp': { kind: 'image', maxBytes: 20 * MB, extensions: ['webp'] },
  'video/mp4': { kind: 'video', maxBytes: 1024 * MB, extensions: ['mp4', 'm4v'] },
  'video/quicktime': { kind: 'video', maxBytes: 1024 * MB, extensions: ['mov', 'qt'] },
  'video/webm': { kind: 'video', maxBytes: 1024 * MB, extensions: ['webm'] },
  'audio/mpeg': { kind: 'audio', maxBytes: 200 * MB, extensions: ['mp3', 'mpga'] },
  'audio/mp4': { kind: 'audio', maxBytes: 200 * MB, extensions: ['m4a', 'mp4'] },
  'audio/wav': { kind: 'audio', maxBytes: 200 * MB, extensions: ['wav'] },
  // LinkedIn's document limit, its only platform for them: "The file size cannot exceed 100MB and
  // 300 pages" (learn.microsoft.com/linkedin/marketing/community-management/shares/documents-api).
  // Read as decimal megabytes, the stricter reading.
  'application/pdf': { kind: 'document', maxBytes: 100 * 1000 * 1000, extensions: ['pdf'] },
};

/** The most pages a document may have (LinkedIn's limit, as above); more is refused at the probe. */
export const MAX_DOCUMENT_PAGES = 300;

/**
 * How much of an object the caller reads first. 64 KiB holds every magic number, an MP4 `ftyp`,
 * the EBML header of WebM, and, in practice, a JPEG's SOF marker (it follows the EXIF/ICC segments,
 * which are usually a few KiB; a big embedded thumbnail can push it further). When
 * `imageDimensions` answers null for an image the caller re-reads up to `MAX_IMAGE_HEAD_BYTES`.
 */
export const HEAD_BYTES = 64 * 1024;
/** The largest ranged read for image dimensions; past it the image is refused as unreadable. */
export const MAX_IMAGE_HEAD_BYTES = 1024 * 1024;

/** Lowercase, without parameters (`video/mp4; codecs=...` → `video/mp4`). */
export function normalizeContentType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

export function isAllowed(contentType: string): contentType is AllowedContentType {
  return Object.hasOwn(ALLOWED_MEDIA, normalizeContentType(contentType));
}

export function kindOf(contentType: string): MediaKind | null {
  const type = normalizeContentType(contentType);
  return isAllowed(type) ? ALLOWED_MEDIA[type].kind : null;
}
