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
  type InboxSeed,
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
// Access tokens are JWTs whose `scope` says what the password allows (the reference PDS's auth-verifier):
// `com.atproto.appPassPrivileged` for an app password with direct-message access (the fake's
// `privilegedPasswords`, by default "app-password"), `com.atproto.appPass` for the others ("token").
//
// The inbox's read side, seeded by `inbox(seed)` (lexicons app.bsky.notification.listNotifications,
// app.bsky.feed.getPostThread, chat.bsky.convo.*; the AppView's keyset cursors `<ms>::<cid>`):
//   GET  /xrpc/app.bsky.notification.listNotifications  reasons (repeated), limit 1–100 (default 50),
//        cursor → {notifications: [{uri, cid, author, reason, reasonSubject, record, isRead, indexedAt,
//        labels}], cursor, seenAt}, newest first. A comment is a `reply` notification (reasonSubject: the
//        post it answers), a mention `mention`; their records carry text, createdAt, reply {root, parent}.
//   GET  /xrpc/app.bsky.feed.getPostThread  uri, depth → {thread: threadViewPost {post, parent, replies}};
//        an unknown post answers 400 NotFound.
//   Chat, only through the PDS's proxy (header `atproto-proxy: did:web:api.bsky.chat#bsky_chat`; without
//   it 501 MethodNotImplemented) and only with a privileged app password (else 400 InvalidToken "Bad token
//   method", as the chat service answers since 2025):
//   GET  /xrpc/chat.bsky.convo.listConvos   limit 1–100 (default 50), cursor → {convos: [convoView {id,
//        rev, members, lastMessage, muted, status, unreadCount}], cursor}, most recent first
//   GET  /xrpc/chat.bsky.convo.getMessages  convoId, limit, cursor → {messages: [messageView {id, rev,
//        text, sender {did}, sentAt}], cursor}, newest first
//   POST /xrpc/chat.bsky.convo.sendMessage  {convoId, message: {text}} (≤ 1000 graphemes) → messageView
// A seed's `to` is a handle or did (default: a comment reaches the author of the post it answers; a
// mention or message without one reaches whichever account asks).

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
  /** The link card (app.bsky.embed.external), its thumb blob resolved. */
  external?: { uri: string; title: string; description: string; thumb: FakeBlueskyMedia | null };
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
  /** App passwords created with "allow access to your direct messages". */
  privilegedPasswords: Set<string>;
  /** Posts of other accounts that reached an account (seeded by `inbox`), by uri. */
  others: Map<string, FakeBlueskyOther>;
  notifications: FakeBlueskyNotification[];
  convos: Map<string, FakeBlueskyConvo>;
}

export interface FakeBlueskyAuthor {
  did: string;
  handle: string;
  displayName: string;
}

export interface FakeBlueskyOther {
  uri: string;
  cid: string;
  author: FakeBlueskyAuthor;
  record: Record<string, unknown>;
  indexedAt: string;
}

export interface FakeBlueskyNotification {
  uri: string;
  cid: string;
  reason: 'reply' | 'mention' | 'quote';
  reasonSubject: string | null;
  indexedAt: string;
  /** The account it reaches: a did, or '*' (whichever account asks). */
  to: string;
}

export interface FakeBlueskyMessage {
  id: string;
  rev: string;
  text: string;
  sender: { did: string };
  sentAt: string;
}

export interface FakeBlueskyConvo {
  id: string;
  /** The account's side: a did, or '*' (whichever account asks). */
  to: string;
  other: FakeBlueskyAuthor;
  messages: FakeBlueskyMessage[];
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

  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  /** A JWT as the PDS signs them (the fake's signature is random: only the PDS checks it). */
  const jwt = (payload: Record<string, unknown>) =>
    `${b64({ typ: payload.scope === 'com.atproto.refresh' ? 'refresh+jwt' : 'at+jwt', alg: 'ES256K' })}.${b64(payload)}.${randomBytes(32).toString('base64url')}`;
  const scopes = new Map<string, string>();

