import fc from 'fast-check';
import type { OperationId } from '#core/contracts';
import { ID_PREFIXES } from '#core/ids';
import { daysFromNow } from '../support/fixtures.ts';
import {
  auth,
  CALLBACK,
  FOREIGN,
  type FuzzRequest,
  jsonAuth,
  LANDING,
  OWN,
  SESSION_ACCOUNTS,
} from './world.ts';

// Inputs for the fuzz properties: run budgets, adversarial strings and ids, and the valid baseline
// request of every operation that the properties break in one place at a time.

/** Fixed seed; HERALD_FUZZ_SEED and HERALD_FUZZ_SCALE (a numRuns multiplier) explore further. */
export const SEED = 0x4e52_4c44;

export function runs(numRuns: number): { seed: number; numRuns: number } {
  const scale = Number(process.env.HERALD_FUZZ_SCALE ?? '1');
  const seed = Number(process.env.HERALD_FUZZ_SEED ?? SEED);
  return { seed, numRuns: Math.max(1, Math.round(numRuns * (Number.isFinite(scale) ? scale : 1))) };
}

// ---- strings ----------------------------------------------------------------------------------------

/** Code points and sequences that break naive text handling. */
export const NASTY_PIECES: readonly string[] = [
  // C0/C1 controls, NUL, ANSI escapes
  '\u0000',
  '\u0001',
  '\u0008',
  '\u001b[31m',
  '\u007f',
  '\u0085',
  '\u009b',
  // lone and reversed surrogates
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\udc00\ud800',
  // bidi controls (RTL override, isolates, marks)
  '\u202e',
  '\u202d',
  '\u2066',
  '\u2067',
  '\u2068',
  '\u2069',
  '\u200f',
  '\u061c',
  // invisible and zero-width
  '\u200b',
  '\u200c',
  '\u200d',
  '\u2060',
  '\ufeff',
  '\u00ad',
  // combining marks (one, and a stack of them)
  'e\u0301',
  `Z${'\u0300\u0301\u0302\u0303\u0304\u0305\u0306\u0307\u0308\u0309\u030a\u030b'.repeat(4)}`,
  '\u0338',
  // emoji: ZWJ families, flags, skin tones, tags, astral
  '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}\u200d\u{1f466}',
  '\u{1f3f3}\ufe0f\u200d\u{1f308}',
  '\u{1f1fa}\u{1f1e6}',
  '\u{1f44d}\u{1f3fd}',
  '\u{1f3f4}\u{e0067}\u{e0062}\u{e0073}\u{e0063}\u{e0074}\u{e007f}',
  '\u{1d54f}',
  '\u{10ffff}',
  // specials, noncharacters, line separators
  '\ufffd',
  '\ufffe',
  '\uffff',
  '\u2028',
  '\u2029',
  // case mapping and normalization traps, homoglyphs, full width
  '\ufdfa',
  '\u01c5',
  '\u00df',
  '\u0130',
  '\ufb03',
  '\u0430dmin',
  '\uff48\uff54\uff54\uff50\uff53',
  '\uff05\uff12\uff26',
  // whitespace
  '\r\n',
  '\t',
  '\u00a0',
  '\u3000',
  // injection-shaped ASCII
  '../',
  '..\\',
  '%00',
  '%2F',
  '%2e%2e%2f',
  '<script>',
  '"',
  '\\',
  '{"a":',
  '\u0024{x}',
  '%s%n',
  '\\u0000',
];

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));

/** A short string built from nasty pieces, random code points and lone surrogates. */
export const nastyString = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...NASTY_PIECES) },
      { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 4 }) },
      { weight: 1, arbitrary: loneSurrogate },
      { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 3 }) },
    ),
    { minLength: 1, maxLength: 10 },
  )
  .map((parts) => parts.join(''));

/** A recipe for a big string (so counterexamples print small): `unit` repeated `times`. */
export const bigString = (minUnits: number, maxUnits: number) =>
  fc.record({
    unit: fc.oneof(
      fc.constantFrom('x', '\u00e9', '\u20ac', '\u{1f600}', '\u0000', '\ud800', 'e\u0301'),
      nastyString,
    ),
    times: fc.integer({ min: minUnits, max: maxUnits }),
  });

