import type { MediaKind } from './constants.ts';
import type { FieldError } from './errors.ts';
import { ALLOWED_MEDIA, isAllowed, normalizeContentType } from './media-types.ts';

// Media assets: the record, the upload rules and the public shape (docs/api/media.md).
// Asset urls contain `/media/<med_id>/`; createPost and the connectors find the asset by that id.

/** `failed`: an import from a URL that was refused or never finished (`error` says why). */
export type MediaStatus = 'pending' | 'ready' | 'failed';

export interface MediaAssetRecord {
  id: string;
  org_id: string;
  status: MediaStatus;
  kind: MediaKind;
  url: string;
  filename: string;
  content_type: string;
  /** Claimed at createMediaUpload (0 when not given), the real size once ready. */
  size_bytes: number;
  width: number | null;
  height: number | null;
  duration_sec: number | null;
  poster_url: string | null;
  /** A document's (PDF's) number of pages once ready; null for other kinds. Absent on records
   * written before documents existed, read as null. */
  page_count?: number | null;
  /** Where the client PUTs the bytes: `uploads/<org>/<med_id>/<safe filename>` in the upload bucket. */
  upload_key: string;
  /** The probed copy in the media bucket (served by the CDN): `orgs/<org>/media/<med_id>/<safe filename>`. */
  object_key: string;
  poster_key: string | null;
  /** End of the upload ticket: no PUT and no completeMediaUpload after it. */
  expires_at: string;
  created_at: string;
  updated_at: string;
  /** The URL an imported asset was fetched from (importMedia); absent on uploads. */
  source_url?: string | null;
  /** Why an import failed, as a sentence; absent unless failed. */
  error?: string | null;
  /** A background import holds the asset until this time (usecases/media-import-worker.ts). */
  import_lease_until?: string;
}

/** Upload tickets live 15 minutes. */
export const TICKET_SECONDS = 900;

/** The checks of createMediaUpload's body beyond its schema: type, extension, size. */
export function checkUpload(input: {
  filename: string;
  content_type: string;
  size_bytes?: number | undefined;
}): FieldError[] {
  const errors: FieldError[] = [];
  const contentType = normalizeContentType(input.content_type);
  if (!isAllowed(contentType)) {
    errors.push({
      pointer: '/content_type',
      code: 'unsupported_media_type',
      message: `Allowed: ${Object.keys(ALLOWED_MEDIA).join(', ')}.`,
    });
    return errors;
  }
  const type = ALLOWED_MEDIA[contentType];
  const ext = /\.([A-Za-z0-9]+)$/.exec(input.filename)?.[1]?.toLowerCase();
  if (!ext || !type.extensions.includes(ext)) {
    errors.push({
      pointer: '/filename',
      code: 'extension_mismatch',
      message: `The filename must end in ${type.extensions.map((e) => `.${e}`).join(' or ')} for ${input.content_type}.`,
    });
  }
  if (input.size_bytes !== undefined && input.size_bytes > type.maxBytes)
    errors.push(tooLarge(contentType, type.maxBytes));
  return errors;
}

const binary = (n: number) =>
  n % 1024 ** 3 === 0
    ? `${n / 1024 ** 3} GiB`
    : n % 1024 ** 2 === 0
      ? `${n / 1024 ** 2} MiB`
      : n % 1000 ** 2 === 0
        ? `${n / 1000 ** 2} MB`
        : `${n} bytes`;

/**
 * A size over the type's limit, claimed (createMediaUpload) or uploaded (completeMediaUpload). The
 * limit is what a delivery sends: videos stream to the platforms a chunk at a time (docs/api/media.md).
 */
export function tooLarge(contentType: string, maxBytes: number): FieldError {
  return {
    pointer: '/size_bytes',
    code: 'too_large',
    message: `${contentType} uploads are limited to ${binary(maxBytes)} (${maxBytes} bytes), the largest file a delivery sends.`,
  };
}

/** The filename as it appears in object keys and urls: ASCII letters, digits, `.`, `-`, `_`. */
export function safeFilename(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? '';
  const cleaned = base
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[._-]+/, '')
    .slice(-120);
  return cleaned || 'file';
}

export function uploadKeyOf(orgId: string, mediaId: string, filename: string): string {
  return `uploads/${orgId}/${mediaId}/${safeFilename(filename)}`;
}

export function objectKeyOf(orgId: string, mediaId: string, filename: string): string {
  return `orgs/${orgId}/media/${mediaId}/${safeFilename(filename)}`;
}

/** The poster of a video (a frame) or a document (its first page), stored next to it (safe filenames never start with `_`). */
export function posterKeyOf(objectKey: string): string {
  return `${objectKey.slice(0, objectKey.lastIndexOf('/'))}/_poster.jpg`;
}

/** The public address of a media-bucket object: the CDN origin + its key (stable). */
export function mediaUrl(baseUrl: string, objectKey: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/${objectKey}`;
}

export function toMediaAsset(r: MediaAssetRecord) {
  return {
    id: r.id,
    filename: r.filename,
    content_type: r.content_type,
    kind: r.kind,
    status: r.status,
    url: r.url,
    size_bytes: r.size_bytes,
    width: r.width,
    height: r.height,
    duration_sec: r.duration_sec,
    poster_url: r.poster_url,
    page_count: r.page_count ?? null,
    created_at: r.created_at,
    source_url: r.source_url ?? null,
    error: r.error ?? null,
  };
}

const ASSET_IN_URL = /\/media\/(med_[0-9A-HJKMNP-TV-Z]{26})(?:[/?#]|$)/;

/** The asset id a media url points at, or null when it is not one of ours. */
export function mediaIdFromUrl(url: string): string | null {
  return ASSET_IN_URL.exec(url)?.[1] ?? null;
}