  function mint(did: string, handle: string, session = `s${++sessionSeq}`, scope = scopes.get(session)) {
    const now = Math.floor(Date.now() / 1000);
    const granted = scope ?? 'com.atproto.appPass';
    scopes.set(session, granted);
    const accessJwt = jwt({ scope: granted, sub: did, aud: 'did:web:pds.fake', iat: now, exp: now + 7200 });
    const refreshJwt = jwt({
      scope: 'com.atproto.refresh',
      sub: did,
      aud: 'did:web:pds.fake',
      jti: randomBytes(16).toString('base64url'),
      iat: now,
      exp: now + 90 * 86400,
    });
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
      } else if (embed.$type === 'app.bsky.embed.external') {
        // app.bsky.embed.external: external {uri (format uri), title, description} required, thumb
        // an optional blob (accept image/*, maxSize 1000000).
        const ext = embed.external as Record<string, unknown> | undefined;
        if (!ext || typeof ext !== 'object')
          return 'Invalid app.bsky.feed.post record: Record/embed must have the property "external"';
        for (const field of ['uri', 'title', 'description'])
          if (typeof ext[field] !== 'string')
            return `Invalid app.bsky.feed.post record: Record/embed/external must have the property "${field}"`;
        if (!/^[a-z][a-z0-9+.-]*:\S+$/i.test(String(ext.uri)))
          return 'Invalid app.bsky.feed.post record: Record/embed/external/uri must be a uri';
        if (ext.thumb !== undefined) {
          const thumb = ext.thumb as { $type?: string; ref?: { $link?: string } };
          if (thumb?.$type !== 'blob')
            return 'Invalid app.bsky.feed.post record: Record/embed/external/thumb should be a blob ref';
          refs.push({ blob: thumb, max: 1_000_000, kind: 'image' });
        }
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

  let tidSeq = 0;
  const S32 = '234567abcdefghijklmnopqrstuvwxyz';
  /** A TID (record keys, chat ids and revs) at a time: microseconds, then a clock id. */
  function tidAt(ms: number): string {
    let v = (BigInt(Math.floor(ms)) * 1000n + BigInt(++tidSeq % 1000)) << 10n;
    let out = '';
    for (let i = 0; i < 13; i++) {
      out = S32[Number(v & 31n)] + out;
      v >>= 5n;
    }
    return out;
  }
  const CHAT_PROXY = 'did:web:api.bsky.chat#bsky_chat';
  const sameAccount = (to: string, who: { did: string }) => to === '*' || to === who.did;
  const recipientOf = (to: string | undefined) => {
    if (!to) return '*';
    const t = to.toLowerCase().replace(/^@/, '');
    if (t.startsWith('did:')) return t;
    return [...accounts].find(([, h]) => h === t || h === `${t}.bsky.social`)?.[0] ?? didFor(t);
  };
  const authorOf = (seed: InboxSeed): FakeBlueskyAuthor => {
    const handle = (seed.author?.handle ?? 'bob.example.com').replace(/^@/, '').toLowerCase();
    return {
      did: seed.author?.id ?? didFor(`other:${handle}`),
      handle,
      displayName: seed.author?.name ?? handle.split('.')[0] ?? handle,
    };
  };
  const profileView = (a: FakeBlueskyAuthor, base: string) => ({
    did: a.did,
    handle: a.handle,
    displayName: a.displayName,
    avatar: `${base}${avatarPath(a.did)}`,
    labels: [],
    indexedAt: '2024-01-01T00:00:00.000Z',
    createdAt: '2023-05-01T00:00:00.000Z',
  });
  /** A post by uri, as a postView (own records and others' alike). */
  function postView(uri: string, base: string): Record<string, unknown> | null {
    const other = fake.others.get(uri);
    if (other)
      return {
        uri,
        cid: other.cid,
        author: profileView(other.author, base),
        record: other.record,
        replyCount: 0,
        repostCount: 0,
        likeCount: 0,
        quoteCount: 0,
        indexedAt: other.indexedAt,
        labels: [],
      };
    const rec = records.get(uri);
    if (!rec) return null;
    const did = uri.split('/')[2] ?? '';
    const handle = accounts.get(did) ?? did;
    const c = fake.counts.get(uri) ?? { likeCount: 0, repostCount: 0, replyCount: 0, quoteCount: 0 };
    return {
      uri,
      cid: rec.cid,
      author: profileView({ did, handle, displayName: handle.split('.')[0] ?? handle }, base),
      record: rec.value,
      ...c,
      indexedAt: rec.value.createdAt,
      labels: [],
    };
  }
  const parentUri = (uri: string) => {
    const v = (fake.others.get(uri)?.record ?? records.get(uri)?.value) as
      | { reply?: { parent?: { uri?: string } } }
      | undefined;
    return v?.reply?.parent?.uri ?? null;
  };
  function thread(uri: string, depth: number, base: string): Record<string, unknown> | null {
    const post = postView(uri, base);
    if (!post) return null;
    const children = [...records.keys(), ...fake.others.keys()].filter((u) => parentUri(u) === uri);
    return {
      $type: 'app.bsky.feed.defs#threadViewPost',
      post,
      ...(depth > 0
        ? {
            replies: children
              .map((u) => thread(u, depth - 1, base))
              .filter((t): t is Record<string, unknown> => !!t),
          }
        : {}),
    };
  }
  const messageView = (m: FakeBlueskyMessage) => ({ $type: 'chat.bsky.convo.defs#messageView', ...m });
  /** Keyset paging newest first on (time, tiebreak), the cursor `<ms>::<tiebreak>` as the AppView's. */
  function keyset<T>(items: T[], at: (t: T) => string, tie: (t: T) => string, q: URLSearchParams) {
    const raw = Number(q.get('limit') ?? 50);
    const limit = Math.max(1, Math.min(100, Number.isFinite(raw) && raw > 0 ? Math.floor(raw) : 50));
    const key = (t: T) => [Date.parse(at(t)), tie(t)] as const;
    const before = (a: readonly [number, string], b: readonly [number, string]) =>
      a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
    const cursor = q.get('cursor');
    const from = cursor ? ([Number(cursor.split('::')[0]), cursor.split('::')[1] ?? ''] as const) : null;
    const sorted = [...items].sort((a, b) => (before(key(a), key(b)) ? 1 : before(key(b), key(a)) ? -1 : 0));
    const page = sorted.filter((t) => !from || before(key(t), from)).slice(0, limit);
    const last = page.at(-1);
    return { page, cursor: last && page.length >= limit ? `${key(last)[0]}::${key(last)[1]}` : undefined };
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
    privilegedPasswords: new Set(['app-password']),
    others: new Map(),
    notifications: [],
    convos: new Map(),
    inbox(seed: InboxSeed) {
      const created = seed.created_at ? Date.parse(seed.created_at) : Date.now();
      const at = new Date(Number.isFinite(created) ? created : Date.now()).toISOString();
      const author = authorOf(seed);
      if (seed.kind === 'message') {
        const to = recipientOf(seed.to);
        const id =
          seed.conversation ??
          [...fake.convos.values()].find((c) => c.to === to && c.other.did === author.did)?.id ??
          `convo${tidAt(Date.parse(at))}`;
        const convo = fake.convos.get(id) ?? { id, to, other: author, messages: [] };
        const msg = {
          id: tidAt(Date.parse(at)),
          rev: tidAt(Date.now()),
          text: seed.text,
          sender: { did: author.did },
          sentAt: at,
        };
        convo.messages.push(msg);
        fake.convos.set(id, convo);
        return { platform_id: msg.id };
      }
      const parent = seed.parent ?? null;
      const parentRef = parent
        ? { uri: parent, cid: fake.others.get(parent)?.cid ?? records.get(parent)?.cid ?? cidOf(parent) }
        : null;
      const parentRoot = parent
        ? (
            (fake.others.get(parent)?.record ?? records.get(parent)?.value) as
              | { reply?: { root?: { uri: string; cid: string } } }
              | undefined
          )?.reply?.root
        : undefined;
      // A comment reaches the author of the post it answers; a mention whom it names.
      const to = seed.to
        ? recipientOf(seed.to)
        : parent?.startsWith('at://')
          ? (parent.split('/')[2] ?? '*')
          : '*';
      const named = to === '*' ? null : (accounts.get(to) ?? null);
      const text =
        seed.kind === 'mention' && named && !seed.text.includes(`@${named}`)
          ? `@${named} ${seed.text}`
          : seed.text;
      const mentionAt = named ? text.indexOf(`@${named}`) : -1;
      const record: Record<string, unknown> = {
        $type: POST,
        text,
        createdAt: at,
        langs: ['en'],
        ...(mentionAt >= 0
          ? {
              facets: [
                {
                  index: {
                    byteStart: Buffer.byteLength(text.slice(0, mentionAt)),
                    byteEnd: Buffer.byteLength(text.slice(0, mentionAt + 1 + (named?.length ?? 0))),
                  },
                  features: [{ $type: 'app.bsky.richtext.facet#mention', did: to }],
                },
              ],
            }
          : {}),
        ...(parentRef ? { reply: { root: parentRoot ?? parentRef, parent: parentRef } } : {}),
      };
      const rkey = tidAt(Date.parse(at));
      const uri = `at://${author.did}/${POST}/${rkey}`;
      const cid = cidOf(JSON.stringify(record) + uri);
      fake.others.set(uri, { uri, cid, author, record, indexedAt: at });
      fake.notifications.push({
        uri,
        cid,
        reason: seed.kind === 'comment' ? 'reply' : 'mention',
        reasonSubject: seed.kind === 'comment' ? parent : null,
        indexedAt: at,
        to,
      });
      return { platform_id: uri };
    },
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
      fake.privilegedPasswords = new Set(['app-password']);
      fake.others = new Map();
      fake.notifications = [];
      fake.convos = new Map();
      scopes.clear();
      tidSeq = 0;
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
        const scope = fake.privilegedPasswords.has(password)
          ? 'com.atproto.appPassPrivileged'
          : 'com.atproto.appPass';
        return { status: 200, body: mint(didFor(identifier), handle, `s${++sessionSeq}`, scope) };
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
        const external =
          embed?.$type === 'app.bsky.embed.external'
            ? (embed.external as {
                uri: string;
                title: string;
                description: string;
                thumb?: { ref: { $link: string } };
              })
            : undefined;
        const thumb = external?.thumb ? blobs.get(external.thumb.ref.$link) : undefined;
        fake.posts.push({
          uri,
          rkey: key,
          did: who.did,
          text: String(value.text),
          record: value,
          ...(external
            ? {
                external: {
                  uri: external.uri,
                  title: external.title,
                  description: external.description,
                  thumb:
                    thumb && external.thumb
                      ? {
                          cid: external.thumb.ref.$link,
                          mimeType: thumb.mimeType,
                          bytes: thumb.bytes,
                          alt: '',
                        }
                      : null,
                },
              }
            : {}),
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

      if (req.method === 'GET' && nsid === 'app.bsky.notification.listNotifications') {
        const reasons = req.query.getAll('reasons');
        const mine = fake.notifications.filter(
          (n) => sameAccount(n.to, who) && (!reasons.length || reasons.includes(n.reason)),
        );
        const { page, cursor } = keyset(
          mine,
          (n) => n.indexedAt,
          (n) => n.cid,
          req.query,
        );
        return {
          status: 200,
          body: {
            notifications: page.map((n) => {
              const o = fake.others.get(n.uri);
              return {
                uri: n.uri,
                cid: n.cid,
                author: o ? profileView(o.author, ctx.base) : null,
                reason: n.reason,
                ...(n.reasonSubject ? { reasonSubject: n.reasonSubject } : {}),
                record: o?.record ?? {},
                isRead: false,
                indexedAt: n.indexedAt,
                labels: [],
              };
            }),
            ...(cursor ? { cursor } : {}),
            priority: false,
            seenAt: '1970-01-01T00:00:00.000Z',
          },
        };
      }

      if (req.method === 'GET' && nsid === 'app.bsky.feed.getPostThread') {
        const uri = req.query.get('uri') ?? '';
        const depth = Math.min(1000, Number(req.query.get('depth') ?? 6));
        const t = thread(uri, Number.isFinite(depth) ? depth : 6, ctx.base);
        if (!t) return err(400, 'NotFound', `Post not found: ${uri}`);
        const up = parentUri(uri);
        const parent = up ? postView(up, ctx.base) : null;
        return {
          status: 200,
          body: {
            thread: {
              ...t,
              ...(parent ? { parent: { $type: 'app.bsky.feed.defs#threadViewPost', post: parent } } : {}),
            },
          },
        };
      }

      if (nsid.startsWith('chat.bsky.')) {
        if (req.headers['atproto-proxy'] !== CHAT_PROXY)
          return err(501, 'MethodNotImplemented', 'Method Not Implemented');
        const token = bearer(req) ?? '';
        const session = access.get(token)?.session ?? '';
        if (scopes.get(session) !== 'com.atproto.appPassPrivileged')
          return err(400, 'InvalidToken', 'Bad token method');
        const convoJson = (c: FakeBlueskyConvo) => {
          const last = [...c.messages].sort((a, b) => Date.parse(b.sentAt) - Date.parse(a.sentAt))[0];
          return {
            id: c.id,
            rev: last?.rev ?? '2222222222222',
            members: [
              profileView({ did: who.did, handle: who.handle, displayName: who.handle }, ctx.base),
              profileView(c.other, ctx.base),
            ],
            ...(last ? { lastMessage: messageView(last) } : {}),
            muted: false,
            status: 'accepted',
            unreadCount: c.messages.filter((m) => m.sender.did !== who.did).length,
          };
        };
        const lastAt = (c: FakeBlueskyConvo) =>
          c.messages.reduce((t, m) => (m.sentAt > t ? m.sentAt : t), '1970-01-01T00:00:00.000Z');
        if (req.method === 'GET' && nsid === 'chat.bsky.convo.listConvos') {
          const mine = [...fake.convos.values()].filter((c) => sameAccount(c.to, who));
          const { page, cursor } = keyset(mine, lastAt, (c) => c.id, req.query);
          return { status: 200, body: { convos: page.map(convoJson), ...(cursor ? { cursor } : {}) } };
        }
        if (req.method === 'GET' && nsid === 'chat.bsky.convo.getMessages') {
          const c = fake.convos.get(req.query.get('convoId') ?? '');
          if (!c || !sameAccount(c.to, who)) return err(400, 'InvalidRequest', 'Convo not found');
          const { page, cursor } = keyset(
            c.messages,
            (m) => m.sentAt,
            (m) => m.id,
            req.query,
          );
          return { status: 200, body: { messages: page.map(messageView), ...(cursor ? { cursor } : {}) } };
        }
        if (req.method === 'POST' && nsid === 'chat.bsky.convo.sendMessage') {
          const c = fake.convos.get(String(body.convoId ?? ''));
          if (!c || !sameAccount(c.to, who)) return err(400, 'InvalidRequest', 'Convo not found');
          const text = (body.message as { text?: unknown } | undefined)?.text;
          if (typeof text !== 'string' || !text)
            return err(400, 'InvalidRequest', 'Input/message must have the property "text"');
          if ([...segmenter.segment(text)].length > 1000 || Buffer.byteLength(text) > 10000)
            return err(400, 'InvalidRequest', 'Input/message/text must not be longer than 1000 graphemes');
          const now = new Date().toISOString();
          const m = {
            id: tidAt(Date.now()),
            rev: tidAt(Date.now()),
            text,
            sender: { did: who.did },
            sentAt: now,
          };
          c.messages.push(m);
          return { status: 200, body: messageView(m) };
        }
        return null;
      }

      if (req.method === 'GET' && nsid === 'app.bsky.feed.getPosts') {
        const uris = req.query.getAll('uris');
        if (uris.length > 25)
          return err(400, 'InvalidRequest', 'Error: uris must not have more than 25 elements');
        const posts = uris.flatMap((uri) => {
          const rec = records.get(uri);
          if (!rec) {
            const other = postView(uri, ctx.base);
            return other ? [other] : [];
          }
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