/** Any JSON value (for wrong types), kept small. */
export const anyJson = fc.jsonValue({ maxDepth: 3 });

// ---- ids --------------------------------------------------------------------------------------------

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const ulidLike = (length: number) =>
  fc.string({ unit: fc.constantFrom(...CROCKFORD), minLength: length, maxLength: length });
const ID_RE = /^[a-z]+_[0-9A-HJKMNP-TV-Z]{26}$/;

export type IdKind = 'post' | 'media' | 'webhook' | 'channel' | 'connection' | 'inbox';
const prefixOf: Record<IdKind, string> = {
  post: ID_PREFIXES.post,
  media: ID_PREFIXES.media,
  webhook: ID_PREFIXES.webhook,
  channel: ID_PREFIXES.channel,
  connection: ID_PREFIXES.connection,
  inbox: ID_PREFIXES.inbox,
};

/**
 * Path ids that name nothing of this workspace for an operation on `kind`: wrong prefixes, broken
 * ULIDs, encoded and decoded slashes and dots, very long ids, unicode, whitespace-padded real ids,
 * other kinds' real ids, another organization's real id, and well-formed ids that do not exist.
 */
export function badId(kind: IdKind): fc.Arbitrary<string> {
  const prefix = prefixOf[kind];
  const own = OWN[kind];
  const otherPrefixes = Object.values(ID_PREFIXES).filter((p) => p !== prefix);
  return fc
    .oneof(
      // wrong prefix, right ULID
      fc
        .tuple(fc.constantFrom(...otherPrefixes, prefix.toUpperCase(), `${prefix}s`, '', 'x'), fc.ulid())
        .map(([p, u]) => `${p}_${u}`),
      fc
        .tuple(fc.constantFrom('-', '', '__', ':', '%5F'), fc.ulid())
        .map(([sep, u]) => `${prefix}${sep}${u}`),
      // broken ULIDs: wrong length, forbidden letters (I L O U), lower case, padding
      fc
        .integer({ min: 0, max: 40 })
        .chain((n) => (n === 26 ? fc.constant('') : ulidLike(n)).map((u) => `${prefix}_${u}`)),
      fc
        .tuple(
          fc.ulid(),
          fc.integer({ min: 0, max: 25 }),
          fc.constantFrom('I', 'L', 'O', 'U', 'i', '*', '-', ' '),
        )
        .map(([u, i, c]) => `${prefix}_${u.slice(0, i)}${c}${u.slice(i + 1)}`),
      fc.ulid().map((u) => `${prefix}_${u.toLowerCase()}`),
      fc.constantFrom(
        `${own}\n`,
        ` ${own}`,
        `${own} `,
        `${own}\u0000`,
        `${own}/`,
        `${own}%00`,
        `${own.toLowerCase()}`,
      ),
      // slashes and dots, encoded or not
      fc
        .tuple(
          fc.constantFrom('%2F', '/', '%2f', '%252F', '..%2F', '../', '%2e%2e%2f', '..\\', '%5C'),
          fc.constantFrom('..', 'admin', own, FOREIGN[kind], ''),
        )
        .map(([slash, tail]) => `${own}${slash}${tail}`),
      fc.constantFrom('..', '.', '%2e%2e', '..%2F..%2Fetc%2Fpasswd', '/', '%2F', ''),
      // very long
      fc.integer({ min: 27, max: 20_000 }).map((n) => `${prefix}_${'A'.repeat(n)}`),
      fc.integer({ min: 200, max: 20_000 }).map((n) => `${own}${'0'.repeat(n)}`),
      // unicode
      nastyString,
      fc
        .tuple(nastyString, fc.integer({ min: 0, max: 26 }))
        .map(([s, i]) => `${own.slice(0, prefix.length + 1 + i)}${s}`),
      // real ids of other kinds (the workspace's own of this kind are not bad) and of another organization
      fc.constantFrom(
        ...Object.values(OWN).filter((id) => !id.startsWith(`${prefix}_`)),
        FOREIGN[kind],
        FOREIGN.post,
      ),
      // well-formed, never created
      fc.ulid().map((u) => `${prefix}_${u}`),
    )
    .filter((id) => id !== own);
}

