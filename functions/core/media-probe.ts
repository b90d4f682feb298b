import { imageSize } from 'image-size';
import { kindOf, normalizeContentType } from './media-types.ts';

// What uploaded bytes really are: bytes that are not what content_type claims are refused
// (docs/api/media.md). Pure: callers hand in the first bytes of the object (a ranged GET) and, for
// video and audio, ask ffprobe (adapters/media-tools) for the rest. Nothing here trusts the
// filename or the claimed type; `sniff` only answers what the magic bytes prove.

export {
  ALLOWED_MEDIA,
  HEAD_BYTES,
  isAllowed,
  kindOf,
  MAX_DOCUMENT_PAGES,
  MAX_IMAGE_HEAD_BYTES,
} from './media-types.ts';

const ascii = (b: Uint8Array, start: number, end: number) =>
  b.length >= end ? String.fromCharCode(...b.subarray(start, end)) : '';

const startsWith = (b: Uint8Array, bytes: readonly number[], at = 0) =>
  b.length >= at + bytes.length && bytes.every((x, i) => b[at + i] === x);

// ISO base media (ftyp) brands. Only the major brand is trusted when known; otherwise the first
// known compatible brand decides (e.g. Sony's `MSNV` major brand lists `mp42`).
const BRANDS: Readonly<Record<string, string>> = {
  isom: 'video/mp4',
  iso2: 'video/mp4',
  iso3: 'video/mp4',
  iso4: 'video/mp4',
  iso5: 'video/mp4',
  iso6: 'video/mp4',
  mp41: 'video/mp4',
  mp42: 'video/mp4',
  avc1: 'video/mp4',
  dash: 'video/mp4',
  'M4V ': 'video/mp4',
  M4VH: 'video/mp4',
  M4VP: 'video/mp4',
  'qt  ': 'video/quicktime',
  'M4A ': 'audio/mp4',
  'M4B ': 'audio/mp4',
  'M4P ': 'audio/mp4',
  // Not allowed, but named so the mismatch is explicit rather than "unknown".
  heic: 'image/heic',
  heix: 'image/heic',
  mif1: 'image/heif',
  msf1: 'image/heif',
  avif: 'image/avif',
  '3gp4': 'video/3gpp',
  '3gp5': 'video/3gpp',
  '3gp6': 'video/3gpp',
};

function sniffFtyp(head: Uint8Array): string | null {
  const major = BRANDS[ascii(head, 8, 12)];
  if (major) return major;
  const boxSize = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(0);
  const end = Math.min(boxSize, head.length);
  for (let at = 16; at + 4 <= end; at += 4) {
    const compatible = BRANDS[ascii(head, at, at + 4)];
    if (compatible) return compatible;
  }
  return null;
}

// Files written by old QuickTime have no ftyp: the first atom is one of these.
const QUICKTIME_ATOMS = new Set(['moov', 'mdat', 'wide', 'free', 'skip', 'pnot']);

/** The EBML DocType (`webm` or `matroska`), searched within the EBML header. */
function ebmlDocType(head: Uint8Array): string | null {
  const limit = Math.min(head.length, 64);
  for (let i = 4; i + 3 < limit; i++) {
    if (head[i] !== 0x42 || head[i + 1] !== 0x82) continue;
    const size = head[i + 2] ?? 0;
    // A one-byte EBML size: the marker bit 0x80 plus the length.
    if ((size & 0x80) === 0) return null;
    const len = size & 0x7f;
    return ascii(head, i + 3, i + 3 + len) || null;
  }
  return null;
}

type MpegAudio = 'audio/mpeg' | 'audio/aac' | null;

/** An MPEG audio frame header (MP1/2/3) or an ADTS (AAC) header at `at`. */
function mpegAudioAt(b: Uint8Array, at: number): MpegAudio {
  const b0 = b[at];
  const b1 = b[at + 1];
  const b2 = b[at + 2];
  if (b0 !== 0xff || b1 === undefined || b2 === undefined || (b1 & 0xe0) !== 0xe0) return null;
  // ADTS: 12-bit sync and layer 00, which MPEG audio reserves.
  if ((b1 & 0xf6) === 0xf0) return 'audio/aac';
  const version = (b1 >> 3) & 0x3;
  const layer = (b1 >> 1) & 0x3;
  const bitrate = b2 >> 4;
  const rate = (b2 >> 2) & 0x3;
  if (version === 1 || layer === 0 || bitrate === 0xf || rate === 3) return null;
  return 'audio/mpeg';
}

/** MP3: an ID3v2 tag, then (when it fits in the head) the first frame behind it. */
function sniffId3(head: Uint8Array): MpegAudio {
  const s = (i: number) => (head[i] ?? 0) & 0x7f; // syncsafe integer bytes
  const footer = ((head[5] ?? 0) & 0x10) !== 0 ? 10 : 0;
  const frameAt = 10 + footer + ((s(6) << 21) | (s(7) << 14) | (s(8) << 7) | s(9));
  // Tags with cover art can outgrow the head: the tag alone then decides.
  if (frameAt + 3 > head.length) return 'audio/mpeg';
  return mpegAudioAt(head, frameAt) ?? 'audio/mpeg';
}

