import { tiktokAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  defaultAccount,
  errorPage,
  FakeOAuth,
  type FakeToken,
  type FakeUser,
  hashId,
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

// Contract fake of TikTok's Content Posting API (Direct Post), Login Kit's OAuth 2.0 server and the Display
// API user info and video query, as documented on developers.tiktok.com:
//   GET  /v2/auth/authorize/                    (www.tiktok.com) client_key, scope comma-separated,
//                                               redirect_uri, state, response_type=code, optional
//                                               code_challenge (S256; hex or base64url, see below)
//                                               → redirect ?code&scopes=<granted>&state
//   POST /v2/oauth/token/                       form: client_key, client_secret, grant_type=authorization_code,
//                                               code, redirect_uri, code_verifier? | grant_type=refresh_token,
//                                               refresh_token → {access_token, expires_in, open_id,
//                                               refresh_expires_in, refresh_token, scope, token_type: "Bearer"}
//   POST /v2/oauth/revoke/                      form: client_key, client_secret, token → 200 {}
//   GET  /v2/user/info/?fields=…                → {data: {user: {…}}, error: {code: "ok", message, log_id}};
//                                               fields gated by user.info.basic/.profile/.stats
//                                               (401 scope_not_authorized), bad tokens 401 access_token_invalid
//   POST /v2/post/publish/creator_info/query/   → privacy_level_options, *_disabled
//   POST /v2/post/publish/video/init/           FILE_UPLOAD with the documented chunk rules → publish_id, upload_url
//   PUT  /upload/?upload_id=…                   sequential chunks, Content-Range; 206 per chunk, 201 when complete
//   POST /v2/post/publish/inbox/video/init/     (scope video.upload) source_info only — a post_info is
//                                               refused (400 invalid_params); the upload ends in the
//                                               creator's inbox: SEND_TO_USER_INBOX
//   POST /v2/post/publish/content/init/         PHOTO, PULL_FROM_URL, post_mode DIRECT_POST | MEDIA_UPLOAD
//                                               (MEDIA_UPLOAD: title and description only, → SEND_TO_USER_INBOX)
//   POST /v2/post/publish/status/fetch/         PROCESSING_UPLOAD|PROCESSING_DOWNLOAD → PUBLISH_COMPLETE |
//                                               SEND_TO_USER_INBOX | FAILED
//   POST /v2/video/query/?fields=…              {filters: {video_ids}} → like/comment/share/view counts
// Envelope {"data", "error": {"code", "message", "log_id"}}; the post ids are emitted as bare 19-digit JSON
// numbers, exactly as TikTok does (they do not fit a double).
// Audit: "All content posted by unaudited clients will be restricted to private viewing mode" (Direct
// Post reference). With `audited` false (POST /__fakes/tiktok/config {"audited": false}) a Direct Post
// (video or photo) at any privacy level but SELF_ONLY is refused 403
// unaudited_client_can_only_post_to_private_accounts (the code of the Direct Post error table; the
// message wording is the fake's). Default: audited, as the fake's earlier tests assume.
//
// OAuth notes. Token endpoint errors are {"error", "error_description", "log_id"} with the RFC 6749 §5.2
// categories (Login Kit "OAuth Error Handling"); the page gives no HTTP statuses and no wordings, so these
// are assumptions: 401 invalid_client "Client key or secret is incorrect." (credentials travel in the form,
// so RFC 6749 asks no WWW-Authenticate), 400 invalid_grant for unknown/used/expired codes and refresh
// tokens and another redirect_uri, 400 invalid_request "Code verifier or code challenge is invalid." for a
// wrong verifier. Herald's OAuth client also expects TikTok to answer some errors with HTTP 200 and an
// `error` field (unverified); documentedErrors.tiktok.variants.grantRefusedAs200 injects that answer.
// API errors (TikTok API v2 "Error Handling", with their documented statuses): revoked, expired and
// unknown tokens 401 access_token_invalid; a missing scope 401 scope_not_authorized; throttling 429
// rate_limit_exceeded — never produced on its own: inject documentedErrors.tiktok.throttled.
// Lifetimes follow the current "Manage OAuth Access Tokens" page: access tokens 2 hours (expires_in 7200)
// and refresh tokens 180 days (refresh_expires_in 15552000, counting down), where older pages (and Herald's
// brief) say 86400 and 31536000. Refresh tokens rotate: the one sent stops working. PKCE: the web guide
// does not use it, the desktop guide hashes the verifier to a hex SHA-256 — the fake accepts S256 as hex or
// as RFC 7636 base64url. A token issued through the flow needs video.publish for the posting endpoints
// (401 scope_not_authorized). Unsure: the exact deny redirect (the fake: error=access_denied with an
// error_description) and whether revoke answers {} or an empty body (the page shows {}).

const MB = 1024 * 1024;
const PRIVACY = ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'FOLLOWER_OF_CREATOR', 'SELF_ONLY'];