/** True when `id` is a well-formed prefixed ULID (then the operation reads the table before its 404). */
export const wellFormed = (id: string) => ID_RE.test(id);

// ---- baseline requests --------------------------------------------------------------------------------

const MEDIA_URL = `https://media.example/orgs/org_x/media/${FOREIGN.media}/launch.png`;

/**
 * A body that passes the operation's schema with every optional field present, so mutations can
 * reach every field (not necessarily accepted by the use case).
 */
export function richBody(op: OperationId): Record<string, unknown> {
  switch (op) {
    case 'createMediaUpload':
      return { filename: 'launch.png', content_type: 'image/png', size_bytes: 48_213 };
    case 'importMedia':
      return { url: 'https://media.example/launch.png', filename: 'launch.png' };
    case 'createPost':
      return {
        variants: [
          {
            channel_id: OWN.channel,
            body: 'Hello from Herald',
            media: [{ url: MEDIA_URL, type: 'image', alt: 'A rocket' }],
            options: { langs: ['en'] },
          },
        ],
        title: 'Launch',
        body: 'Hello',
        draft: true,
        scheduled_at: null,
        publish_now: false,
      };
    case 'reschedulePost':
      return { scheduled_at: daysFromNow(7) };
    case 'updatePost': {
      const { variants, title, body } = richBody('createPost');
      return { variants, title, body };
    }
    case 'validatePost':
      return richBody('createPost');
    case 'unpublishPost':
      return { channel_ids: [OWN.channel] };
    case 'replyToInboxItem':
      return { body: 'Thank you!' };
    case 'createGeneration':
      return { task: 'rewrite', text: 'Hello from Herald. A second sentence.', channel_ids: [OWN.channel] };
    case 'createWebhookEndpoint':
      return {
        url: 'https://93.184.216.34/herald',
        event_types: ['post.published', 'post.failed'],
        description: 'Ops',
        enabled: true,
      };
    case 'updateWebhookEndpoint':
      return {
        url: 'https://93.184.216.34/herald',
        event_types: ['post.failed'],
        description: null,
        enabled: false,
      };
    case 'createChannelConnection':
      // Every field the schema takes (the use case refuses this mix: instance and credentials are
      // for Mastodon and Bluesky). Host names only: the fuzz world resolves them into private space.
      return {
        platform: 'linkedin',
        redirect_uri: LANDING,
        channel_id: OWN.channel,
        instance: 'https://mastodon.example',
        credentials: {
          identifier: 'acme.bsky.social',
          app_password: 'abcd-efgh-ijkl-mnop',
          service: 'https://pds.example',
        },
      };
    case 'selectChannelAccount':
      return { account_id: SESSION_ACCOUNTS[0].id };
    case 'updateInboxItem':
      return { status: 'archived' };
    default:
      throw new Error(`${op} takes no body`);
  }
}

