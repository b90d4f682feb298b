import { ApiError } from './errors.ts';

// Posts' entity tags (docs/api/posts.md, "ETags and If-Match"): the post's version, quoted. Every
// write of a post moves its version, so the tag changes exactly when the post does (a delivery's
// progress included). Compared strongly: a weak tag (W/"…") never matches.

/** The ETag header value of a post at `version`. */
export const etagOf = (version: number): string => `"${version}"`;

/** What an If-Match header asks for: any existing post (`*`), or one of these versions. */
export type IfMatch = { any: true } | { versions: number[] };

const TAG = /^(W\/)?"([^"]*)"$/;

/** Parses If-Match (absent: undefined). A value that is not a list of entity tags is a 400. */
export function parseIfMatch(header: string | undefined): IfMatch | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === '*') return { any: true };
  const versions: number[] = [];
  for (const part of value.split(',')) {
    const m = TAG.exec(part.trim());
    if (!m)
      throw new ApiError(
        'invalid_request',
        'If-Match must be `*` or a comma-separated list of quoted entity tags, like "7" (from getPost\'s ETag).',
      );
    // A weak tag or one Herald never issued matches no post: kept out, so the check fails (412).
    if (!m[1] && /^[1-9][0-9]{0,15}$/.test(m[2] as string)) versions.push(Number(m[2]));
  }
  return { versions };
}

/**
 * The 412 of a post (or another versioned resource: `what`, an inbox item) whose version is not
 * one If-Match names; it carries the current ETag.
 */
export function checkIfMatch(cond: IfMatch | undefined, version: number, what = 'post'): void {
  if (!cond || 'any' in cond || cond.versions.includes(version)) return;
  throw new ApiError(
    'precondition_failed',
    `The ${what} changed since it was read (its ETag is now ${etagOf(version)}); read it again and retry. Nothing was changed.`,
    { headers: { etag: etagOf(version) } },
  );
}

/**
 * A post write's `If-Match` and the `ETag` it answers: `check` runs on the post as read (the write
 * is conditioned on that read's version), `written` records the version the write left.
 */
export function preconditions(header: string | undefined) {
  const ifMatch = parseIfMatch(header);
  let version: number | undefined;
  return {
    check: (read: { version: number }) => checkIfMatch(ifMatch, read.version),
    written: (v: number) => {
      version = v;
    },
    headers: (): Record<string, string> => (version ? { etag: etagOf(version) } : {}),
  };
}