export interface TikTokPost {
  id: string;
  publishId: string;
  kind: 'video' | 'photo';
  /** direct: posted to the profile; inbox: uploaded to the creator's inbox (inbox/video/init, MEDIA_UPLOAD). */
  mode: 'direct' | 'inbox';
  /** Video caption (post_info.title) or the photo post's title. */
  title: string;
  description: string;
  privacyLevel: string;
  postInfo: Record<string, unknown>;
  sourceInfo: Record<string, unknown>;
  /** The uploaded video, reassembled from its chunks. */
  bytes: Buffer | null;
  contentType: string | null;
  photoUrls: string[];
  /** Content-Range of every chunk, in order. */
  chunks: string[];
}

interface Publish {
  id: string;
  kind: 'video' | 'photo';
  mode: 'direct' | 'inbox';
  postInfo: Record<string, unknown>;
  sourceInfo: Record<string, unknown>;
  uploadId: string;
  size: number;
  chunkSize: number;
  chunkCount: number;
  parts: Buffer[];
  ranges: string[];
  received: number;
  contentType: string | null;
  /** Status fetches left before PUBLISH_COMPLETE, once the media is in. */
  pollsLeft: number;
  failReason: string | null;
  post: TikTokPost | null;
}

export interface TikTokFake extends FakePlatform {
  readonly oauth: FakeOAuth;
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  clientKey: string;
  clientSecret: string;
  creator: {
    privacy_level_options: string[];
    comment_disabled: boolean;
    duet_disabled: boolean;
    stitch_disabled: boolean;
    max_video_post_duration_sec: number;
  };
  /** Published posts (after the media arrived). */
  posts: TikTokPost[];
  /** Status fetches answering PROCESSING_* before PUBLISH_COMPLETE. */
  processingPolls: number;
  /** Makes the next post end FAILED with this fail_reason. */
  failNextPost: string | null;
  /** Engagement per post id for /v2/video/query/. */
  stats: Map<string, { like_count: number; comment_count: number; share_count: number; view_count: number }>;
  /** Access tokens minted by the refresh endpoint. */
  minted: string[];
  /** Whether TikTok has audited the client: unaudited clients' Direct Posts must be SELF_ONLY. */
  audited: boolean;
  /** Ends processing of every post: the next status fetch answers its final state. */
  settle(): void;
}

const logId = () => `2026${Math.random().toString(16).slice(2, 14).toUpperCase()}`;

function envelope(status: number, data: unknown, code = 'ok', message = ''): FakeResponse {
  return { status, body: { data, error: { code, message, log_id: logId() } } };
}

const fail = (status: number, code: string, message: string) => envelope(status, {}, code, message);

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** UTF-16 length, as TikTok counts its "runes". */
const runes = (s: string) => s.length;

const ACCESS_TTL = 7200;
const REFRESH_TTL = 15552000;