/** A request the operation accepts in the fuzz world (the calibration test checks it). */
export function validRequest(op: OperationId): FuzzRequest {
  const json = (body: unknown) => ({ headers: jsonAuth(), body: JSON.stringify(body) });
  switch (op) {
    case 'listChannels':
    case 'getAnalytics':
    case 'getUsage':
    case 'listWebhookEndpoints':
      return { op, headers: auth() };
    case 'listMedia':
      return { op, headers: auth(), query: { limit: '10' } };
    case 'listPosts':
      return { op, headers: auth(), query: { status: 'draft', limit: '5' } };
    case 'createMediaUpload':
    case 'importMedia':
      return { op, ...json(richBody(op)) };
    case 'getMedia':
    case 'deleteMedia':
      return { op, headers: auth(), params: { id: OWN.media } };
    case 'completeMediaUpload':
      return { op, headers: auth(), params: { id: OWN.media } };
    case 'createPost':
      return {
        op,
        ...json({ variants: [{ channel_id: OWN.channel, body: 'Hello from Herald' }], draft: true }),
      };
    case 'getPost':
    case 'deletePost':
    case 'publishPost':
      return { op, headers: auth(), params: { id: OWN.post } };
    case 'reschedulePost':
      return { op, params: { id: OWN.post }, ...json(richBody(op)) };
    case 'updatePost':
      return {
        op,
        params: { id: OWN.post },
        ...json({ variants: [{ channel_id: OWN.channel, body: 'Hello again from Herald' }] }),
      };
    case 'validatePost':
      return {
        op,
        ...json({ variants: [{ channel_id: OWN.channel, body: 'Hello from Herald' }], draft: true }),
      };
    case 'unpublishPost':
      return { op, params: { id: OWN.publishedPost }, ...json(richBody(op)) };
    case 'replyToInboxItem':
      return { op, params: { id: OWN.inbox }, ...json(richBody(op)) };
    case 'createGeneration':
      return { op, ...json(richBody(op)) };
    case 'createWebhookEndpoint':
      return { op, ...json(richBody(op)) };
    case 'updateWebhookEndpoint':
      return { op, params: { id: OWN.webhook }, ...json({ enabled: false }) };
    case 'deleteWebhookEndpoint':
    case 'testWebhookEndpoint':
    case 'rotateWebhookSecret':
    case 'listWebhookDeliveries':
      return { op, headers: auth(), params: { id: OWN.webhook } };
    case 'createChannelConnection':
      // An OAuth platform with the operator's app seeded: no network, a sealed verifier and a state.
      return { op, ...json({ platform: 'linkedin', redirect_uri: LANDING }) };
    case 'getChannelConnection':
      return { op, headers: auth(), params: { id: OWN.connection } };
    case 'selectChannelAccount':
      return { op, params: { id: OWN.connection }, ...json(richBody(op)) };
    case 'disconnectChannel':
      return { op, headers: auth(), params: { id: OWN.channel } };
    case 'getChannel':
    case 'getChannelOptions':
      // The world's channel is Bluesky's: no choices to read, so no call to a platform.
      return { op, headers: auth(), params: { id: OWN.channel } };
    case 'listInbox':
      return { op, headers: auth(), query: { status: 'unread', limit: '5' } };
    case 'getInboxItem':
      return { op, headers: auth(), params: { id: OWN.inbox } };
    case 'updateInboxItem':
      return { op, params: { id: OWN.inbox }, ...json({ status: 'read' }) };
    case 'oauthCallback':
      // The person declined at LinkedIn: the session fails and the browser lands at its
      // redirect_uri (303), without any call to the platform.
      return {
        op,
        params: { platform: CALLBACK.platform },
        query: { state: CALLBACK.state, error: 'access_denied', error_description: 'The member declined.' },
      };
    case 'getOpenApi':
    case 'getHealth':
    case 'getDocsIndex':
      return { op };
    case 'getDocsPage':
      return { op, params: { page: 'errors' } };
    case 'getProblemPage':
      return { op, params: { code: 'validation-failed' } };
    case 'getOperatorGuidePage':
      return { op, params: { page: 'deploy' } };
  }
}

// ---- JSON surgery -------------------------------------------------------------------------------------

export type Path = Array<string | number>;

/** RFC 6901 pointer of a path. */
export const pointerOf = (path: Path) =>
  path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** Every path in a JSON value (containers and leaves), the root excluded. */
export function pathsOf(value: unknown, base: Path = []): Path[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...base, i], ...pathsOf(v, [...base, i])]);
  if (value !== null && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => [[...base, k], ...pathsOf(v, [...base, k])]);
  return [];
}

/** A deep copy of `value` with the node at `path` replaced (or removed when `next` is undefined). */
export function withAt(value: unknown, path: Path, next: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent: Record<string | number, unknown> = copy;
  for (const p of path.slice(0, -1)) parent = parent[p] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (next === undefined) {
    if (Array.isArray(parent)) parent.splice(Number(last), 1);
    else delete parent[last];
  } else parent[last] = next;
  return copy;
}

/** `depth` levels of nested arrays or objects around `leaf`, built without recursion. */
export function nested(depth: number, shape: 'array' | 'object' | 'mixed', leaf = '0'): string {
  let open = '';
  let close = '';
  for (let i = 0; i < depth; i++) {
    const asArray = shape === 'array' || (shape === 'mixed' && i % 2 === 0);
    open += asArray ? '[' : '{"a":';
    close = (asArray ? ']' : '}') + close;
  }
  return `${open}${leaf}${close}`;
}
