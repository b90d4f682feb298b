import { createHash, randomBytes } from 'node:crypto';
import {
  avatarPath,
  followersOf,
  hashNumber,
  type OAuthControl,
  type OAuthStats,
  serveAvatar,
} from './oauth.ts';
import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of a Bluesky PDS (AT Protocol XRPC): sessions from app passwords, blob uploads,
// app.bsky.feed.post records with lexicon checks (300 graphemes, facets' byte ranges, ≤ 4 images of
// ≤ 1,000,000 bytes, a reply's root and parent strong refs), getRecord, resolveHandle and
// app.bsky.feed.getPosts for counts. Errors use the XRPC body `{"error": Name, "message"}` with the
// PDS's statuses: 401 AuthenticationRequired, 400 ExpiredToken/InvalidToken/InvalidRequest/
// RecordNotFound, 429 RateLimitExceeded. A createRecord on a record key that is taken answers 500
// InternalServerError, as the reference PDS does today.
//
// Accounts (lexicons com.atproto.server.*, app.bsky.actor.getProfile):
//   POST /xrpc/com.atproto.server.createSession   {identifier, password}; a wrong app password answers 401
//                                                 {"error": "AuthenticationRequired", "message": "Invalid
//                                                 identifier or password"}
//   POST /xrpc/com.atproto.server.deleteSession   Bearer refreshJwt → 200, no body; the session's access and
//                                                 refresh tokens stop working (the reference PDS only revokes
//                                                 the refresh token and lets the short-lived access JWT run
//                                                 out; the fake ends both). An access token answers 401
//                                                 InvalidToken "Bad token scope".
//   GET  /xrpc/app.bsky.actor.getProfile?actor=   did or handle of an account that has signed in →
//                                                 profileViewDetailed {did, handle, displayName, description,
//                                                 avatar, followersCount, followsCount, postsCount, indexedAt,
//                                                 createdAt, associated, labels}; unknown: 400 InvalidRequest
//                                                 "Profile not found". Auth optional (the AppView's is public).
// The control API's revoke ({"user": "<identifier or handle>"} or {"access_token": accessJwt}) is the user
// deleting the app password: the user's sessions end and createSession refuses that identifier until reset.

const TID_RE = /^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$/;
const POST = 'app.bsky.feed.post';
const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

export interface FakeBlueskyMedia {
  cid: string;
  mimeType: string;
  bytes: Buffer;
  alt: string;
}

export interface FakeBlueskyPost {
  uri: string;
  rkey: string;
  did: string;
  text: string;
  record: Record<string, unknown>;
  media: FakeBlueskyMedia[];
}

export interface FakeBluesky extends FakePlatform {
  readonly oauth: OAuthControl;
  /** App passwords accepted by createSession (any identifier). */
  appPasswords: Set<string>;
  /** handle → did, for resolveHandle. */
  handles: Map<string, string>;
  blobs: Map<string, { mimeType: string; bytes: Buffer }>;
  posts: FakeBlueskyPost[];
  /** Counts served by app.bsky.feed.getPosts, per post URI. */
  counts: Map<string, { likeCount: number; repostCount: number; replyCount: number; quoteCount: number }>;
  /** Make every issued access token answer ExpiredToken from now on. */
  expireAccessTokens(): void;
  /** Revoke every refresh token (refreshSession then fails). */
  revokeRefreshTokens(): void;
  sessionsCreated: number;
  maxBlobBytes: number;
  didFor(identifier: string): string;
  /** A hostile PDS: createSession for this identifier (lower case) answers this handle instead. */
  claimedHandles: Map<string, string>;
}

const err = (status: number, error: string, message: string): FakeResponse => ({
  status,
  body: { error, message },
});