const AUTHORIZE: AuthorizeSpec = {
  clientParam: 'client_key',
  separator: /,+/,
  knownScope: (s) => /^[a-z_]+(\.[a-z_]+)+$/.test(s),
  publishes: (s) => s === 'video.publish',
  pkce: 'optional',
  defaultScopes: null,
  denied: { error: 'access_denied', error_description: 'The user denied the authorization request.' },
  successParams: (grant) => ({ scopes: grant.scopes.join(',') }),
  page: (status, problem) =>
    errorPage(
      status,
      'Something went wrong',
      problem === 'client' ? 'client_key: invalid client key' : 'redirect_uri: Illegal redirect link',
    ),
};

/** Display API fields and the scope each needs. */
const USER_FIELDS: Record<string, string> = {
  open_id: 'user.info.basic',
  union_id: 'user.info.basic',
  avatar_url: 'user.info.basic',
  avatar_url_100: 'user.info.basic',
  avatar_large_url: 'user.info.basic',
  display_name: 'user.info.basic',
  bio_description: 'user.info.profile',
  profile_deep_link: 'user.info.profile',
  is_verified: 'user.info.profile',
  username: 'user.info.profile',
  follower_count: 'user.info.stats',
  following_count: 'user.info.stats',
  likes_count: 'user.info.stats',
  video_count: 'user.info.stats',
};

