import { pinterestAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  basicAuth,
  defaultAccount,
  errorPage,
  FakeOAuth,
  type FakeToken,
  type FakeUser,
  followersOf,
  hashDigits,
  hashNumber,
  namedAccount,
  serveAvatar,
} from './oauth.ts';
import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of Pinterest API v5, as its OpenAPI description (pinterest/api-description) documents it:
//   GET  /oauth/                         (www.pinterest.com) client_id, redirect_uri, response_type=code,
//                                        scope comma-separated (boards:read,pins:read,pins:write,
//                                        user_accounts:read), state
//   POST /v5/oauth/token                 Basic client auth; form grant_type=authorization_code, code,
//                                        redirect_uri [, continuous_refresh=true] | grant_type=refresh_token,
//                                        refresh_token [, continuous_refresh=true]
//   GET  /v5/user_account                {account_type, id, username, profile_image, follower_count, …}
//   GET  /v5/boards                      {items: [{id, name, description, privacy, owner, pin_count, …}], bookmark}
//   POST /v5/pins                        board_id, title ≤ 100, description ≤ 800, link ≤ 2048, alt_text ≤ 500,
//                                        media_source image_url | image_base64 (jpeg/png) | video_id (+ cover)
//   GET  /v5/boards/{board_id}          one board of the token's user (as in the list); 404 code 2 otherwise
//   GET  /v5/boards/{board_id}/pins      {items, bookmark}, page_size ≤ 250
//   POST /v5/media                       {media_type: video} → media_id, upload_url, upload_parameters
//   POST <upload_url>                    the S3 form: every upload parameter, then `file` → 204
//   GET  /v5/media/{media_id}            registered → processing → succeeded | failed
//   GET  /v5/pins/{pin_id}/analytics     start_date, end_date, metric_types → {all: {summary_metrics, …}}
// Errors are {"code", "message"} with the documented statuses.
//
// OAuth notes. Code answer {access_token, refresh_token, response_type: "authorization_code", token_type:
// "bearer", expires_in: 2592000, refresh_token_expires_in, refresh_token_expires_at, scope}. The fake app
// is one created before 2025-09-25: its refresh tokens are the legacy kind (365 days, not rotated, a refresh
// answers no refresh_token) unless continuous_refresh=true was sent with the code or a refresh — then
// every refresh answers a new refresh token (60 days; the one sent stops working), as OauthAccessTokenResponse
// Refresh documents (the document, 5.23.0, adds that legacy refresh tokens are no longer supported: apps
// must send continuous_refresh=true). No revoke endpoint is served: the OpenAPI's /oauth/token/revoke only takes tokens of
// system users. Unsure: the authorization page's refusal (the fake redirects error=access_denied).
// Error answers (documented-errors.ts builds them; test/unit/fakes/documented-errors.test.ts validates them
// against the OpenAPI document's schemas): POST /v5/oauth/token declares only `default` Error {code,
// message}. Bad client credentials: 401 {"code": 2, "message": "Authentication failed."}, the example of
// POST /oauth/token/revoke's 401 "Client authentication error." (no WWW-Authenticate, although the client
// authenticates with HTTP Basic as RFC 6749 §5.2 considers). A refused code or refresh token: 401 {"code":
// 283, "message": "The authorization grant is invalid"}, as the token endpoint answers it
// (pinterest/pinterest-python-sdk#114; not in the document). A missing parameter or unsupported grant_type:
// 400 {"code": 1, …} (assumed). The API answers revoked and expired tokens 401 {"code": 2, "message":
// "Authentication failed."} (the document's "UnauthenticatedAccess" examples) and throttles with 429
// {"code": 8, "message": "This request exceeded a rate limit…"} (GET /pins/analytics' example; no
// rate-limit headers documented) — never on its own here: inject documentedErrors.pinterest.throttled.
// Scope gates for flow tokens: user_account needs user_accounts:read, boards boards:read, POST /v5/pins
// pins:write (403 {"code": 403, "message": "Not authorized to access …"}). The default user has two boards; the first
// is DEFAULT_BOARD, the board the existing tests pin to; a fake_user has two boards of its own.