function b32(buf: Buffer): string {
  const abc = 'abcdefghijklmnopqrstuvwxyz234567';
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of buf) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += abc[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

const cidOf = (bytes: Buffer | string) =>
  `bafkrei${b32(createHash('sha256').update(bytes).digest()).slice(0, 52)}`;

export function createFake(): FakeBluesky {
  const access = new Map<string, { did: string; handle: string; expired: boolean; session: string }>();
  const refresh = new Map<string, { did: string; handle: string; session: string }>();
  /** Accounts that signed in: did → handle. */
  const accounts = new Map<string, string>();
  /** Identifiers (and dids) whose app password the user revoked. */
  const revokedUsers = new Set<string>();
  let sessionSeq = 0;
  let stats: OAuthStats = {
    authorizations: 0,
    denied: 0,
    codesExchanged: 0,
    refreshes: 0,
    revocations: 0,
    revoked: [],
  };
  /** Ends every session of a did. */
  function endSessions(did: string, via: string): number {
    const sessions = new Set<string>();
    for (const [k, v] of access)
      if (v.did === did) {
        sessions.add(v.session);
        access.delete(k);
      }
    for (const [k, v] of refresh)
      if (v.did === did) {
        sessions.add(v.session);
        refresh.delete(k);
      }
    if (sessions.size) {
      stats.revocations++;
      stats.revoked.push({
        user: accounts.get(did) ?? did,
        userId: did,
        clientId: 'app-password',
        via,
        at: new Date().toISOString(),
        tokens: [],
      });
    }
    return sessions.size;
  }
  function endSession(session: string) {
    for (const [k, v] of access) if (v.session === session) access.delete(k);
    for (const [k, v] of refresh) if (v.session === session) refresh.delete(k);
  }
  const records = new Map<string, { uri: string; cid: string; value: Record<string, unknown> }>();
  const blobs = new Map<string, { mimeType: string; bytes: Buffer }>();

  const didFor = (identifier: string) =>
    `did:plc:${b32(createHash('sha256').update(identifier.toLowerCase()).digest()).slice(0, 24)}`;

  function mint(did: string, handle: string, session = `s${++sessionSeq}`) {
    const accessJwt = `acc-${randomBytes(12).toString('hex')}`;
    const refreshJwt = `ref-${randomBytes(12).toString('hex')}`;
    access.set(accessJwt, { did, handle, expired: false, session });
    refresh.set(refreshJwt, { did, handle, session });
    accounts.set(did, handle);
    return { did, handle, accessJwt, refreshJwt, active: true };
  }

  function authed(req: FakeRequest): { did: string; handle: string } | FakeResponse {
    const token = bearer(req);
    if (!token) return err(401, 'AuthenticationRequired', 'Authentication Required');
    const s = access.get(token);
    if (!s) return err(400, 'InvalidToken', 'Token could not be verified');
    if (s.expired) return err(400, 'ExpiredToken', 'Token has expired');
    return s;
  }
  const isResponse = (x: unknown): x is FakeResponse => typeof x === 'object' && x !== null && 'status' in x;

  function validatePost(did: string, value: Record<string, unknown>): string | null {
    if (value.$type !== POST)
      return 'Invalid app.bsky.feed.post record: Record/$type must be app.bsky.feed.post';
    if (typeof value.text !== 'string')
      return 'Invalid app.bsky.feed.post record: Record must have the property "text"';
    if (typeof value.createdAt !== 'string' || Number.isNaN(Date.parse(value.createdAt))) {
      return 'Invalid app.bsky.feed.post record: Record/createdAt must be an valid atproto datetime (both RFC-3339 and ISO-8601)';
    }
    const text = value.text;
    if ([...segmenter.segment(text)].length > 300)
      return 'Invalid app.bsky.feed.post record: Record/text must not be longer than 300 graphemes';
    if (Buffer.byteLength(text) > 3000)
      return 'Invalid app.bsky.feed.post record: Record/text must not be longer than 3000 characters';
    const bytes = Buffer.byteLength(text);
    const facets = (value.facets ?? []) as Array<{
      index?: { byteStart?: number; byteEnd?: number };
      features?: Array<Record<string, unknown>>;
    }>;
    for (const f of facets) {
      const s = f.index?.byteStart;
      const e = f.index?.byteEnd;
      if (typeof s !== 'number' || typeof e !== 'number' || s < 0 || e > bytes || s >= e) {
        return 'Invalid app.bsky.feed.post record: Record/facets/index must be within the text bytes';
      }
      for (const feat of f.features ?? []) {
        if (feat.$type === 'app.bsky.richtext.facet#mention' && !String(feat.did ?? '').startsWith('did:')) {
          return 'Invalid app.bsky.feed.post record: Record/facets/features/did must be a valid did';
        }
      }
    }
    if (value.langs !== undefined && (!Array.isArray(value.langs) || value.langs.length > 3)) {
      return 'Invalid app.bsky.feed.post record: Record/langs must not have more than 3 elements';
    }
    if (value.reply !== undefined) {
      // app.bsky.feed.post#replyRef: root and parent, each a com.atproto.repo.strongRef {uri
      // (at-uri), cid (cid)}. The PDS checks the shape only: a reply to a record that does not exist
      // is stored all the same (the AppView shows its parent as not found).
      const reply = value.reply as Record<string, unknown> | null;
      for (const side of ['root', 'parent'] as const) {
        const ref = (typeof reply === 'object' && reply ? reply[side] : undefined) as
          | Record<string, unknown>
          | undefined;
        if (!ref || typeof ref !== 'object')
          return `Invalid app.bsky.feed.post record: Record/reply must have the property "${side}"`;
        if (
          typeof ref.uri !== 'string' ||
          !/^at:\/\/did:[a-z]+:[a-zA-Z0-9._:%-]+\/[a-zA-Z0-9.-]+\/[a-zA-Z0-9._~:-]+$/.test(ref.uri)
        )
          return `Invalid app.bsky.feed.post record: Record/reply/${side}/uri must be a valid at-uri`;
        if (typeof ref.cid !== 'string' || !/^b[a-z2-7]{8,}$/.test(ref.cid))
          return `Invalid app.bsky.feed.post record: Record/reply/${side}/cid must be a cid string`;
      }
    }
    const embed = value.embed as Record<string, unknown> | undefined;
    if (embed) {
      const refs: Array<{
        blob: { ref?: { $link?: string }; size?: number; mimeType?: string };
        max: number;
        kind: string;
      }> = [];
      if (embed.$type === 'app.bsky.embed.images') {
        const images = (embed.images ?? []) as Array<{
          image: { ref?: { $link?: string }; size?: number };
          alt?: unknown;
        }>;
        if (images.length > 4)
          return 'Invalid app.bsky.feed.post record: Record/embed/images must not have more than 4 elements';
        for (const img of images) {
          if (typeof img.alt !== 'string')
            return 'Invalid app.bsky.feed.post record: Record/embed/images/0 must have the property "alt"';
          // app.bsky.embed.images lexicon: image blobs maxSize 1000000 (functions/core/media-limits.ts).
          refs.push({ blob: img.image, max: 1_000_000, kind: 'image' });
        }
      } else if (embed.$type === 'app.bsky.embed.video') {
        refs.push({ blob: embed.video as { ref?: { $link?: string } }, max: 100_000_000, kind: 'video' });
      } else {
        return `Invalid app.bsky.feed.post record: Record/embed has unsupported $type ${String(embed.$type)}`;
      }
      for (const r of refs) {
        const stored = blobs.get(r.blob?.ref?.$link ?? '');
        if (!stored) return `Could not find blob: ${r.blob?.ref?.$link}`;
        if (stored.bytes.length > r.max)
          return `Invalid app.bsky.feed.post record: ${r.kind} file too large (${stored.bytes.length} > ${r.max})`;
        if (!stored.mimeType.startsWith(`${r.kind}/`))
          return `Invalid app.bsky.feed.post record: Wrong type of file. It is ${stored.mimeType} but it must match ${r.kind}/*`;
      }
    }
    return did ? null : 'no repo';
  }

  function profile(actor: string, base: string): FakeResponse {
    const a = actor.toLowerCase();
    const did = a.startsWith('did:')
      ? accounts.has(a)
        ? a
        : undefined
      : [...accounts].find(([, h]) => h === a)?.[0];
    const handle = did ? accounts.get(did) : undefined;
    if (!did || !handle) return err(400, 'InvalidRequest', 'Profile not found');
    const name = handle.split('.')[0] ?? handle;
    return {
      status: 200,
      body: {
        did,
        handle,
        displayName: name.charAt(0).toUpperCase() + name.slice(1),
        description: '',
        avatar: `${base}${avatarPath(did)}`,
        associated: { lists: 0, feedgens: 0, starterPacks: 0, labeler: false },
        indexedAt: '2024-01-01T00:00:00.000Z',
        createdAt: '2023-05-01T00:00:00.000Z',
        labels: [],
        followersCount: followersOf(handle),
        followsCount: hashNumber(handle, 800, 'follows'),
        postsCount: hashNumber(handle, 3000, 'posts') + fake.posts.filter((p) => p.did === did).length,
      },
    };
  }

  const fake: FakeBluesky = {
    name: 'bluesky',
    oauth: {
      revoke(by) {
        if (by.access_token) {
          const s = access.get(by.access_token);
          if (!s) return null;
          revokedUsers.add(s.did);
          return endSessions(s.did, 'control') ? 1 : 0;
        }
        if (by.user) {
          const u = by.user.toLowerCase();
          const did = u.startsWith('did:')
            ? u
            : ([...accounts].find(([, h]) => h === u || h === `${u}.bsky.social`)?.[0] ?? didFor(u));
          revokedUsers.add(did);
          revokedUsers.add(u);
          return endSessions(did, 'control');
        }
        return null;
      },
      stats: () => ({ ...stats, revoked: [...stats.revoked] }),
    },
    appPasswords: new Set(['app-password', 'token']),
    handles: new Map(),
    claimedHandles: new Map(),
    blobs,
    posts: [],
    counts: new Map(),
    sessionsCreated: 0,
    maxBlobBytes: 100_000_000,
    didFor,
    expireAccessTokens() {
      for (const s of access.values()) s.expired = true;
    },
    revokeRefreshTokens() {
      refresh.clear();
    },
    reset() {
      access.clear();
      refresh.clear();
      accounts.clear();
      revokedUsers.clear();
      sessionSeq = 0;
      stats = { authorizations: 0, denied: 0, codesExchanged: 0, refreshes: 0, revocations: 0, revoked: [] };
      records.clear();
      blobs.clear();
      fake.posts = [];
      fake.counts = new Map();
      fake.handles = new Map();
      fake.claimedHandles = new Map();
      fake.appPasswords = new Set(['app-password', 'token']);
      fake.sessionsCreated = 0;
      fake.maxBlobBytes = 100_000_000;
    },

    handle(req: FakeRequest, ctx: FakeContext): FakeResponse | null {
      const avatar = serveAvatar(req);
      if (avatar) return avatar;
      const nsid = req.path.replace(/^\/xrpc\//, '');
      const body = (req.json ?? {}) as Record<string, unknown>;

      if (req.method === 'POST' && nsid === 'com.atproto.server.createSession') {
        const identifier = String(body.identifier ?? '');
        const password = String(body.password ?? '');
        if (!identifier || !password)
          return err(400, 'InvalidRequest', 'Input must have the property "identifier" and "password"');
        if (
          !fake.appPasswords.has(password) ||
          revokedUsers.has(identifier.toLowerCase()) ||
          revokedUsers.has(didFor(identifier))
        )
          return err(401, 'AuthenticationRequired', 'Invalid identifier or password');
        fake.sessionsCreated++;
        stats.authorizations++;
        const handle =
          fake.claimedHandles.get(identifier.toLowerCase()) ??
          (identifier.includes('.') ? identifier.toLowerCase() : `${identifier.toLowerCase()}.bsky.social`);
        return { status: 200, body: mint(didFor(identifier), handle) };
      }

      if (req.method === 'POST' && nsid === 'com.atproto.server.refreshSession') {
        const token = bearer(req);
        const s = token ? refresh.get(token) : undefined;
        if (!token) return err(401, 'AuthenticationRequired', 'Authentication Required');
        if (!s) return err(400, 'ExpiredToken', 'Token has been revoked');
        refresh.delete(token);
        stats.refreshes++;
        return { status: 200, body: mint(s.did, s.handle, s.session) };
      }

      if (req.method === 'POST' && nsid === 'com.atproto.server.deleteSession') {
        const token = bearer(req);
        if (!token) return err(401, 'AuthenticationRequired', 'Authentication Required');
        if (access.has(token)) return err(401, 'InvalidToken', 'Bad token scope');
        const s = refresh.get(token);
        if (!s) return err(400, 'ExpiredToken', 'Token has been revoked');
        endSession(s.session);
        return { status: 200 };
      }

      if (req.method === 'GET' && nsid === 'app.bsky.actor.getProfile') {
        const actor = req.query.get('actor');
        if (!actor) return err(400, 'InvalidRequest', 'Error: Params must have the property "actor"');
        if (bearer(req)) {
          const who = authed(req);
          if (isResponse(who)) return who;
        }
        return profile(actor, ctx.base);
      }

      if (req.method === 'GET' && nsid === 'com.atproto.identity.resolveHandle') {
        const handle = (req.query.get('handle') ?? '').toLowerCase();
        const did = fake.handles.get(handle);
        return did ? { status: 200, body: { did } } : err(400, 'InvalidRequest', 'Unable to resolve handle');
      }

      const who = authed(req);
      if (isResponse(who)) return who;

      if (req.method === 'POST' && nsid === 'com.atproto.repo.uploadBlob') {
        if (req.body.length === 0) return err(400, 'InvalidRequest', 'Request body is empty');
        if (req.body.length > fake.maxBlobBytes)
          return err(
            400,
            'BlobTooLarge',
            `This file is too large. It is ${req.body.length} bytes but the maximum size is ${fake.maxBlobBytes} bytes.`,
          );
        const mimeType = req.headers['content-type'] ?? 'application/octet-stream';
        const cid = cidOf(req.body);
        blobs.set(cid, { mimeType, bytes: Buffer.from(req.body) });
        return {
          status: 200,
          body: { blob: { $type: 'blob', ref: { $link: cid }, mimeType, size: req.body.length } },
        };
      }

      if (req.method === 'POST' && nsid === 'com.atproto.repo.createRecord') {
        const repo = String(body.repo ?? '');
        if (repo !== who.did && repo !== who.handle)
          return err(400, 'InvalidRequest', 'Invalid repo: does not match authenticated account');
        if (body.collection !== POST)
          return err(400, 'InvalidRequest', `Invalid collection: ${String(body.collection)}`);
        const rkey = body.rkey === undefined ? undefined : String(body.rkey);
        if (rkey !== undefined && !TID_RE.test(rkey))
          return err(400, 'InvalidRequest', 'Invalid record key: app.bsky.feed.post requires a TID');
        const value = (body.record ?? {}) as Record<string, unknown>;
        const problem = validatePost(who.did, value);
        if (problem) return err(400, 'InvalidRequest', problem);
        const key =
          rkey ??
          `3l${randomBytes(6)
            .toString('hex')
            .replace(/[^a-z2-7]/g, 'a')
            .padEnd(11, 'a')
            .slice(0, 11)}`;
        const uri = `at://${who.did}/${POST}/${key}`;
        if (records.has(uri)) return err(500, 'InternalServerError', 'Internal Server Error');
        const cid = cidOf(JSON.stringify(value));
        records.set(uri, { uri, cid, value });
        const embed = value.embed as Record<string, unknown> | undefined;
        const refs: Array<{ link: string; alt: string }> =
          embed?.$type === 'app.bsky.embed.images'
            ? ((embed.images ?? []) as Array<{ image: { ref: { $link: string } }; alt: string }>).map(
                (i) => ({ link: i.image.ref.$link, alt: i.alt }),
              )
            : embed?.$type === 'app.bsky.embed.video'
              ? [
                  {
                    link: (embed.video as { ref: { $link: string } }).ref.$link,
                    alt: String(embed.alt ?? ''),
                  },
                ]
              : [];
        fake.posts.push({
          uri,
          rkey: key,
          did: who.did,
          text: String(value.text),
          record: value,
          media: refs.map((r) => {
            const b = blobs.get(r.link);
            return {
              cid: r.link,
              mimeType: b?.mimeType ?? '',
              bytes: b?.bytes ?? Buffer.alloc(0),
              alt: r.alt,
            };
          }),
        });
        return {
          status: 200,
          body: { uri, cid, commit: { cid: cidOf(uri), rev: key }, validationStatus: 'valid' },
        };
      }

      // com.atproto.repo.deleteRecord {repo, collection, rkey}: "delete a repository record, or ensure
      // it doesn't exist" (its lexicon). 200 {commit: {cid, rev}} when a record went; a record that is
      // not there answers 200 {} (no commit), as the reference PDS does. Another account's repo: 400.
      if (req.method === 'POST' && nsid === 'com.atproto.repo.deleteRecord') {
        const repo = String(body.repo ?? '');
        if (repo !== who.did && repo !== who.handle)
          return err(400, 'InvalidRequest', 'Invalid repo: does not match authenticated account');
        for (const field of ['collection', 'rkey'])
          if (typeof body[field] !== 'string' || !body[field])
            return err(400, 'InvalidRequest', `Input must have the property "${field}"`);
        const uri = `at://${who.did}/${String(body.collection)}/${String(body.rkey)}`;
        if (!records.delete(uri)) return { status: 200, body: {} };
        fake.posts = fake.posts.filter((p) => p.uri !== uri);
        return { status: 200, body: { commit: { cid: cidOf(`${uri}#delete`), rev: String(body.rkey) } } };
      }

      if (req.method === 'GET' && nsid === 'com.atproto.repo.getRecord') {
        const uri = `at://${req.query.get('repo')}/${req.query.get('collection')}/${req.query.get('rkey')}`;
        const rec = records.get(uri);
        return rec
          ? { status: 200, body: rec }
          : err(400, 'RecordNotFound', `Could not locate record: ${uri}`);
      }

      if (req.method === 'GET' && nsid === 'app.bsky.feed.getPosts') {
        const uris = req.query.getAll('uris');
        if (uris.length > 25)
          return err(400, 'InvalidRequest', 'Error: uris must not have more than 25 elements');
        const posts = uris.flatMap((uri) => {
          const rec = records.get(uri);
          if (!rec) return [];
          const c = fake.counts.get(uri) ?? { likeCount: 0, repostCount: 0, replyCount: 0, quoteCount: 0 };
          return [
            {
              uri,
              cid: rec.cid,
              author: { did: who.did, handle: who.handle },
              record: rec.value,
              ...c,
              indexedAt: rec.value.createdAt,
            },
          ];
        });
        return { status: 200, body: { posts } };
      }

      return null;
    },
  };
  return fake;
}