export function createFake(): TikTokFake {
  let seq = 0;
  const publishes = new Map<string, Publish>();
  const byUpload = new Map<string, Publish>();

  const fake: TikTokFake = {
    name: 'tiktok',
    oauth: new FakeOAuth({
      platform: 'tiktok',
      prefixes: { access: 'act.', refresh: 'rft.' },
      defaultUser: () =>
        defaultAccount({
          id: 'open-id-1',
          username: 'herald',
          displayName: 'Herald',
          followers: 5300,
          following: 12,
          posts: 41,
        }),
      makeUser: (name) => {
        const h = hashId(name, 32, 'tiktok').replace(/[-_]/g, '0').toLowerCase();
        return namedAccount(
          name,
          `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`,
          { following: hashNumber(name, 700, 'following'), posts: hashNumber(name, 300, 'posts') },
        );
      },
    }),
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clientKey: 'client-key',
    clientSecret: 'client-secret',
    creator: {
      privacy_level_options: [...PRIVACY],
      comment_disabled: false,
      duet_disabled: false,
      stitch_disabled: false,
      max_video_post_duration_sec: 600,
    },
    posts: [],
    processingPolls: 1,
    failNextPost: null,
    stats: new Map(),
    minted: [],
    audited: true,

    configure(settings: Record<string, unknown>) {
      if ('audited' in settings) {
        if (typeof settings.audited !== 'boolean') throw new Error('audited must be a boolean');
        fake.audited = settings.audited;
      }
      return { audited: fake.audited };
    },

    settle() {
      for (const p of publishes.values()) p.pollsLeft = 0;
    },

    reset() {
      seq = 0;
      fake.oauth.reset();
      publishes.clear();
      byUpload.clear();
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.creator = {
        privacy_level_options: [...PRIVACY],
        comment_disabled: false,
        duet_disabled: false,
        stitch_disabled: false,
        max_video_post_duration_sec: 600,
      };
      fake.posts = [];
      fake.processingPolls = 1;
      fake.failNextPost = null;
      fake.stats = new Map();
      fake.minted = [];
      fake.audited = true;
    },

    handle(req: FakeRequest, ctx: FakeContext): FakeResponse {
      if (req.method === 'GET' && req.path === '/v2/auth/authorize/')
        return fake.oauth.authorize(req, AUTHORIZE);
      if (req.method === 'POST' && req.path === '/v2/oauth/token/') return token(req);
      if (req.method === 'POST' && req.path === '/v2/oauth/revoke/') return revoke(req);
      if (req.method === 'PUT' && req.path === '/upload/') return upload(req);
      const avatar = serveAvatar(req);
      if (avatar) return avatar;
      if (req.method !== 'POST' && !(req.method === 'GET' && req.path === '/v2/user/info/'))
        return fail(404, 'invalid_params', 'Unknown endpoint');

      const t = bearer(req);
      const issued = fake.oauth.check(t);
      if (!t || (issued.state === 'unknown' ? !fake.validTokens.has(t) : issued.state !== 'valid')) {
        return tiktokAnswers.tokenInvalid();
      }
      const me = issued.state === 'valid' ? issued.token.grant.user : fake.oauth.user();
      if (req.path === '/v2/user/info/') return userInfo(req, ctx, t, me);
      // The inbox upload needs video.upload; photos take either scope (their references' Scope rows).
      const scopes =
        req.path === '/v2/post/publish/inbox/video/init/'
          ? ['video.upload']
          : req.path === '/v2/post/publish/content/init/' || req.path === '/v2/post/publish/status/fetch/'
            ? ['video.publish', 'video.upload']
            : ['video.publish'];
      if (req.path.startsWith('/v2/post/publish/') && !fake.oauth.allows(t, ...scopes))
        return fail(
          401,
          'scope_not_authorized',
          'The user did not authorize the scope required for completing this request.',
        );
      switch (req.path) {
        case '/v2/post/publish/creator_info/query/':
          return envelope(200, {
            creator_avatar_url: me.isDefault
              ? 'https://p16.tiktokcdn.example/avatar.jpeg'
              : `${ctx.base}${me.avatarPath}`,
            creator_username: me.username,
            creator_nickname: me.displayName,
            ...fake.creator,
          });
        case '/v2/post/publish/video/init/':
          return videoInit(req, ctx, 'direct');
        case '/v2/post/publish/inbox/video/init/':
          return videoInit(req, ctx, 'inbox');
        case '/v2/post/publish/content/init/':
          return contentInit(req);
        case '/v2/post/publish/status/fetch/':
          return status(req);
        case '/v2/video/query/':
          return videoQuery(req);
      }
      return fail(404, 'invalid_params', 'Unknown endpoint');
    },
  };

  const oauthError = (status: number, error: string, description: string): FakeResponse => ({
    status,
    body: { error, error_description: description, log_id: logId() },
  });

  function tokenAnswer(access: FakeToken, refresh: FakeToken) {
    return {
      access_token: access.token,
      expires_in: fake.oauth.expiresIn(access) ?? ACCESS_TTL,
      open_id: access.grant.user.id,
      refresh_expires_in: fake.oauth.expiresIn(refresh) ?? REFRESH_TTL,
      refresh_token: refresh.token,
      scope: access.grant.scopes.join(','),
      token_type: 'Bearer',
    };
  }

  /** Client key and secret from the form; a refusal, or the client key. */
  function client(req: FakeRequest, form: URLSearchParams): string | FakeResponse {
    if (!(req.headers['content-type'] ?? '').includes('application/x-www-form-urlencoded')) {
      return oauthError(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    }
    const key = form.get('client_key') ?? '';
    const secret = form.get('client_secret') ?? '';
    if (key === fake.clientKey && secret === fake.clientSecret) return key;
    if (fake.oauth.checkClient(key, secret) === 'ok') return key;
    return oauthError(401, 'invalid_client', 'Client key or secret is incorrect.');
  }

  function token(req: FakeRequest): FakeResponse {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const c = client(req, form);
    if (typeof c !== 'string') return c;
    const grantType = form.get('grant_type');
    if (grantType === 'authorization_code') {
      if (!form.get('code') || !form.get('redirect_uri'))
        return oauthError(400, 'invalid_request', 'code and redirect_uri are required.');
      const r = fake.oauth.redeem(form.get('code') ?? '', {
        clientId: c,
        redirectUri: form.get('redirect_uri'),
        verifier: form.get('code_verifier'),
        hexToo: true,
      });
      if (!r.ok) {
        if (r.reason === 'pkce' || r.reason === 'pkce_missing')
          return oauthError(400, 'invalid_request', 'Code verifier or code challenge is invalid.');
        return oauthError(
          400,
          'invalid_grant',
          r.reason === 'expired' ? 'Authorization code is expired.' : 'Authorization code is invalid.',
        );
      }
      const access = fake.oauth.issue(r.grant, 'access', ACCESS_TTL);
      const refresh = fake.oauth.issue(r.grant, 'refresh', REFRESH_TTL);
      return { status: 200, body: tokenAnswer(access, refresh) };
    }
    if (grantType !== 'refresh_token')
      return oauthError(400, 'unsupported_grant_type', 'Unsupported grant type.');
    const old = form.get('refresh_token') ?? '';
    if (fake.oauth.find(old)) {
      // Refresh tokens rotate: the old one stops working; the new one keeps the old one's expiry.
      const r = fake.oauth.useRefresh(old, c, true);
      if (!r.ok) return oauthError(400, 'invalid_grant', 'Refresh token is invalid or expired.');
      const access = fake.oauth.issue(r.grant, 'access', ACCESS_TTL);
      const refresh = fake.oauth.issue(r.grant, 'refresh', fake.oauth.expiresIn(r.token) ?? REFRESH_TTL);
      fake.minted.push(access.token);
      return { status: 200, body: tokenAnswer(access, refresh) };
    }
    if (!fake.refreshTokens.has(old))
      return oauthError(400, 'invalid_grant', 'Refresh token is invalid or expired.');
    // Refresh tokens rotate: the old one stops working.
    fake.refreshTokens.delete(old);
    fake.oauth.countRefresh();
    seq++;
    const access = `act.minted${seq}`;
    const refresh = `rft.minted${seq}`;
    fake.validTokens.add(access);
    fake.refreshTokens.add(refresh);
    fake.minted.push(access);
    return {
      status: 200,
      body: {
        access_token: access,
        expires_in: ACCESS_TTL,
        open_id: 'open-id-1',
        refresh_expires_in: REFRESH_TTL,
        refresh_token: refresh,
        scope: 'user.info.basic,video.publish,video.upload,video.list',
        token_type: 'Bearer',
      },
    };
  }

  function revoke(req: FakeRequest): FakeResponse {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const c = client(req, form);
    if (typeof c !== 'string') return c;
    const t = form.get('token');
    if (!t) return oauthError(400, 'invalid_request', 'token is required.');
    const found = fake.oauth.find(t);
    if (found && found.grant.clientId === c) fake.oauth.revokeToken(t, 'api');
    return { status: 200, body: {} };
  }

  function userInfo(req: FakeRequest, ctx: FakeContext, token: string, me: FakeUser): FakeResponse {
    const fields = (req.query.get('fields') ?? '')
      .split(',')
      .map((f) => f.trim())
      .filter(Boolean);
    if (!fields.length) return fail(400, 'invalid_params', 'fields is required.');
    const unknown = fields.find((f) => !(f in USER_FIELDS));
    if (unknown) return fail(400, 'invalid_params', `Invalid field: ${unknown}`);
    if (fields.some((f) => !fake.oauth.allows(token, USER_FIELDS[f] ?? '')))
      return fail(
        401,
        'scope_not_authorized',
        'The user did not authorize the scope required for completing this request.',
      );
    const avatar = `${ctx.base}${me.avatarPath}`;
    const all: Record<string, unknown> = {
      open_id: me.id,
      union_id: `union-${me.id}`,
      avatar_url: avatar,
      avatar_url_100: avatar,
      avatar_large_url: avatar,
      display_name: me.displayName,
      bio_description: '',
      profile_deep_link: `https://vm.tiktok.com/${me.username}/`,
      is_verified: false,
      username: me.username,
      follower_count: me.followers,
      following_count: me.following,
      likes_count: me.followers * 3,
      video_count: me.posts + fake.posts.filter((p) => p.mode === 'direct').length * (me.isDefault ? 1 : 0),
    };
    return envelope(200, { user: Object.fromEntries(fields.map((f) => [f, all[f]])) });
  }

  function checkPostInfo(info: Record<string, unknown>, titleMax: number): FakeResponse | null {
    const privacy = info.privacy_level;
    if (typeof privacy !== 'string' || !PRIVACY.includes(privacy)) {
      return fail(400, 'invalid_params', 'post_info.privacy_level is required.');
    }
    if (!fake.creator.privacy_level_options.includes(privacy)) {
      return fail(400, 'privacy_level_option_mismatch', 'privacy_level is not one of the creator options.');
    }
    if (info.title !== undefined && (typeof info.title !== 'string' || runes(info.title) > titleMax)) {
      return fail(400, 'invalid_params', `post_info.title must be at most ${titleMax} UTF-16 runes.`);
    }
    for (const k of ['brand_content_toggle', 'brand_organic_toggle', 'is_aigc']) {
      if (info[k] !== undefined && typeof info[k] !== 'boolean')
        return fail(400, 'invalid_params', `post_info.${k} must be a boolean.`);
    }
    const cover = info.video_cover_timestamp_ms;
    if (cover !== undefined && (typeof cover !== 'number' || !Number.isInteger(cover) || cover < 0))
      return fail(
        400,
        'invalid_params',
        'post_info.video_cover_timestamp_ms must be a non-negative integer.',
      );
    if (!fake.audited && privacy !== 'SELF_ONLY') {
      return fail(
        403,
        'unaudited_client_can_only_post_to_private_accounts',
        'Unaudited clients can only post with privacy_level SELF_ONLY.',
      );
    }
    return null;
  }

  function newPublish(
    kind: 'video' | 'photo',
    postInfo: Record<string, unknown>,
    sourceInfo: Record<string, unknown>,
    mode: 'direct' | 'inbox' = 'direct',
  ): Publish {
    seq++;
    const p: Publish = {
      id: kind === 'video' ? `v_pub_file~v2-1.${7_300_000_000 + seq}` : `p_pub_url~v2.${7_300_000_000 + seq}`,
      kind,
      mode,
      postInfo,
      sourceInfo,
      uploadId: `${9_000_000 + seq}`,
      size: 0,
      chunkSize: 0,
      chunkCount: 0,
      parts: [],
      ranges: [],
      received: 0,
      contentType: null,
      pollsLeft: fake.processingPolls,
      failReason: fake.failNextPost,
      post: null,
    };
    fake.failNextPost = null;
    publishes.set(p.id, p);
    byUpload.set(p.uploadId, p);
    return p;
  }

  function videoInit(req: FakeRequest, ctx: FakeContext, mode: 'direct' | 'inbox'): FakeResponse {
    const body = obj(req.json);
    const source = obj(body?.source_info);
    let postInfo: Record<string, unknown> | undefined;
    if (mode === 'inbox') {
      // The upload reference's body is source_info alone: the creator writes the rest in the app.
      if (body && 'post_info' in body)
        return fail(400, 'invalid_params', 'post_info is not a field of the upload (inbox) request.');
      if (!source) return fail(400, 'invalid_params', 'source_info is required.');
      postInfo = {};
    } else {
      postInfo = obj(body?.post_info);
      if (!postInfo || !source) return fail(400, 'invalid_params', 'post_info and source_info are required.');
      const bad = checkPostInfo(postInfo, 2200);
      if (bad) return bad;
    }
    if (source.source !== 'FILE_UPLOAD')
      return fail(400, 'invalid_params', 'This fake supports source FILE_UPLOAD.');
    const size = source.video_size;
    const chunk = source.chunk_size;
    const count = source.total_chunk_count;
    if (
      typeof size !== 'number' ||
      typeof chunk !== 'number' ||
      typeof count !== 'number' ||
      size <= 0 ||
      chunk <= 0
    ) {
      return fail(
        400,
        'invalid_params',
        'video_size, chunk_size and total_chunk_count are required for FILE_UPLOAD.',
      );
    }
    // Media transfer guide: < 5 MB whole; chunks 5–64 MB; count = floor(size / chunk); 1..1000 chunks.
    if (size < 5 * MB && chunk !== size)
      return fail(400, 'invalid_params', 'Videos under 5 MB must be uploaded whole.');
    if (size >= 5 * MB && (chunk < 5 * MB || chunk > 64 * MB)) {
      return fail(400, 'invalid_params', 'chunk_size must be between 5 MB and 64 MB.');
    }
    if (count !== Math.floor(size / chunk) || count < 1 || count > 1000) {
      return fail(400, 'invalid_params', 'total_chunk_count must be video_size / chunk_size rounded down.');
    }
    if (size - (count - 1) * chunk > 128 * MB)
      return fail(400, 'invalid_params', 'The final chunk may not exceed 128 MB.');
    const p = newPublish('video', postInfo, source, mode);
    p.size = size;
    p.chunkSize = chunk;
    p.chunkCount = count;
    return envelope(200, {
      publish_id: p.id,
      upload_url: `${ctx.base}/upload/?upload_id=${p.uploadId}&upload_token=tok${p.uploadId}`,
    });
  }

  function upload(req: FakeRequest): FakeResponse {
    const p = byUpload.get(req.query.get('upload_id') ?? '');
    if (p?.kind !== 'video' || req.query.get('upload_token') !== `tok${p.uploadId}`) {
      return { status: 404, body: { error: 'upload not found' } };
    }
    if (p.received >= p.size) return { status: 400, body: { error: 'upload already complete' } };
    const ct = req.headers['content-type'] ?? '';
    if (!/^video\/(mp4|quicktime|webm)$/.test(ct))
      return { status: 415, body: { error: 'unsupported Content-Type' } };
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(req.headers['content-range'] ?? '');
    const index = p.parts.length;
    const start = index * p.chunkSize;
    const end = index === p.chunkCount - 1 ? p.size - 1 : start + p.chunkSize - 1;
    // Chunks must arrive in order, each exactly the announced range.
    if (!m || Number(m[1]) !== start || Number(m[2]) !== end || Number(m[3]) !== p.size) {
      return { status: 416, body: { error: `expected Content-Range bytes ${start}-${end}/${p.size}` } };
    }
    if (req.body.length !== end - start + 1)
      return { status: 400, body: { error: 'body length does not match Content-Range' } };
    p.parts.push(Buffer.from(req.body));
    p.ranges.push(req.headers['content-range'] ?? '');
    p.received += req.body.length;
    p.contentType = ct;
    if (p.received < p.size) return { status: 206 };
    publishMedia(p);
    return { status: 201 };
  }

  function contentInit(req: FakeRequest): FakeResponse {
    const body = obj(req.json);
    const postInfo = obj(body?.post_info);
    const source = obj(body?.source_info);
    if (body?.media_type !== 'PHOTO') return fail(400, 'invalid_params', 'media_type must be PHOTO.');
    if (body.post_mode !== 'DIRECT_POST' && body.post_mode !== 'MEDIA_UPLOAD') {
      return fail(400, 'invalid_params', 'post_mode must be DIRECT_POST or MEDIA_UPLOAD.');
    }
    if (!postInfo || !source) return fail(400, 'invalid_params', 'post_info and source_info are required.');
    const mode = body.post_mode === 'MEDIA_UPLOAD' ? 'inbox' : 'direct';
    if (mode === 'direct') {
      const bad = checkPostInfo(postInfo, 90);
      if (bad) return bad;
    } else if (
      postInfo.title !== undefined &&
      (typeof postInfo.title !== 'string' || runes(postInfo.title) > 90)
    ) {
      return fail(400, 'invalid_params', 'post_info.title must be at most 90 UTF-16 runes.');
    }
    if (
      postInfo.description !== undefined &&
      (typeof postInfo.description !== 'string' || runes(postInfo.description) > 4000)
    ) {
      return fail(400, 'invalid_params', 'post_info.description must be at most 4000 UTF-16 runes.');
    }
    const images = source.photo_images;
    if (source.source !== 'PULL_FROM_URL')
      return fail(400, 'invalid_params', 'Photos only support PULL_FROM_URL.');
    if (
      !Array.isArray(images) ||
      images.length < 1 ||
      images.length > 35 ||
      !images.every((u) => typeof u === 'string' && /^https?:\/\//.test(u))
    ) {
      return fail(400, 'invalid_params', 'photo_images must hold 1 to 35 URLs.');
    }
    const cover = source.photo_cover_index;
    if (typeof cover !== 'number' || cover < 0 || cover >= images.length) {
      return fail(400, 'invalid_params', 'photo_cover_index must index photo_images.');
    }
    const p = newPublish('photo', postInfo, source, mode);
    // TikTok pulls the photos now; the post exists from here on.
    publishMedia(p);
    return envelope(200, { publish_id: p.id });
  }

  function publishMedia(p: Publish) {
    if (p.failReason) return;
    seq++;
    const post: TikTokPost = {
      id: `${7_400_000_000_000_000_000n + BigInt(seq)}`,
      publishId: p.id,
      kind: p.kind,
      mode: p.mode,
      title: String(p.postInfo.title ?? ''),
      description: String(p.postInfo.description ?? ''),
      privacyLevel: String(p.postInfo.privacy_level ?? ''),
      postInfo: p.postInfo,
      sourceInfo: p.sourceInfo,
      bytes: p.kind === 'video' ? Buffer.concat(p.parts) : null,
      contentType: p.contentType,
      photoUrls: p.kind === 'photo' ? (p.sourceInfo.photo_images as string[]) : [],
      chunks: p.ranges,
    };
    p.post = post;
    fake.posts.push(post);
  }

  function status(req: FakeRequest): FakeResponse {
    const id = obj(req.json)?.publish_id;
    const p = typeof id === 'string' ? publishes.get(id) : undefined;
    if (!p) return fail(400, 'invalid_params', 'publish_id is invalid.');
    const mediaIn = p.kind === 'photo' || p.received >= p.size;
    let state: string;
    if (!mediaIn) state = 'PROCESSING_UPLOAD';
    else if (p.pollsLeft > 0) {
      p.pollsLeft--;
      state = p.kind === 'photo' ? 'PROCESSING_DOWNLOAD' : 'PROCESSING_UPLOAD';
    } else state = p.failReason ? 'FAILED' : p.mode === 'inbox' ? 'SEND_TO_USER_INBOX' : 'PUBLISH_COMPLETE';
    // Private posts never get a public id, nor does a draft in the creator's inbox.
    const publicId =
      state === 'PUBLISH_COMPLETE' && p.post && p.post.privacyLevel !== 'SELF_ONLY' ? p.post.id : null;
    const data =
      `{"status":"${state}",` +
      (state === 'FAILED' ? `"fail_reason":"${p.failReason}",` : '') +
      `"publicaly_available_post_id":[${publicId ?? ''}],` +
      (p.kind === 'video' ? `"uploaded_bytes":${p.received}` : `"downloaded_bytes":${mediaIn ? 1 : 0}`) +
      '}';
    return {
      status: 200,
      headers: { 'content-type': 'application/json; charset=UTF-8' },
      body: `{"data":${data},"error":{"code":"ok","message":"","log_id":"${logId()}"}}`,
    };
  }

  function videoQuery(req: FakeRequest): FakeResponse {
    const fields = (req.query.get('fields') ?? '').split(',').filter(Boolean);
    if (!fields.length) return fail(400, 'invalid_params', 'fields is required.');
    const ids = obj(obj(req.json)?.filters)?.video_ids;
    if (!Array.isArray(ids) || ids.length < 1 || ids.length > 20) {
      return fail(400, 'invalid_params', 'filters.video_ids must hold 1 to 20 ids.');
    }
    const videos = fake.posts
      .filter((p) => ids.includes(p.id))
      .map((p) => {
        const s = fake.stats.get(p.id) ?? { like_count: 0, comment_count: 0, share_count: 0, view_count: 0 };
        const all: Record<string, unknown> = { id: p.id, title: p.title, ...s };
        return Object.fromEntries(fields.filter((f) => f in all).map((f) => [f, all[f]]));
      });
    return envelope(200, { videos, cursor: 0, has_more: false });
  }

  return fake;
}