export interface PinterestPin {
  id: string;
  board_id: string;
  title: string | null;
  description: string;
  link: string | null;
  alt_text: string | null;
  created_at: string;
  media_source: Record<string, unknown>;
  /** The image bytes (image_base64) or the uploaded video's bytes (video_id). */
  bytes: Buffer | null;
  contentType: string | null;
  mediaType: 'image' | 'video';
}

interface Media {
  id: string;
  status: 'registered' | 'processing' | 'succeeded' | 'failed';
  params: Record<string, string>;
  bytes: Buffer | null;
  contentType: string | null;
  filename: string | null;
  pollsLeft: number;
  fail: boolean;
}

export interface PinterestBoard {
  id: string;
  name: string;
  description: string;
  privacy: 'PUBLIC' | 'PROTECTED' | 'SECRET';
  pins: number;
  followers: number;
}

export interface PinterestFake extends FakePlatform {
  readonly oauth: FakeOAuth;
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  clientId: string;
  clientSecret: string;
  /** Boards the token user may pin to. */
  boards: Set<string>;
  pins: PinterestPin[];
  /** GET /v5/media answers `processing` this many times after the upload. */
  processingPolls: number;
  /** The next registered video fails processing. */
  failNextMedia: boolean;
  /** Create the next Pin but answer 504, as if the connection died there. */
  loseNextCreate: boolean;
  /** Analytics per Pin id. */
  analytics: Map<string, { IMPRESSION: number; SAVE: number; PIN_CLICK: number; OUTBOUND_CLICK: number }>;
  minted: string[];
  /** Adds an existing Pin (created earlier by someone else). */
  seed(
    pin: Partial<PinterestPin> & { board_id: string; description: string; created_at: string },
  ): PinterestPin;
}

export const DEFAULT_BOARD = '549755885175';

const error = (status: number, code: number, message: string): FakeResponse => ({
  status,
  body: { code, message },
});

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** The parts of a multipart/form-data body (binary-safe). */
function multipart(req: FakeRequest): Map<string, { data: Buffer; filename?: string; type?: string }> | null {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(req.headers['content-type'] ?? '');
  if (!boundary) return null;
  const delim = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const out = new Map<string, { data: Buffer; filename?: string; type?: string }>();
  let pos = req.body.indexOf(delim);
  while (pos !== -1) {
    const start = pos + delim.length;
    if (req.body.subarray(start, start + 2).toString() === '--') break;
    const next = req.body.indexOf(delim, start);
    if (next === -1) return null;
    const part = req.body.subarray(start + 2, next - 2); // skip CRLF after the delimiter and before the next
    const split = part.indexOf('\r\n\r\n');
    const head = part.subarray(0, split).toString('utf8');
    const name = /name="([^"]*)"/.exec(head)?.[1];
    if (name !== undefined) {
      const filename = /filename="([^"]*)"/.exec(head)?.[1];
      const type = /content-type:\s*([^\r\n]+)/i.exec(head)?.[1];
      out.set(name, {
        data: Buffer.from(part.subarray(split + 4)),
        ...(filename ? { filename } : {}),
        ...(type ? { type } : {}),
      });
    }
    pos = next;
  }
  return out;
}

const AUTHORIZE: AuthorizeSpec = {
  separator: /,+/,
  knownScope: (s) => /^[a-z_]+:(read|write)(_secret)?$/.test(s),
  publishes: (s) => s.startsWith('pins:write'),
  pkce: 'optional',
  defaultScopes: null,
  denied: { error: 'access_denied', error_description: 'The user denied access to your app.' },
  page: (status, problem) =>
    errorPage(status, 'Oops!', problem === 'client' ? 'Invalid client_id.' : 'Invalid redirect_uri.'),
};
const ACCESS_TTL = 2_592_000;
const LEGACY_REFRESH_TTL = 31_536_000;
const CONTINUOUS_REFRESH_TTL = 5_184_000;