/**
 * `%PDF-` and a version digit. ISO 32000-1 (7.5.2) puts the header on the first line; readers
 * (pdf.js among them) accept it within the first KiB, after junk some generators write first, so
 * the same window is searched here.
 */
function isPdf(head: Uint8Array): boolean {
  const limit = Math.min(head.length, 1024);
  for (let at = 0; at + 6 <= limit; at++) {
    if (startsWith(head, PDF_MAGIC, at)) return (head[at + 5] ?? 0) >= 0x30 && (head[at + 5] ?? 0) <= 0x39;
  }
  return false;
}

const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d] as const; // %PDF-

/**
 * The content type the first bytes prove, or null when they prove nothing we know (too short,
 * unknown, or corrupt). May return types outside `ALLOWED_MEDIA` (image/heic, video/x-matroska,
 * audio/aac…) so that a mismatch can be reported precisely.
 *
 * ISO base media files (MP4) answer `video/mp4` for the generic brands (isom, mp42…), whatever
 * their streams: an MP4 holding only audio is also `video/mp4` here; see `matchesClaim`.
 */
export function sniff(head: Uint8Array): string | null {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  const six = ascii(head, 0, 6);
  if (six === 'GIF87a' || six === 'GIF89a') return 'image/gif';
  if (ascii(head, 0, 4) === 'RIFF') {
    const form = ascii(head, 8, 12);
    if (form === 'WEBP') {
      const chunk = ascii(head, 12, 16);
      return chunk === '' || chunk === 'VP8 ' || chunk === 'VP8L' || chunk === 'VP8X' ? 'image/webp' : null;
    }
    if (form === 'WAVE') return 'audio/wav';
    return null;
  }
  const box = ascii(head, 4, 8);
  if (box === 'ftyp') return sniffFtyp(head);
  if (QUICKTIME_ATOMS.has(box) && head.length >= 8) return 'video/quicktime';
  if (startsWith(head, [0x1a, 0x45, 0xdf, 0xa3])) {
    const docType = ebmlDocType(head);
    if (docType === 'webm') return 'video/webm';
    if (docType === 'matroska') return 'video/x-matroska';
    return null;
  }
  if (ascii(head, 0, 3) === 'ID3') return sniffId3(head);
  if (isPdf(head)) return 'application/pdf';
  return mpegAudioAt(head, 0);
}

/**
 * Whether bytes sniffed as `sniffed` may be stored under the claimed content type. Strict equality,
 * with one ambiguity allowed: a generic ISO-media MP4 (`video/mp4` by sniff) may be claimed as
 * `audio/mp4`, since audio-only MP4s often carry the `isom`/`mp42` brands. The caller settles it
 * with ffprobe: `video/mp4` needs a video stream, `audio/mp4` needs audio and no video (see
 * `streamsMatchClaim`). The reverse does not hold: an `M4A ` brand is audio, never `video/mp4`.
 */
export function matchesClaim(claimed: string, sniffed: string | null): boolean {
  if (sniffed === null) return false;
  const type = normalizeContentType(claimed);
  if (type === sniffed) return true;
  return type === 'audio/mp4' && sniffed === 'video/mp4';
}

/** The second half of the MP4 ambiguity, and of WebM (audio-only WebM is audio/webm, not allowed). */
export function streamsMatchClaim(
  claimed: string,
  streams: { hasVideo: boolean; hasAudio: boolean },
): boolean {
  const kind = kindOf(claimed);
  if (kind === 'video') return streams.hasVideo;
  if (kind === 'audio') return streams.hasAudio && !streams.hasVideo;
  return true;
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/**
 * Width and height of a PNG, JPEG, GIF or WebP from its first bytes, or null when they are not
 * there yet (the head is too short, e.g. a JPEG whose SOF lies past it: the caller reads a bigger
 * range, up to `MAX_IMAGE_HEAD_BYTES`) or the bytes are not such an image. A JPEG's EXIF
 * orientation 5–8 (rotated 90°) swaps the pair, so the answer is the displayed size.
 */
export function imageDimensions(head: Uint8Array): { width: number; height: number } | null {
  const type = sniff(head);
  if (!type || !IMAGE_TYPES.has(type)) return null;
  try {
    // A copy: image-size reads through `head.buffer` without bounds, so on a view of a larger
    // buffer (a Buffer from the pool, a subarray) it would read bytes past the head.
    const size = imageSize(new Uint8Array(head));
    const ok = (n: number) => Number.isInteger(n) && n > 0;
    // image-size reads past a short buffer as NaN instead of throwing for some formats.
    if (!ok(size.width) || !ok(size.height)) return null;
    const rotated = (size.orientation ?? 1) >= 5;
    return rotated ? { width: size.height, height: size.width } : { width: size.width, height: size.height };
  } catch {
    return null;
  }
}
