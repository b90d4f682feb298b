import * as z from 'zod/mini';
import { ALLOWED_MEDIA, type AllowedContentType, MAX_DOCUMENT_PAGES } from './media-types.ts';

// The probe function's invocation contract (RequestResponse): completeMediaUpload asks, probeMedia
// answers. Both sides parse what they receive: the probe acts on nothing else than one upload key
// and one poster key, and the caller stores nothing the probe made up.

const probedTypes = (Object.keys(ALLOWED_MEDIA) as AllowedContentType[]).filter(
  (type) => ALLOWED_MEDIA[type].kind !== 'image',
);

/** An object of the upload bucket's `uploads/` prefix (core/media.ts uploadKeyOf). */
const UPLOAD_KEY = /^uploads\/[^/]+\/[^/]+\/[^/]+$/;
/** The poster next to a probed copy (core/media.ts posterKeyOf); the probe may write nothing else. */
const POSTER_KEY = /^orgs\/[^/]+\/media\/[^/]+\/_poster\.jpg$/;

export const ProbeRequest = z.strictObject({
  upload_key: z.string().check(z.maxLength(1024), z.regex(UPLOAD_KEY)),
  content_type: z.enum(probedTypes as [AllowedContentType, ...AllowedContentType[]]),
  /** Where the poster goes (a video's frame, a document's first page); null for audio (no poster). */
  poster_key: z.nullable(z.string().check(z.maxLength(1024), z.regex(POSTER_KEY))),
});
export type ProbeRequest = z.infer<typeof ProbeRequest>;

const size = z.nullable(z.number().check(z.int(), z.gte(0), z.lte(100_000)));

export const ProbeResponse = z.discriminatedUnion('ok', [
  z.strictObject({
    ok: z.literal(true),
    width: size,
    height: size,
    duration_sec: z.nullable(z.number().check(z.gte(0))),
    /** A document's pages; absent or null for video and audio. */
    page_count: z.optional(z.nullable(z.number().check(z.int(), z.gte(1), z.lte(MAX_DOCUMENT_PAGES)))),
    /** The request's poster_key once the poster is stored; null without one. */
    poster_key: z.nullable(z.string()),
  }),
  /**
   * The bytes are not what content_type says (answered as 400 content_mismatch), or a document has
   * more pages than allowed (`code: too_many_pages`).
   */
  z.strictObject({
    ok: z.literal(false),
    message: z.string().check(z.maxLength(500)),
    code: z.optional(z.enum(['content_mismatch', 'too_many_pages'])),
  }),
]);
export type ProbeResponse = z.infer<typeof ProbeResponse>;

/** The first problem of a failed parse, for an error message. */
export function firstIssue(error: z.core.$ZodError): string {
  const issue = error.issues[0];
  return issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid';
}