/** A user's boards: the default user's are DEFAULT_BOARD and 549755885176. */
export function boardsOf(user: FakeUser): PinterestBoard[] {
  if (user.isDefault)
    return [
      {
        id: DEFAULT_BOARD,
        name: 'Herald',
        description: 'Posts from Herald',
        privacy: 'PUBLIC',
        pins: 42,
        followers: 120,
      },
      { id: '549755885176', name: 'Ideas', description: '', privacy: 'SECRET', pins: 7, followers: 0 },
    ];
  return [0, 1].map((i) => ({
    id: `5497${hashDigits(`${user.name}/${i}`, 8, 'board')}`,
    name: i ? `${user.name} ideas` : user.name,
    description: '',
    privacy: i ? 'SECRET' : 'PUBLIC',
    pins: hashNumber(`${user.name}/${i}`, 300, 'pins'),
    followers: followersOf(`${user.name}/${i}`) % 1000,
  }));
}

export function createFake(): PinterestFake {
  let seq = 0;
  const media = new Map<string, Media>();

  const fake: PinterestFake = {
    name: 'pinterest',
    oauth: new FakeOAuth({
      platform: 'pinterest',
      prefixes: { access: 'pina_', refresh: 'pinr_' },
      defaultUser: () =>
        defaultAccount({
          id: '2783136121146311751',
          username: 'herald',
          displayName: 'Herald',
          followers: 980,
          following: 347,
          posts: 339,
        }),
      makeUser: (name) =>
        namedAccount(name, hashDigits(name, 19, 'pinterest'), {
          following: hashNumber(name, 900, 'following'),
          posts: hashNumber(name, 2000, 'pins'),
        }),
    }),
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clientId: '1484362',
    clientSecret: 'app-secret',
    boards: new Set([DEFAULT_BOARD, '549755885176']),
    pins: [],
    processingPolls: 1,
    failNextMedia: false,
    loseNextCreate: false,
    analytics: new Map(),
    minted: [],

    seed(p) {
      seq++;
      const pin: PinterestPin = {
        id: `${1_000_000_000_000 + seq}`,
        title: null,
        link: null,
        alt_text: null,
        media_source: { source_type: 'image_url', url: 'https://i.example/x.jpg' },
        bytes: null,
        contentType: null,
        mediaType: 'image',
        ...p,
      };
      fake.pins.push(pin);
      return pin;
    },

    reset() {
      seq = 0;
      fake.oauth.reset();
      media.clear();
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.boards = new Set([DEFAULT_BOARD, '549755885176']);
      fake.pins = [];
      fake.processingPolls = 1;
      fake.failNextMedia = false;
      fake.loseNextCreate = false;
      fake.analytics = new Map();
      fake.minted = [];
    },

    handle(req: FakeRequest, ctx: FakeContext): FakeResponse {
      if (req.method === 'GET' && req.path === '/oauth/') return fake.oauth.authorize(req, AUTHORIZE);
      if (req.method === 'POST' && req.path === '/v5/oauth/token') return token(req);
      if (req.method === 'POST' && req.path === '/s3-upload/') return s3(req);
      const avatar = serveAvatar(req);
      if (avatar) return avatar;
      const t = bearer(req);
      const issued = fake.oauth.check(t);
      if (!t || (issued.state === 'unknown' ? !fake.validTokens.has(t) : issued.state !== 'valid'))
        return pinterestAnswers.authFailed();
      const me = issued.state === 'valid' ? issued.token.grant.user : fake.oauth.user();
      if (req.method === 'GET' && req.path === '/v5/user_account') {
        if (!fake.oauth.allows(t, 'user_accounts:read'))
          return error(403, 403, 'Not authorized to access the user account.');
        return userAccount(ctx, me);
      }
      if (req.method === 'GET' && req.path === '/v5/boards') {
        if (!fake.oauth.allows(t, 'boards:read'))
          return error(403, 403, 'Not authorized to access the boards.');
        return boardList(req, me);
      }
      if (req.method === 'POST' && req.path === '/v5/pins') {
        if (!fake.oauth.allows(t, 'pins:write')) return error(403, 403, 'Not authorized to create Pins.');
        return createPin(req);
      }
      if (req.method === 'POST' && req.path === '/v5/media') return registerMedia(req, ctx);
      let m = /^\/v5\/media\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && m) return mediaStatus(m[1] ?? '');
      m = /^\/v5\/boards\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && m) {
        if (!fake.oauth.allows(t, 'boards:read'))
          return error(403, 403, 'Not authorized to access the boards.');
        const board = boardsOf(me).find((b) => b.id === m?.[1]);
        return board ? { status: 200, body: boardRow(board, me) } : error(404, 2, 'Board not found.');
      }
      m = /^\/v5\/boards\/([^/]+)\/pins$/.exec(req.path);
      if (req.method === 'GET' && m) return boardPins(req, m[1] ?? '');
      m = /^\/v5\/pins\/([^/]+)\/analytics$/.exec(req.path);
      if (req.method === 'GET' && m) return analytics(req, m[1] ?? '');
      // DELETE /v5/pins/{pin_id} (pins/delete, scopes pins:write and boards:read) → 204; the pin is
      // gone, so a second delete is 404 {code, message} "Pin not found.".
      m = /^\/v5\/pins\/([^/]+)$/.exec(req.path);
      if (req.method === 'DELETE' && m) {
        if (!fake.oauth.allows(t, 'pins:write')) return error(403, 403, 'Not authorized to access the pins.');
        const i = fake.pins.findIndex((p) => p.id === m?.[1]);
        if (i < 0) return error(404, 3, 'Pin not found.');
        fake.pins.splice(i, 1);
        return { status: 204 };
      }
      return error(404, 3, 'Not found.');
    },
  };

  function answer(
    access: FakeToken,
    refresh: FakeToken | null,
    responseType: 'authorization_code' | 'refresh_token',
  ) {
    const refreshIn = refresh ? (fake.oauth.expiresIn(refresh) ?? LEGACY_REFRESH_TTL) : 0;
    return {
      access_token: access.token,
      ...(refresh
        ? {
            refresh_token: refresh.token,
            refresh_token_expires_in: refreshIn,
            refresh_token_expires_at: Math.floor(Date.now() / 1000) + refreshIn,
          }
        : {}),
      response_type: responseType,
      token_type: 'bearer',
      expires_in: fake.oauth.expiresIn(access) ?? ACCESS_TTL,
      scope: access.grant.scopes.join(','),
    };
  }

  function token(req: FakeRequest): FakeResponse {
    const basic = basicAuth(req);
    const legacy = basic?.id === fake.clientId && basic.secret === fake.clientSecret;
    if (!basic || (!legacy && fake.oauth.checkClient(basic.id, basic.secret) !== 'ok'))
      return pinterestAnswers.authFailed();
    const form = new URLSearchParams(req.body.toString('utf8'));
    const continuous = form.get('continuous_refresh') === 'true';
    if (form.get('grant_type') === 'authorization_code') {
      if (!form.get('code') || !form.get('redirect_uri'))
        return error(400, 1, 'code and redirect_uri are required.');
      const r = fake.oauth.redeem(form.get('code') ?? '', {
        clientId: basic.id,
        redirectUri: form.get('redirect_uri'),
        verifier: form.get('code_verifier'),
      });
      if (!r.ok) return pinterestAnswers.grantInvalid();
      if (continuous) r.grant.extra.continuous = true;
      const access = fake.oauth.issue(r.grant, 'access', ACCESS_TTL);
      const refresh = fake.oauth.issue(
        r.grant,
        'refresh',
        continuous ? CONTINUOUS_REFRESH_TTL : LEGACY_REFRESH_TTL,
      );
      return { status: 200, body: answer(access, refresh, 'authorization_code') };
    }
    if (form.get('grant_type') !== 'refresh_token') return error(400, 1, 'Unsupported grant_type.');
    const old = form.get('refresh_token') ?? '';
    if (fake.oauth.find(old)) {
      const grant = fake.oauth.find(old)?.grant;
      if (grant && continuous) grant.extra.continuous = true;
      const rotate = grant?.extra.continuous === true;
      const r = fake.oauth.useRefresh(old, basic.id, rotate);
      if (!r.ok) return pinterestAnswers.grantInvalid();
      const access = fake.oauth.issue(r.grant, 'access', ACCESS_TTL);
      fake.minted.push(access.token);
      const refresh = rotate ? fake.oauth.issue(r.grant, 'refresh', CONTINUOUS_REFRESH_TTL) : null;
      return { status: 200, body: answer(access, refresh, 'refresh_token') };
    }
    if (!fake.refreshTokens.has(old)) return pinterestAnswers.grantInvalid();
    fake.oauth.countRefresh();
    seq++;
    const access = `pina_minted${seq}`;
    fake.validTokens.add(access);
    fake.minted.push(access);
    return {
      status: 200,
      body: {
        access_token: access,
        response_type: 'refresh_token',
        token_type: 'bearer',
        expires_in: ACCESS_TTL,
        scope: 'boards:read,pins:read,pins:write',
      },
    };
  }

  function userAccount(ctx: FakeContext, me: FakeUser): FakeResponse {
    return {
      status: 200,
      body: {
        account_type: me.isDefault ? 'BUSINESS' : 'PINNER',
        id: me.id,
        username: me.username,
        about: '',
        business_name: me.isDefault ? 'Herald' : null,
        profile_image: `${ctx.base}${me.avatarPath}`,
        website_url: '',
        board_count: boardsOf(me).length,
        pin_count: me.posts,
        follower_count: me.followers,
        following_count: me.following,
        monthly_views: me.followers * 12,
      },
    };
  }

  function boardList(req: FakeRequest, me: FakeUser): FakeResponse {
    const size = Number(req.query.get('page_size') ?? '25');
    if (!Number.isInteger(size) || size < 1 || size > 250)
      return error(400, 1, 'page_size must be 1 to 250.');
    const privacy = req.query.get('privacy');
    const all = boardsOf(me).filter((b) => !privacy || b.privacy === privacy);
    const from = Number(req.query.get('bookmark') ?? '0') || 0;
    const items = all.slice(from, from + size).map((b) => boardRow(b, me));
    return { status: 200, body: { items, bookmark: from + size < all.length ? String(from + size) : null } };
  }

  function boardRow(b: PinterestBoard, me: FakeUser) {
    return {
      id: b.id,
      name: b.name,
      description: b.description,
      privacy: b.privacy,
      owner: { username: me.username },
      created_at: '2024-01-01T00:00:00',
      board_pins_modified_at: '2024-01-01T00:00:00',
      collaborator_count: 0,
      pin_count: b.pins + fake.pins.filter((p) => p.board_id === b.id).length,
      follower_count: b.followers,
      media: { image_cover_url: null, pin_thumbnail_urls: [] },
      is_ads_only: false,
    };
  }

  /** Boards of every user of the fake, for pinning. */
  function knownBoard(id: string): boolean {
    return (
      fake.boards.has(id) || [...fake.oauth.users.values()].some((u) => boardsOf(u).some((b) => b.id === id))
    );
  }

  function createPin(req: FakeRequest): FakeResponse {
    const b = obj(req.json);
    if (!b) return error(400, 1, 'Invalid request body.');
    const board = b.board_id;
    if (typeof board !== 'string' || !board) return error(400, 1, 'board_id is required.');
    if (!knownBoard(board)) return error(404, 3, 'Board not found.');
    const check = (field: string, max: number): FakeResponse | null => {
      const v = b[field];
      if (v === undefined || v === null) return null;
      return typeof v === 'string' && [...v].length <= max
        ? null
        : error(400, 1, `Invalid parameters: ${field} is too long or invalid.`);
    };
    const bad =
      check('title', 100) ?? check('description', 800) ?? check('link', 2048) ?? check('alt_text', 500);
    if (bad) return bad;
    if (typeof b.link === 'string' && !/^https?:\/\//.test(b.link)) return error(400, 1, 'Invalid link.');
    const src = obj(b.media_source);
    if (!src) return error(400, 1, 'media_source is required.');
    let bytes: Buffer | null = null;
    let contentType: string | null = null;
    let mediaType: 'image' | 'video' = 'image';
    switch (src.source_type) {
      case 'image_url':
        if (typeof src.url !== 'string' || !/^https?:\/\//.test(src.url))
          return error(400, 1, 'Invalid image url.');
        break;
      case 'image_base64': {
        if (src.content_type !== 'image/jpeg' && src.content_type !== 'image/png') {
          return error(400, 1, 'Invalid image content_type: must be image/jpeg or image/png.');
        }
        if (typeof src.data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(src.data))
          return error(400, 1, 'Invalid image data.');
        bytes = Buffer.from(src.data, 'base64');
        contentType = src.content_type;
        break;
      }
      case 'video_id': {
        const m = typeof src.media_id === 'string' ? media.get(src.media_id) : undefined;
        if (!m) return error(400, 1, 'Invalid media_id.');
        if (m.status !== 'succeeded') return error(400, 1, 'The video media is not ready yet.');
        if (
          src.cover_image_url === undefined &&
          src.cover_image_data === undefined &&
          src.cover_image_key_frame_time === undefined
        ) {
          return error(400, 1, 'A cover image is required for a video Pin.');
        }
        bytes = m.bytes;
        contentType = m.contentType;
        mediaType = 'video';
        break;
      }
      default:
        return error(400, 1, 'Invalid media_source.source_type.');
    }
    seq++;
    const pin: PinterestPin = {
      id: `${1_000_000_000_000 + seq}`,
      board_id: board,
      title: typeof b.title === 'string' ? b.title : null,
      description: typeof b.description === 'string' ? b.description : '',
      link: typeof b.link === 'string' ? b.link : null,
      alt_text: typeof b.alt_text === 'string' ? b.alt_text : null,
      created_at: new Date().toISOString(),
      media_source: src,
      bytes,
      contentType,
      mediaType,
    };
    fake.pins.push(pin);
    if (fake.loseNextCreate) {
      fake.loseNextCreate = false;
      return { status: 504, body: 'upstream request timeout' };
    }
    return { status: 201, body: view(pin) };
  }

  function view(p: PinterestPin) {
    return {
      id: p.id,
      created_at: p.created_at,
      link: p.link,
      title: p.title,
      description: p.description,
      alt_text: p.alt_text,
      board_id: p.board_id,
      board_section_id: null,
      board_owner: { username: 'herald' },
      media: { media_type: p.mediaType },
      pin_metrics: null,
    };
  }

  function boardPins(req: FakeRequest, board: string): FakeResponse {
    if (!fake.boards.has(board)) return error(404, 3, 'Board not found.');
    const size = Number(req.query.get('page_size') ?? '25');
    if (!Number.isInteger(size) || size < 1 || size > 250)
      return error(400, 1, 'page_size must be 1 to 250.');
    const from = Number(req.query.get('bookmark') ?? '0') || 0;
    const all = fake.pins.filter((p) => p.board_id === board).reverse();
    const items = all.slice(from, from + size).map(view);
    const next = from + size < all.length ? String(from + size) : null;
    return { status: 200, body: { items, bookmark: next } };
  }

  function registerMedia(req: FakeRequest, ctx: FakeContext): FakeResponse {
    if (obj(req.json)?.media_type !== 'video') return error(400, 1, 'media_type must be video.');
    seq++;
    const id = `${5_000_000 + seq}`;
    const params = {
      'x-amz-date': '20260101T000000Z',
      'x-amz-signature': `sig${id}`,
      'x-amz-security-token': `sts${id}`,
      'x-amz-algorithm': 'AWS4-HMAC-SHA256',
      key: `uploads/${id}/video`,
      policy: `policy${id}`,
      'x-amz-credential': 'AKIA/20260101/us-east-1/s3/aws4_request',
      'Content-Type': 'multipart/form-data',
    };
    media.set(id, {
      id,
      status: 'registered',
      params,
      bytes: null,
      contentType: null,
      filename: null,
      pollsLeft: 0,
      fail: false,
    });
    return {
      status: 201,
      body: {
        media_id: id,
        media_type: 'video',
        upload_url: `${ctx.base}/s3-upload/`,
        upload_parameters: params,
      },
    };
  }

  function s3(req: FakeRequest): FakeResponse {
    const parts = multipart(req);
    const key = parts?.get('key')?.data.toString();
    const m = [...media.values()].find((x) => x.params.key === key);
    if (!parts || !m) return { status: 400, body: '<Error><Code>InvalidArgument</Code></Error>' };
    for (const [k, v] of Object.entries(m.params)) {
      if (parts.get(k)?.data.toString() !== v) {
        return {
          status: 403,
          body: `<Error><Code>AccessDenied</Code><Message>missing ${k}</Message></Error>`,
        };
      }
    }
    // S3 ignores fields after the file: it must come last.
    if ([...parts.keys()].at(-1) !== 'file')
      return { status: 400, body: '<Error><Code>InvalidArgument</Code></Error>' };
    const file = parts.get('file');
    if (!file?.data.length)
      return { status: 400, body: '<Error><Code>IncorrectNumberOfFilesInPostRequest</Code></Error>' };
    m.bytes = file.data;
    m.contentType = file.type ?? null;
    m.filename = file.filename ?? null;
    m.status = 'processing';
    m.pollsLeft = fake.processingPolls;
    m.fail = fake.failNextMedia;
    fake.failNextMedia = false;
    return { status: 204 };
  }

  function mediaStatus(id: string): FakeResponse {
    const m = media.get(id);
    if (!m) return error(404, 3, 'Media not found.');
    if (m.status === 'processing') {
      if (m.pollsLeft > 0) m.pollsLeft--;
      else m.status = m.fail ? 'failed' : 'succeeded';
    }
    return { status: 200, body: { media_id: m.id, media_type: 'video', status: m.status } };
  }

  function analytics(req: FakeRequest, id: string): FakeResponse {
    const pin = fake.pins.find((p) => p.id === id);
    if (!pin) return error(404, 3, 'Pin not found.');
    const start = req.query.get('start_date');
    const end = req.query.get('end_date');
    const types = (req.query.get('metric_types') ?? '').split(',').filter(Boolean);
    if (
      !start ||
      !end ||
      !/^\d{4}-\d{2}-\d{2}$/.test(start) ||
      !/^\d{4}-\d{2}-\d{2}$/.test(end) ||
      !types.length
    ) {
      return error(400, 1, 'start_date, end_date and metric_types are required.');
    }
    if ((Date.parse(end) - Date.parse(start)) / 86_400_000 > 90)
      return error(400, 1, 'The date range may not exceed 90 days.');
    const all = fake.analytics.get(id) ?? { IMPRESSION: 0, SAVE: 0, PIN_CLICK: 0, OUTBOUND_CLICK: 0 };
    const summary = Object.fromEntries(
      types.filter((t) => t in all).map((t) => [t, all[t as keyof typeof all]]),
    );
    return {
      status: 200,
      body: {
        all: {
          daily_metrics: [{ date: end, data_status: 'READY', metrics: summary }],
          summary_metrics: summary,
        },
      },
    };
  }

  return fake;
}
