import * as z from 'zod/mini';

// The fit function's invocation contract (RequestResponse): the delivery worker (and link cards)
// ask, fitMedia answers. Both sides parse what they receive: the function reads one media-bucket
// object and writes one rendition key of the `_fit-` form beside an asset, and nothing else.

/** Any object of an organization in the media bucket (an asset's original, a stored card image). */
const SOURCE_KEY = /^orgs\/[^/]+\/media\/[^/]+\/[^/]+$/;
/** A rendition beside it: the only objects the fit function may write. */
export const RENDITION_KEY = /^orgs\/[^/]+\/media\/[^/]+\/_fit-[A-Za-z0-9.-]{1,100}\.(jpg|mp4)$/;

const dims = z.number().check(z.int(), z.gte(2), z.lte(16_384));
const bytes = z.number().check(z.int(), z.gte(10_000), z.lte(5 * 1024 ** 3));

export const FitOpSchema = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('pad'), width: dims, height: dims }),
  z.strictObject({ op: z.literal('jpeg'), maxBytes: bytes }),
  z.strictObject({
    op: z.literal('mp4'),
    maxBytes: bytes,
    durationSec: z.number().check(z.gt(0), z.lte(12 * 3600)),
  }),
]);

export const FitRequest = z
  .strictObject({
    source_key: z.string().check(z.maxLength(1024), z.regex(SOURCE_KEY)),
    target_key: z.string().check(z.maxLength(1024), z.regex(RENDITION_KEY)),
    kind: z.enum(['image', 'video']),
    ops: z.array(FitOpSchema).check(z.minLength(1), z.maxLength(2)),
  })
  .check(
    z.refine(
      (r) =>
        r.target_key.slice(0, r.target_key.lastIndexOf('/')) ===
        r.source_key.slice(0, r.source_key.lastIndexOf('/')),
      {
        message: 'the rendition goes beside its source',
      },
    ),
    z.refine((r) => r.target_key.endsWith(r.kind === 'image' ? '.jpg' : '.mp4'), {
      message: 'an image rendition is a .jpg, a video one an .mp4',
    }),
    z.refine((r) => r.ops.some((o) => o.op === (r.kind === 'image' ? 'jpeg' : 'mp4')), {
      message: 'the ops must encode the kind',
    }),
  );
export type FitRequest = z.infer<typeof FitRequest>;

export const FitResponse = z.discriminatedUnion('ok', [
  z.strictObject({
    ok: z.literal(true),
    /** The request's target_key, stored (now or by an earlier call). */
    key: z.string(),
    content_type: z.enum(['image/jpeg', 'video/mp4']),
    size_bytes: z.number().check(z.int(), z.gte(1)),
    /** False: an earlier call had made it. */
    made: z.boolean(),
  }),
  /**
   * The source cannot be fitted (it does not decode, or no encoding fits the budget); or, with
   * `in_progress`, another call is making this rendition now: ask again later.
   */
  z.strictObject({
    ok: z.literal(false),
    message: z.string().check(z.maxLength(500)),
    in_progress: z.optional(z.literal(true)),
  }),
]);
export type FitResponse = z.infer<typeof FitResponse>;

/** The marker a call under way leaves next to the rendition it makes (`<rendition key>.pending`). */
export const pendingKeyOf = (renditionKey: string) => `${renditionKey}.pending`;

/** A marker older than this is a call that died (the fit function's timeout, lib/operations.ts). */
export const FIT_PENDING_SECONDS = 900;
