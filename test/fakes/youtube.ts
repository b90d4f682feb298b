import { createHash, type Hash } from 'node:crypto';
import { googleAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  avatarPath,
  basicAuth,
  errorPage,
  type FakeGrant,
  FakeOAuth,
  type FakeToken,
  type FakeUser,
  followersOf,
  formOf,
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
  type InboxSeed,
} from './server.ts';

// Contract fake of the YouTube Data API v3 upload path, channels.list and Google's OAuth 2.0 server
// (developers.google.com "Using OAuth 2.0 for Web Server Applications"):
//   GET  /o/oauth2/v2/auth                        (accounts.google.com) client_id, redirect_uri,
//                                                 response_type=code, scope space-separated, access_type,
//                                                 prompt, state, code_challenge (S256 or plain)
//   POST /token                                   (oauth2.googleapis.com) client auth in the form or HTTP Basic;
//                                                 authorization_code (code, redirect_uri, code_verifier) or
//                                                 refresh_token → {access_token, expires_in: 3599,
//                                                 refresh_token?, scope, token_type: "Bearer", id_token?}
//   GET  /tokeninfo?access_token=…                (oauth2.googleapis.com) {azp, aud, scope, exp, expires_in,
//                                                 access_type}; an unknown or dead token → 400 invalid_token
//   POST /revoke                                  token in the form or query → 200 {}; unknown → 400
//                                                 {"error": "invalid_token", "error_description": …}
//   GET  /youtube/v3/channels?part=…&mine=true    (or id=…) youtube#channelListResponse
//   POST /upload/youtube/v3/videos?uploadType=resumable&part=…   video resource + X-Upload-Content-* → Location
//   PUT  <session URI>                            Content-Range bytes a-b/N → 308 (Range: bytes=0-M) | 200 video
//   PUT  <session URI>  Content-Range bytes */N   → upload status (308 or the finished video)
//   GET  /youtube/v3/videos?part=statistics&id=…  → items[].statistics (counts as strings)
//   GET  /youtube/v3/videoCategories?part=snippet&regionCode=…  youtube#videoCategoryListResponse: every
//                                                 category with snippet {title, assignable, channelId}
// Errors use Google's JSON shape {"error": {"code", "message", "errors": [{"reason", …}], "status"}}; metadata is
// validated as videos.insert documents it (title ≤ 100 chars, no < or >, description ≤ 5000 bytes, tags ≤ 500
// chars in all, assignable categoryId, privacyStatus).
//
// OAuth notes. A refresh_token comes only with access_type=offline, and — as Google does — only on the
// first offline consent of a user to the client or when prompt=consent forces a new one. Refresh does not
// rotate (the answer has no refresh_token). A refusal redirects error=access_denied&state=… (Google adds no
// description). The default user has one channel (UCherald, the channel uploads go to); a fake_user has
// two (Google lets one account own several brand channels; channels.list mine=true then lists both here —
// a simplification of Google's per-channel consent). channels.list needs youtube.readonly, youtube,
// youtube.force-ssl or youtubepartner; uploads need youtube.upload, youtube or youtube.force-ssl (403
// insufficientPermissions).
// Error answers (documented-errors.ts builds them): the token endpoint answers RFC 6749 §5.2 bodies —
// 401 invalid_client ("The OAuth client was not found." / "Unauthorized", as observed; the fake sends no
// WWW-Authenticate — whether Google does after HTTP Basic, as §5.2 asks, is not documented), 400 {"error": "invalid_grant",
// "error_description": "Bad Request"} for unknown, used or expired codes, 400 redirect_uri_mismatch for
// another redirect_uri, invalid_grant "Missing code verifier." / "Invalid code verifier." for PKCE (wording
// unsure), invalid_grant "Token has been expired or revoked." for dead refresh tokens ("Using OAuth 2.0
// for Web Server Applications", refresh token expiration), 401 unauthorized_client "Unauthorized" for a
// refresh token another client was issued (google-auth-library-python#1561, prasmussen/gdrive#375), and
// 400 invalid_request "Could not determine client ID from request." without a client id. The API answers revoked and expired access
// tokens 401 authError "Invalid Credentials" with WWW-Authenticate (YouTube Data API "Errors", core
// errors). Throttling (429 rateLimitExceeded, 403 userRateLimitExceeded / quotaExceeded) is never produced
// on its own: inject documentedErrors.youtube.throttled or its variants.
// Comments (commentThreads.insert / commentThreads.list): POST /youtube/v3/commentThreads?part=snippet
// with snippet.channelId, snippet.videoId, snippet.topLevelComment.snippet.textOriginal answers the
// youtube#commentThread (its id is the top-level comment's); it needs youtube.force-ssl (403
// insufficientPermissions otherwise); a video the fake does not have answers 404 videoNotFound, an
// empty text 400 commentTextRequired, one over 10,000 characters 400 commentTextTooLong, no channelId
// or videoId 400 channelOrVideoIdMissing. GET /youtube/v3/commentThreads?videoId=… lists a video's
// threads, newest first. Comments made are kept in `comments`.
// The inbox (commentThreads.list, comments.list, comments.insert — developers.google.com/youtube/v3/
// docs/commentThreads/list, comments/list, comments/insert): GET /youtube/v3/commentThreads with
// exactly one of allThreadsRelatedToChannelId, videoId or id (else 400 missingRequiredParameter),
// part=snippet[,replies], order=time (newest top-level comment first; `relevance` is answered in the
// same order), maxResults 1–100 (default 20), pageToken (the fake's tokens are opaque; an unknown one
// is 400 invalidPageToken) → {nextPageToken?, pageInfo, items}; a thread's `replies.comments` holds
// its first 5 replies only, as YouTube lists "not necessarily all" of them, and totalReplyCount all.
// GET /youtube/v3/comments?part=snippet&parentId=… (or id=…) lists replies oldest first, paged the
// same way. POST /youtube/v3/comments?part=snippet {snippet: {parentId, textOriginal}} answers the
// youtube#comment (id `<parent>.<n>`, as YouTube's reply ids are); youtube.force-ssl, else 403
// insufficientPermissions; an unknown parent 404 parentCommentNotFound; a parent that is itself a
// reply 400 operationNotSupported; text rules as for commentThreads.insert. Seeded comments
// (`inbox(seed)`, POST /__fakes/youtube/inbox) are comments by someone else on a video of the
// account `to` (default UCherald; `parent` a video id, or a comment id for a reply), with their
// `created_at` as publishedAt. Reading is 1 quota unit a call, an insert 50: `quotaUsed` counts them.
// After the upload (docs/thumbnails/set, docs/playlists/list, docs/playlistItems/insert and list):
//   POST /upload/youtube/v3/thumbnails/set?videoId=…   the image as the body (image/jpeg, image/png or
//        application/octet-stream, at most 2 MB) → youtube#thumbnailSetResponse; scopes youtube.upload,
//        youtube, youtube.force-ssl (403 insufficientPermissions); an unknown video 404 videoNotFound, no
//        body 400 mediaBodyRequired, another type 400 invalidImage; over 2 MB 413 mediaBodyTooLarge (the
//        reference states the limit, not the status: Google's media uploads answer 413).
//   GET  /youtube/v3/playlists?part=snippet&mine=true[&maxResults&pageToken]  the channel's playlists
//        (UCherald has `playlists`; maxResults 0–50, default 5)
//   POST /youtube/v3/playlistItems?part=snippet {snippet: {playlistId, resourceId: {kind, videoId}}}
//        → youtube#playlistItem; scopes youtube, youtube.force-ssl, youtubepartner (youtube.upload is not
//        enough: 403 insufficientPermissions); 404 playlistNotFound, 404 videoNotFound, 400
//        invalidResourceId (kind other than youtube#video). A second insert adds the video again, as
//        YouTube playlists hold duplicates.
//   GET  /youtube/v3/playlistItems?part=…&playlistId=…[&videoId=…]  the playlist's items (of that video)
// videos.insert takes status.publishAt only with privacyStatus private (400 invalidPublishAt otherwise,
// or for a time not in the future), as the videos resource documents.

export interface YouTubeVideo {
  id: string;
  snippet: { title: string; description: string; tags?: string[]; categoryId: string };
  status: { privacyStatus: string; selfDeclaredMadeForKids: boolean; publishAt?: string };
  /** The custom thumbnail thumbnails.set made, and how many times it was set. */
  thumbnail?: { bytes: Buffer; contentType: string; sets: number };
  bytes: Buffer;
  contentType: string;
  /** Content-Range of every PUT that carried bytes, in order. */
  chunks: string[];
  /** SHA-256 of the bytes in order (hex), and how many arrived. */
  sha256: string;
  size: number;
  statistics: { viewCount: number; likeCount: number; commentCount: number };
}

interface Session {
  id: string;
  resource: { snippet: YouTubeVideo['snippet']; status: YouTubeVideo['status'] };
  size: number;
  contentType: string;
  parts: Buffer[];
  hash: Hash;
  received: number;
  chunks: string[];
  video: YouTubeVideo | null;
}

export interface YouTubeChannel {
  id: string;
  title: string;
  customUrl: string;
  subscribers: number;
  videos: number;
  views: number;
}

export interface YouTubeComment {
  id: string;
  videoId: string;
  /** The channel that wrote it (the authorizing user's channel). */
  authorChannelId: string;
  /** snippet.channelId as sent. */
  channelId: string;
  text: string;
  publishedAt: number;
  /** A reply: its thread's top-level comment. */
  parentId?: string;
  /** Someone else's comment (seeded): its author's display name and avatar. */
  authorName?: string;
  authorAvatar?: string;
}

export interface YouTubeFake extends FakePlatform {
  readonly oauth: FakeOAuth;
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  clientId: string;
  clientSecret: string;
  videos: YouTubeVideo[];
  /** Store at most this many bytes of each PUT (the server persisting less than was sent). */
  acceptPerPut: number | null;
  /** Keep no bytes, only their hash and count (`bytes` stays empty): the media bench's gigabyte. */
  countOnly: boolean;
  /** Create the video on the final PUT but answer 503, as if the connection died there. */
  loseNextCompletion: boolean;
  /** Uploads the channel may still make before 400 uploadLimitExceeded. */
  uploadsLeft: number;
  /** Forget every upload session (they expired). */
  expireSessions(): void;
  minted: string[];
  comments: YouTubeComment[];
  /** The next comment is made but its answer is lost (HTTP 503). */
  loseNextCommentResponse: boolean;
  /** The next reply (comments.insert) is made but its answer is lost (HTTP 503). */
  loseNextReplyResponse: boolean;
  /** A comment by someone else on a video of the account (see the inbox notes above). */
  inbox(seed: InboxSeed): { platform_id: string };
  /** Quota units the comment, channel and category calls cost so far (YouTube's quota table: a list 1, an insert 50). */
  quotaUsed: number;
  /** UCherald's playlists (playlists.list mine=true). */
  playlists: Array<{ id: string; title: string }>;
  /** Every playlistItems.insert that added a video, in order. */
  playlistItems: Array<{ id: string; playlistId: string; videoId: string }>;
  /** The next playlist insert adds the video but its answer is lost (HTTP 503). */
  loseNextPlaylistInsert: boolean;
}

const PLAYLISTS = () => [
  { id: 'PLherald0000000000000000000000tutorials', title: 'Tutorials' },
  { id: 'PLherald000000000000000000000000launches', title: 'Launches' },
];
const PLAYLIST_SCOPES = ['youtube', 'youtube.force-ssl', 'youtubepartner'].map(
  (s) => `https://www.googleapis.com/auth/${s}`,
);

const CATEGORIES = new Set([
  '1',
  '2',
  '10',
  '15',
  '17',
  '19',
  '20',
  '22',
  '23',
  '24',
  '25',
  '26',
  '27',
  '28',
  '29',
]);
const PRIVACY = new Set(['public', 'unlisted', 'private']);
/** What videos.delete accepts (its Authorization section); youtube.upload alone is refused. */
const DELETE_SCOPES = [
  'https://www.googleapis.com/auth/youtube',
  'https://www.googleapis.com/auth/youtube.force-ssl',
  'https://www.googleapis.com/auth/youtubepartner',
];

/**
 * videoCategories.list regionCode=US as YouTube answers it: the assignable categories (the ones
 * videos.insert takes, CATEGORIES above) and some that are not (YouTube lists them, uploads refuse them).
 */
const CATEGORY_TITLES: Array<[string, string, boolean]> = [
  ['1', 'Film & Animation', true],
  ['2', 'Autos & Vehicles', true],
  ['10', 'Music', true],
  ['15', 'Pets & Animals', true],
  ['17', 'Sports', true],
  ['18', 'Short Movies', false],
  ['19', 'Travel & Events', true],
  ['20', 'Gaming', true],
  ['21', 'Videoblogging', false],
  ['22', 'People & Blogs', true],
  ['23', 'Comedy', true],
  ['24', 'Entertainment', true],
  ['25', 'News & Politics', true],
  ['26', 'Howto & Style', true],
  ['27', 'Education', true],
  ['28', 'Science & Technology', true],
  ['29', 'Nonprofits & Activism', true],
  ['30', 'Movies', false],
];

function googleError(
  code: number,
  reason: string,
  message: string,
  status: string,
  extra: Record<string, unknown> = {},
): FakeResponse {
  return {
    status: code,
    body: {
      error: { code, message, errors: [{ message, domain: 'youtube.video', reason, ...extra }], status },
    },
  };
}

const badRequest = (reason: string, message: string) => googleError(400, reason, message, 'INVALID_ARGUMENT');

function obj(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

const GOOGLE_SCOPE = /^https:\/\/www\.googleapis\.com\/auth\/[a-z0-9._-]+$/;
const AUTHORIZE: AuthorizeSpec = {
  separator: / +/,
  knownScope: (s) => s === 'openid' || s === 'email' || s === 'profile' || GOOGLE_SCOPE.test(s),
  publishes: (s) => s.endsWith('/youtube.upload'),
  pkce: 'optional',
  pkceMethods: ['S256', 'plain'],
  defaultScopes: null,
  describe: { invalid_scope: 'Some requested scopes were invalid.' },
  denied: { error: 'access_denied' },
  extra: (q) => ({ accessType: q.get('access_type') ?? 'online', prompt: q.get('prompt') ?? '' }),
  page: (_status, problem) =>
    problem === 'client'
      ? errorPage(401, 'Error 401: invalid_client', 'The OAuth client was not found.')
      : errorPage(
          400,
          'Error 400: redirect_uri_mismatch',
          'You can’t sign in to this app because it doesn’t comply with Google’s OAuth 2.0 policy.',
        ),
};
const READ_SCOPES = ['youtube.readonly', 'youtube', 'youtube.force-ssl', 'youtubepartner'].map(
  (s) => `https://www.googleapis.com/auth/${s}`,
);
const COMMENT_SCOPE = 'https://www.googleapis.com/auth/youtube.force-ssl';
const UPLOAD_SCOPES = ['youtube.upload', 'youtube', 'youtube.force-ssl'].map(
  (s) => `https://www.googleapis.com/auth/${s}`,
);

/** The channels a user owns: one for the default user, two for a fake_user. */
export function channelsOf(user: FakeUser): YouTubeChannel[] {
  if (user.isDefault)
    return [
      {
        id: 'UCherald',
        title: 'Herald',
        customUrl: '@herald',
        subscribers: 12_400,
        videos: 87,
        views: 1_250_000,
      },
    ];
  return [0, 1].map((i) => {
    const key = `${user.name}/${i}`;
    return {
      id: `UC${hashId(key, 22, 'yt')}`,
      title: i ? `${user.name} Clips` : user.name,
      customUrl: `@${user.username.toLowerCase()}${i ? 'clips' : ''}`,
      subscribers: followersOf(key),
      videos: hashNumber(key, 500, 'videos'),
      views: hashNumber(key, 10_000_000, 'views'),
    };
  });
}

export function createFake(): YouTubeFake {
  let seq = 0;
  const sessions = new Map<string, Session>();

  const fake: YouTubeFake = {
    name: 'youtube',
    oauth: new FakeOAuth({
      platform: 'youtube',
      prefixes: { access: 'ya29.', refresh: '1//', code: '4/' },
      defaultUser: () => ({
        id: '104857600000000000001',
        username: 'herald',
        displayName: 'Herald',
        avatarPath: avatarPath('UCherald'),
        followers: 12_400,
        following: 0,
        posts: 87,
      }),
      makeUser: (name) =>
        namedAccount(name, `1${String(hashNumber(name, 1e15, 'google')).padStart(20, '0')}`),
    }),
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clientId: 'client-id.apps.googleusercontent.com',
    clientSecret: 'client-secret',
    videos: [],
    acceptPerPut: null,
    countOnly: false,
    loseNextCompletion: false,
    uploadsLeft: 100,
    minted: [],
    comments: [],
    loseNextCommentResponse: false,
    loseNextReplyResponse: false,
    quotaUsed: 0,
    playlists: PLAYLISTS(),
    playlistItems: [],
    loseNextPlaylistInsert: false,

    expireSessions() {
      sessions.clear();
    },

    state() {
      return {
        videos: fake.videos.map((v) => ({
          id: v.id,
          snippet: v.snippet,
          status: v.status,
          size: v.size,
          thumbnail: v.thumbnail
            ? {
                contentType: v.thumbnail.contentType,
                sets: v.thumbnail.sets,
                sha256: createHash('sha256').update(v.thumbnail.bytes).digest('hex'),
              }
            : null,
        })),
        playlistItems: fake.playlistItems,
      };
    },

    reset() {
      seq = 0;
      fake.oauth.reset();
      sessions.clear();
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.videos = [];
      fake.acceptPerPut = null;
      fake.loseNextCompletion = false;
      fake.uploadsLeft = 100;
      fake.minted = [];
      fake.comments = [];
      fake.loseNextCommentResponse = false;
      fake.loseNextReplyResponse = false;
      fake.quotaUsed = 0;
      fake.playlists = PLAYLISTS();
      fake.playlistItems = [];
      fake.loseNextPlaylistInsert = false;
    },

    inbox(seed: InboxSeed): { platform_id: string } {
      if (seed.kind !== 'comment') throw new Error('youtube: only comments come back to a channel');
      const to = seed.to ?? 'UCherald';
      const at = seed.created_at ? Date.parse(seed.created_at) : Date.now();
      const parent = seed.parent ? fake.comments.find((c) => c.id === seed.parent) : undefined;
      const top = parent?.parentId ? fake.comments.find((c) => c.id === parent.parentId) : parent;
      const videoId = top?.videoId ?? seed.parent ?? fake.videos.at(-1)?.id ?? 'vidSeeded';
      seq++;
      const author = seed.author?.id ?? `UCviewer${hashId(seed.author?.handle ?? 'viewer', 16, 'yt')}`;
      const c: YouTubeComment = {
        id: top
          ? `${top.id}.${String(seq).padStart(6, '0')}`
          : `Ugy${String(seq).padStart(8, '0')}${videoId}`,
        videoId,
        authorChannelId: author,
        channelId: top?.channelId ?? to,
        text: seed.text,
        publishedAt: Number.isFinite(at) ? at : Date.now(),
        ...(top ? { parentId: top.id } : {}),
        authorName: seed.author?.name ?? seed.author?.handle ?? '@viewer',
        authorAvatar: `https://yt3.ggpht.example/${author}=s88`,
      };
      fake.comments.push(c);
      return { platform_id: c.id };
    },

    handle(req: FakeRequest, ctx: FakeContext): FakeResponse {
      if (req.method === 'GET' && req.path === '/o/oauth2/v2/auth')
        return fake.oauth.authorize(req, AUTHORIZE);
      if (req.method === 'POST' && req.path === '/token') return token(req);
      if (req.method === 'POST' && req.path === '/revoke') return revoke(req);
      if (req.method === 'GET' && req.path === '/tokeninfo') return tokeninfo(req);
      if (req.method === 'PUT' && req.path === '/upload/youtube/v3/videos' && req.query.has('upload_id'))
        return put(req);
      const avatar = serveAvatar(req);
      if (avatar) return avatar;
      const t = bearer(req);
      const issued = fake.oauth.check(t);
      if (!t || (issued.state === 'unknown' ? !fake.validTokens.has(t) : issued.state !== 'valid'))
        return googleAnswers.invalidCredentials();
      const me = issued.state === 'valid' ? issued.token.grant.user : fake.oauth.user();
      const insufficient = () =>
        googleError(
          403,
          'insufficientPermissions',
          'Request had insufficient authentication scopes.',
          'PERMISSION_DENIED',
          {
            domain: 'global',
          },
        );
      if (req.method === 'POST' && req.path === '/upload/youtube/v3/videos') {
        if (!fake.oauth.allows(t, ...UPLOAD_SCOPES)) return insufficient();
        return start(req, ctx);
      }
      if (req.method === 'GET' && req.path === '/youtube/v3/videos') return list(req);
      if (req.method === 'POST' && req.path === '/upload/youtube/v3/thumbnails/set') {
        if (!fake.oauth.allows(t, ...UPLOAD_SCOPES)) return insufficient();
        fake.quotaUsed += 50;
        return setThumbnail(req);
      }
      // videos.delete (DELETE /youtube/v3/videos?id=; scopes youtube, youtube.force-ssl or
      // youtubepartner — youtube.upload is not enough) → 204 and the video is gone; an id YouTube
      // does not have is 404 videoNotFound.
      if (req.method === 'DELETE' && req.path === '/youtube/v3/videos') {
        if (!fake.oauth.allows(t, ...DELETE_SCOPES)) return insufficient();
        const id = req.query.get('id') ?? '';
        const i = fake.videos.findIndex((v) => v.id === id);
        if (i < 0)
          return googleError(
            404,
            'videoNotFound',
            'The video that you are trying to delete cannot be found.',
            'NOT_FOUND',
          );
        fake.videos.splice(i, 1);
        return { status: 204 };
      }
      fake.quotaUsed += req.method === 'GET' ? 1 : 50;
      if (req.path === '/youtube/v3/comments') {
        if (req.method === 'POST' && !fake.oauth.allows(t, COMMENT_SCOPE)) return insufficient();
        if (req.method === 'GET' && !fake.oauth.allows(t, ...READ_SCOPES)) return insufficient();
        if (req.method === 'POST') return insertReply(req, me);
        if (req.method === 'GET') return listComments(req);
      }
      if (req.path === '/youtube/v3/commentThreads') {
        if (req.method === 'POST' && !fake.oauth.allows(t, COMMENT_SCOPE)) return insufficient();
        if (req.method === 'GET' && !fake.oauth.allows(t, ...READ_SCOPES)) return insufficient();
        if (req.method === 'POST') return insertThread(req, me);
        if (req.method === 'GET') return listThreads(req);
      }
      if (req.method === 'GET' && req.path === '/youtube/v3/channels') {
        if (!fake.oauth.allows(t, ...READ_SCOPES)) return insufficient();
        return channels(req, ctx, me);
      }
      if (req.method === 'GET' && req.path === '/youtube/v3/playlists') {
        if (!fake.oauth.allows(t, ...READ_SCOPES)) return insufficient();
        return listPlaylists(req, me);
      }
      if (req.path === '/youtube/v3/playlistItems') {
        if (req.method === 'POST' && !fake.oauth.allows(t, ...PLAYLIST_SCOPES)) return insufficient();
        if (req.method === 'GET' && !fake.oauth.allows(t, ...READ_SCOPES)) return insufficient();
        if (req.method === 'POST') return insertPlaylistItem(req, me);
        if (req.method === 'GET') return listPlaylistItems(req);
      }
      if (req.method === 'GET' && req.path === '/youtube/v3/videoCategories') {
        if (!fake.oauth.allows(t, ...READ_SCOPES)) return insufficient();
        return videoCategories(req);
      }
      return googleError(404, 'notFound', 'Not Found', 'NOT_FOUND');
    },
  };

  /** videoCategories.list: part=snippet and exactly one of id or regionCode (an ISO 3166-1 alpha-2 code). */
  function videoCategories(req: FakeRequest): FakeResponse {
    if (req.query.get('part') !== 'snippet')
      return googleError(400, 'invalidPart', "The 'part' parameter must be snippet.", 'INVALID_ARGUMENT');
    const region = req.query.get('regionCode');
    const ids = req.query.get('id');
    if (!region === !ids)
      return googleError(
        400,
        'missingRequiredParameter',
        'No filter selected. Expected one of: regionCode, id',
        'INVALID_ARGUMENT',
      );
    if (region && !/^[A-Za-z]{2}$/.test(region))
      return googleError(
        400,
        'invalidRegionCode',
        'The regionCode parameter specifies an invalid region code.',
        'INVALID_ARGUMENT',
      );
    const wanted = ids ? new Set(ids.split(',')) : null;
    const items = CATEGORY_TITLES.filter(([id]) => !wanted || wanted.has(id)).map(
      ([id, title, assignable]) => ({
        kind: 'youtube#videoCategory',
        etag: createHash('sha256').update(`cat/${id}`).digest('base64url').slice(0, 27),
        id,
        snippet: { title, assignable, channelId: 'UCBR8-60-B28hp2BmDPdntcQ' },
      }),
    );
    return {
      status: 200,
      body: {
        kind: 'youtube#videoCategoryListResponse',
        etag: createHash('sha256')
          .update(`cats/${region ?? ids}`)
          .digest('base64url')
          .slice(0, 27),
        items,
      },
    };
  }

  const oauthError = (status: number, error: string, description: string): FakeResponse => ({
    status,
    body: { error, error_description: description },
  });

  /** Client credentials from the form or HTTP Basic (Google accepts both). */
  function client(req: FakeRequest, form: URLSearchParams): string | FakeResponse {
    const basic = basicAuth(req);
    const id = basic?.id ?? form.get('client_id') ?? '';
    const secret = basic?.secret ?? form.get('client_secret') ?? '';
    if (!id) return oauthError(400, 'invalid_request', 'Could not determine client ID from request.');
    if (id === fake.clientId && secret === fake.clientSecret) return id;
    const check = fake.oauth.checkClient(id, secret);
    if (check === 'ok') return id;
    return oauthError(
      401,
      'invalid_client',
      check === 'unknown' ? 'The OAuth client was not found.' : 'Unauthorized',
    );
  }

  /** Google's tokeninfo for an access token: its client, scopes and expiry; invalid_token otherwise. */
  function tokeninfo(req: FakeRequest): FakeResponse {
    const c = fake.oauth.check(req.query.get('access_token'));
    if (c.state !== 'valid' || c.token.kind !== 'access')
      return oauthError(400, 'invalid_token', 'Invalid Value');
    const expires = fake.oauth.expiresIn(c.token) ?? 3599;
    return {
      status: 200,
      body: {
        azp: c.token.grant.clientId,
        aud: c.token.grant.clientId,
        scope: c.token.grant.scopes.join(' '),
        exp: String(Math.floor(Date.now() / 1000) + expires),
        expires_in: String(expires),
        access_type: c.token.grant.extra.accessType === 'offline' ? 'offline' : 'online',
      },
    };
  }

  function idToken(grant: FakeGrant): string {
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    return [
      b64({ alg: 'RS256', kid: 'fake', typ: 'JWT' }),
      b64({
        iss: 'https://accounts.google.com',
        aud: grant.clientId,
        sub: grant.user.id,
        iat: now,
        exp: now + 3599,
      }),
      Buffer.from('not-a-signature').toString('base64url'),
    ].join('.');
  }

  function answer(access: FakeToken, refresh: FakeToken | null) {
    return {
      access_token: access.token,
      expires_in: fake.oauth.expiresIn(access) ?? 3599,
      ...(refresh ? { refresh_token: refresh.token } : {}),
      scope: access.grant.scopes.join(' '),
      token_type: 'Bearer',
      ...(access.grant.scopes.includes('openid') ? { id_token: idToken(access.grant) } : {}),
    };
  }

  function token(req: FakeRequest): FakeResponse {
    const form = formOf(req);
    const c = client(req, form);
    if (typeof c !== 'string') return c;
    const grantType = form.get('grant_type');
    if (grantType === 'authorization_code') {
      const r = fake.oauth.redeem(form.get('code') ?? '', {
        clientId: c,
        redirectUri: form.get('redirect_uri') ?? '',
        verifier: form.get('code_verifier'),
      });
      if (!r.ok) {
        if (r.reason === 'redirect') return oauthError(400, 'redirect_uri_mismatch', 'Bad Request');
        if (r.reason === 'pkce_missing') return oauthError(400, 'invalid_grant', 'Missing code verifier.');
        if (r.reason === 'pkce') return oauthError(400, 'invalid_grant', 'Invalid code verifier.');
        return oauthError(400, 'invalid_grant', 'Bad Request');
      }
      const g = r.grant;
      // Google sends a refresh token for offline access on the first consent, or when prompt=consent.
      const before = fake.oauth
        .grantsOf(g.user)
        .some((o) => o !== g && o.clientId === g.clientId && o.extra.refreshIssued === true);
      const offline = g.extra.accessType === 'offline';
      const refresh =
        offline && (!before || String(g.extra.prompt).split(' ').includes('consent'))
          ? fake.oauth.issue(g, 'refresh', null)
          : null;
      if (refresh) g.extra.refreshIssued = true;
      const access = fake.oauth.issue(g, 'access', 3599);
      return { status: 200, body: answer(access, refresh) };
    }
    if (grantType !== 'refresh_token') {
      return oauthError(400, 'unsupported_grant_type', `Invalid grant_type: ${grantType ?? ''}`);
    }
    const old = form.get('refresh_token') ?? '';
    if (fake.oauth.find(old)) {
      const r = fake.oauth.useRefresh(old, c, false);
      if (!r.ok && r.reason === 'client')
        return googleAnswers.oauth(401, 'unauthorized_client', 'Unauthorized');
      if (!r.ok) return oauthError(400, 'invalid_grant', 'Token has been expired or revoked.');
      const access = fake.oauth.issue(r.grant, 'access', 3599);
      fake.minted.push(access.token);
      return { status: 200, body: answer(access, null) };
    }
    if (!fake.refreshTokens.has(old))
      return oauthError(400, 'invalid_grant', 'Token has been expired or revoked.');
    fake.oauth.countRefresh();
    seq++;
    const access = `ya29.minted${seq}`;
    fake.validTokens.add(access);
    fake.minted.push(access);
    // Google keeps the refresh token: the answer has none.
    return {
      status: 200,
      body: {
        access_token: access,
        expires_in: 3599,
        scope: 'https://www.googleapis.com/auth/youtube.upload',
        token_type: 'Bearer',
      },
    };
  }

  function revoke(req: FakeRequest): FakeResponse {
    const token = formOf(req, true).get('token');
    if (!token) return oauthError(400, 'invalid_request', 'Bad Request');
    const t = fake.oauth.find(token);
    if (!t || t.grant.revoked || (t.expiresAt !== null && t.expiresAt <= Date.now()))
      return oauthError(400, 'invalid_token', 'Token expired or revoked');
    fake.oauth.revokeToken(token, 'api');
    return { status: 200, body: {} };
  }

  function channels(req: FakeRequest, ctx: FakeContext, me: FakeUser): FakeResponse {
    const parts = (req.query.get('part') ?? '').split(',').filter(Boolean);
    if (!parts.length)
      return googleError(400, 'required', 'Required parameter: part', 'INVALID_ARGUMENT', {
        domain: 'global',
      });
    const ids = (req.query.get('id') ?? '').split(',').filter(Boolean);
    let found: YouTubeChannel[];
    if (req.query.get('mine') === 'true') found = channelsOf(me);
    else if (ids.length) {
      const known = [fake.oauth.user(), ...fake.oauth.users.values()].flatMap(channelsOf);
      found = known.filter((ch) => ids.includes(ch.id));
    } else
      return googleError(
        400,
        'missingRequiredParameter',
        'No filter selected. Expected one of: forHandle, forUsername, id, managedByMe, mine',
        'INVALID_ARGUMENT',
      );
    const items = found.map((ch) => {
      const thumb = (size: number) => ({ url: `${ctx.base}${avatarPath(ch.id)}`, width: size, height: size });
      return {
        kind: 'youtube#channel',
        etag: `etag-${ch.id}`,
        id: ch.id,
        ...(parts.includes('snippet')
          ? {
              snippet: {
                title: ch.title,
                description: '',
                customUrl: ch.customUrl,
                publishedAt: '2020-01-01T00:00:00Z',
                thumbnails: { default: thumb(88), medium: thumb(240), high: thumb(800) },
                localized: { title: ch.title, description: '' },
                country: 'US',
              },
            }
          : {}),
        ...(parts.includes('statistics')
          ? {
              statistics: {
                viewCount: String(ch.views),
                subscriberCount: String(ch.subscribers),
                hiddenSubscriberCount: false,
                videoCount: String(ch.videos),
              },
            }
          : {}),
        ...(parts.includes('contentDetails')
          ? { contentDetails: { relatedPlaylists: { likes: '', uploads: `UU${ch.id.slice(2)}` } } }
          : {}),
      };
    });
    return {
      status: 200,
      body: {
        kind: 'youtube#channelListResponse',
        etag: 'channels',
        pageInfo: { totalResults: items.length, resultsPerPage: 5 },
        items,
      },
    };
  }

  function start(req: FakeRequest, ctx: FakeContext): FakeResponse {
    if (req.query.get('uploadType') !== 'resumable')
      return badRequest('invalidParameter', 'uploadType must be resumable');
    const parts = (req.query.get('part') ?? '').split(',');
    if (!parts.includes('snippet') || !parts.includes('status')) {
      return badRequest('unexpectedPart', 'part must name snippet and status to set them');
    }
    const size = Number(req.headers['x-upload-content-length']);
    const type = req.headers['x-upload-content-type'] ?? '';
    if (!Number.isInteger(size) || size <= 0)
      return badRequest('invalidValue', 'X-Upload-Content-Length is required');
    if (!/^video\/|^application\/octet-stream$/.test(type)) {
      return googleError(
        400,
        'invalidFilename',
        'X-Upload-Content-Type must be a video type',
        'INVALID_ARGUMENT',
      );
    }
    const body = obj(req.json);
    const snippet = obj(body?.snippet);
    const status = obj(body?.status);
    const title = snippet?.title;
    if (typeof title !== 'string' || !title.trim() || [...title].length > 100 || /[<>]/.test(title)) {
      return badRequest('invalidTitle', 'The request metadata specifies an invalid or empty video title.');
    }
    const description = snippet?.description ?? '';
    if (
      typeof description !== 'string' ||
      Buffer.byteLength(description) > 5000 ||
      /[<>]/.test(description)
    ) {
      return badRequest('invalidDescription', 'The request metadata specifies an invalid video description.');
    }
    const tags = snippet?.tags;
    if (tags !== undefined && (!Array.isArray(tags) || tags.join(',').length > 500)) {
      return badRequest('invalidTags', 'The request metadata specifies invalid video keywords.');
    }
    const categoryId = snippet?.categoryId ?? '22';
    if (typeof categoryId !== 'string' || !CATEGORIES.has(categoryId)) {
      return badRequest(
        'invalidCategoryId',
        'The snippet.categoryId property specifies an invalid category ID.',
      );
    }
    const privacy = status?.privacyStatus ?? 'public';
    if (typeof privacy !== 'string' || !PRIVACY.has(privacy)) {
      return badRequest('invalidVideoMetadata', 'The request metadata is invalid.');
    }
    const publishAt = status?.publishAt;
    if (
      publishAt !== undefined &&
      (privacy !== 'private' || typeof publishAt !== 'string' || !(Date.parse(publishAt) > Date.now()))
    ) {
      return badRequest(
        'invalidPublishAt',
        'The request metadata specifies an invalid scheduled publishing time.',
      );
    }
    if (fake.uploadsLeft <= 0) {
      return badRequest('uploadLimitExceeded', 'The user has exceeded the number of videos they may upload.');
    }
    seq++;
    const s: Session = {
      id: `AEnB2U${seq}xq`,
      resource: {
        snippet: { title, description, ...(tags ? { tags: tags as string[] } : {}), categoryId },
        status: {
          privacyStatus: privacy,
          selfDeclaredMadeForKids: status?.selfDeclaredMadeForKids === true,
          ...(typeof publishAt === 'string' ? { publishAt } : {}),
        },
      },
      size,
      contentType: type,
      parts: [],
      hash: createHash('sha256'),
      received: 0,
      chunks: [],
      video: null,
    };
    sessions.set(s.id, s);
    return {
      status: 200,
      headers: {
        location: `${ctx.base}/upload/youtube/v3/videos?uploadType=resumable&part=snippet,status&upload_id=${s.id}`,
      },
    };
  }

  function resource(v: YouTubeVideo) {
    return {
      kind: 'youtube#video',
      etag: `etag-${v.id}`,
      id: v.id,
      snippet: { ...v.snippet, publishedAt: new Date().toISOString(), channelId: 'UCherald' },
      status: { uploadStatus: 'uploaded', ...v.status },
    };
  }

  function incomplete(s: Session): FakeResponse {
    return { status: 308, headers: s.received > 0 ? { range: `bytes=0-${s.received - 1}` } : {} };
  }

  function put(req: FakeRequest): FakeResponse {
    const s = sessions.get(req.query.get('upload_id') ?? '');
    if (!s)
      return googleError(404, 'notFound', 'The upload session was not found or has expired.', 'NOT_FOUND');
    const range = req.headers['content-range'] ?? '';
    if (/^bytes \*\/\d+$/.test(range)) {
      if (s.video) return { status: 200, body: resource(s.video) };
      return incomplete(s);
    }
    if (s.video) return { status: 200, body: resource(s.video) };
    const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(range);
    if (!m || Number(m[3]) !== s.size || Number(m[2]) - Number(m[1]) + 1 !== req.body.length) {
      return badRequest('invalidValue', 'Content-Range does not match the body or the announced size');
    }
    // Only the byte after the persisted ones may come next.
    if (Number(m[1]) !== s.received) return incomplete(s);
    const end = Number(m[2]) + 1;
    if (end !== s.size && (end - Number(m[1])) % (256 * 1024) !== 0) {
      return badRequest('invalidValue', 'Chunks other than the last must be multiples of 256 KiB');
    }
    const take = fake.acceptPerPut === null ? req.body.length : Math.min(req.body.length, fake.acceptPerPut);
    const kept = req.body.subarray(0, take);
    s.hash.update(kept);
    if (!fake.countOnly) s.parts.push(Buffer.from(kept));
    s.chunks.push(range);
    s.received += take;
    if (s.received < s.size) return incomplete(s);
    seq++;
    fake.uploadsLeft--;
    const video: YouTubeVideo = {
      id: `vid${String(seq).padStart(8, '0')}`,
      snippet: s.resource.snippet,
      status: s.resource.status,
      bytes: Buffer.concat(s.parts),
      contentType: s.contentType,
      chunks: s.chunks,
      sha256: s.hash.digest('hex'),
      size: s.received,
      statistics: { viewCount: 0, likeCount: 0, commentCount: 0 },
    };
    s.video = video;
    fake.videos.push(video);
    if (fake.loseNextCompletion) {
      fake.loseNextCompletion = false;
      return googleError(503, 'backendError', 'Backend Error', 'UNAVAILABLE');
    }
    return { status: 201, body: resource(video) };
  }

  function commentResource(c: YouTubeComment) {
    return {
      kind: 'youtube#comment',
      etag: `etag-c-${c.id}`,
      id: c.id,
      snippet: {
        channelId: c.channelId,
        videoId: c.videoId,
        ...(c.parentId ? { parentId: c.parentId } : {}),
        textDisplay: c.text,
        textOriginal: c.text,
        authorDisplayName: c.authorName ?? '@herald',
        authorProfileImageUrl: c.authorAvatar ?? 'https://yt3.ggpht.example/UCherald=s88',
        authorChannelUrl: `http://www.youtube.com/channel/${c.authorChannelId}`,
        authorChannelId: { value: c.authorChannelId },
        canRate: true,
        viewerRating: 'none',
        likeCount: 0,
        publishedAt: new Date(c.publishedAt).toISOString(),
        updatedAt: new Date(c.publishedAt).toISOString(),
      },
    };
  }

  const repliesTo = (id: string) =>
    fake.comments.filter((r) => r.parentId === id).sort((a, b) => a.publishedAt - b.publishedAt);

  function threadResource(c: YouTubeComment, withReplies = false) {
    const replies = repliesTo(c.id);
    const snippet = {
      authorDisplayName: c.authorName ?? 'Herald',
      ...(c.authorAvatar ? { authorProfileImageUrl: c.authorAvatar } : {}),
      authorChannelUrl: `http://www.youtube.com/channel/${c.authorChannelId}`,
      authorChannelId: { value: c.authorChannelId },
      channelId: c.channelId,
      videoId: c.videoId,
      textDisplay: c.text,
      textOriginal: c.text,
      canRate: true,
      viewerRating: 'none',
      likeCount: 0,
      publishedAt: new Date(c.publishedAt).toISOString(),
      updatedAt: new Date(c.publishedAt).toISOString(),
    };
    return {
      kind: 'youtube#commentThread',
      etag: `etag-${c.id}`,
      id: c.id,
      snippet: {
        channelId: c.channelId,
        videoId: c.videoId,
        topLevelComment: { kind: 'youtube#comment', etag: `etag-c-${c.id}`, id: c.id, snippet },
        canReply: true,
        totalReplyCount: replies.length,
        isPublic: true,
      },
      ...(withReplies && replies.length
        ? { replies: { comments: replies.slice(0, 5).map(commentResource) } }
        : {}),
    };
  }

  function insertThread(req: FakeRequest, me: FakeUser): FakeResponse {
    if (!(req.query.get('part') ?? '').split(',').includes('snippet'))
      return googleError(400, 'required', 'Required parameter: part', 'INVALID_ARGUMENT', {
        location: 'part',
        locationType: 'parameter',
      });
    const snippet = obj(obj(req.json)?.snippet);
    const channelId = typeof snippet?.channelId === 'string' ? snippet.channelId : '';
    const videoId = typeof snippet?.videoId === 'string' ? snippet.videoId : '';
    if (!channelId || !videoId)
      return badRequest(
        'channelOrVideoIdMissing',
        'The comment thread must be linked to a video. Check the snippet.channelId and snippet.videoId properties.',
      );
    const text = obj(obj(snippet?.topLevelComment)?.snippet)?.textOriginal;
    if (typeof text !== 'string' || !text.trim())
      return badRequest(
        'commentTextRequired',
        'The comment resource must contain a value for snippet.textOriginal.',
      );
    if ([...text].length > 10_000)
      return badRequest(
        'commentTextTooLong',
        'The comment resource contains too many characters in snippet.textOriginal.',
      );
    if (!fake.videos.some((v) => v.id === videoId))
      return googleError(
        404,
        'videoNotFound',
        'The video identified by the videoId parameter could not be found.',
        'NOT_FOUND',
      );
    const author = channelsOf(me)[0]?.id ?? 'UCherald';
    const c: YouTubeComment = {
      id: `Ugz${String(fake.comments.length + 1).padStart(6, '0')}${videoId}`,
      videoId,
      authorChannelId: author,
      channelId,
      text,
      publishedAt: Date.now(),
    };
    fake.comments.push(c);
    if (fake.loseNextCommentResponse) {
      fake.loseNextCommentResponse = false;
      return googleError(503, 'backendError', 'Backend Error', 'UNAVAILABLE');
    }
    return { status: 200, body: threadResource(c) };
  }

  /** One page of `all` from the request's pageToken and maxResults (1–100, default 20). */
  function paged<T>(req: FakeRequest, all: T[]): { items: T[]; next?: string; max: number } | FakeResponse {
    const raw = req.query.get('maxResults');
    const max = raw === null ? 20 : Number(raw);
    if (!Number.isInteger(max) || max < 1 || max > 100)
      return badRequest('invalidParameter', 'maxResults must be between 1 and 100');
    const token = req.query.get('pageToken');
    let from = 0;
    if (token) {
      const m = /^QURTSl9p(\d+)$/.exec(token);
      if (!m) return badRequest('invalidPageToken', 'The request specifies an invalid page token.');
      from = Number(m[1]);
    }
    const items = all.slice(from, from + max);
    return { items, max, ...(from + max < all.length ? { next: `QURTSl9p${from + max}` } : {}) };
  }

  function listThreads(req: FakeRequest): FakeResponse {
    const filters = ['allThreadsRelatedToChannelId', 'videoId', 'id'].filter((f) => req.query.has(f));
    if (filters.length !== 1)
      return badRequest(
        'missingRequiredParameter',
        'No filter selected. Expected one of: allThreadsRelatedToChannelId, id, videoId, channelId',
      );
    const videoId = req.query.get('videoId');
    if (
      videoId !== null &&
      !fake.videos.some((v) => v.id === videoId) &&
      !fake.comments.some((c) => c.videoId === videoId)
    )
      return googleError(
        404,
        'videoNotFound',
        'The video identified by the videoId parameter could not be found.',
        'NOT_FOUND',
      );
    const channel = req.query.get('allThreadsRelatedToChannelId');
    const ids = (req.query.get('id') ?? '').split(',').filter(Boolean);
    const all = fake.comments
      .filter((c) => !c.parentId)
      .filter((c) =>
        videoId !== null
          ? c.videoId === videoId
          : channel !== null
            ? c.channelId === channel
            : ids.includes(c.id),
      )
      .sort((a, b) => b.publishedAt - a.publishedAt);
    // By id: every thread asked for, no paging (maxResults does not go with id).
    if (ids.length > 50) return badRequest('invalidParameter', 'At most 50 ids');
    const page = ids.length ? { items: all, max: all.length } : paged(req, all);
    if ('status' in page) return page;
    const withReplies = (req.query.get('part') ?? '').split(',').includes('replies');
    return {
      status: 200,
      body: {
        kind: 'youtube#commentThreadListResponse',
        etag: 'threads',
        ...('next' in page && page.next ? { nextPageToken: page.next } : {}),
        pageInfo: { totalResults: all.length, resultsPerPage: page.max },
        items: page.items.map((c) => threadResource(c, withReplies)),
      },
    };
  }

  function listComments(req: FakeRequest): FakeResponse {
    const parentId = req.query.get('parentId');
    const ids = (req.query.get('id') ?? '').split(',').filter(Boolean);
    if ((parentId === null) === (ids.length === 0))
      return badRequest('missingRequiredParameter', 'No filter selected. Expected one of: id, parentId');
    const all = parentId !== null ? repliesTo(parentId) : fake.comments.filter((c) => ids.includes(c.id));
    const page = paged(req, all);
    if ('status' in page) return page;
    return {
      status: 200,
      body: {
        kind: 'youtube#commentListResponse',
        etag: 'comments',
        ...(page.next ? { nextPageToken: page.next } : {}),
        pageInfo: { totalResults: all.length, resultsPerPage: page.max },
        items: page.items.map(commentResource),
      },
    };
  }

  function insertReply(req: FakeRequest, me: FakeUser): FakeResponse {
    if (!(req.query.get('part') ?? '').split(',').includes('snippet'))
      return googleError(400, 'required', 'Required parameter: part', 'INVALID_ARGUMENT');
    const snippet = obj(obj(req.json)?.snippet);
    const parentId = typeof snippet?.parentId === 'string' ? snippet.parentId : '';
    const text = snippet?.textOriginal;
    if (typeof text !== 'string' || !text.trim())
      return badRequest(
        'commentTextRequired',
        'The comment resource must contain a value for snippet.textOriginal.',
      );
    if ([...text].length > 10_000)
      return badRequest(
        'commentTextTooLong',
        'The comment resource contains too many characters in snippet.textOriginal.',
      );
    const parent = fake.comments.find((c) => c.id === parentId);
    if (!parent)
      return googleError(
        404,
        'parentCommentNotFound',
        'The specified parent comment could not be found.',
        'NOT_FOUND',
      );
    if (parent.parentId)
      return badRequest(
        'operationNotSupported',
        'The API user is not able to insert a comment in reply to the comment identified by snippet.parentId.',
      );
    seq++;
    const c: YouTubeComment = {
      id: `${parent.id}.${String(seq).padStart(6, '0')}`,
      videoId: parent.videoId,
      authorChannelId: channelsOf(me)[0]?.id ?? 'UCherald',
      channelId: parent.channelId,
      text,
      publishedAt: Date.now(),
      parentId: parent.id,
    };
    fake.comments.push(c);
    if (fake.loseNextReplyResponse) {
      fake.loseNextReplyResponse = false;
      return googleError(503, 'backendError', 'Backend Error', 'UNAVAILABLE');
    }
    return { status: 200, body: commentResource(c) };
  }

  function setThumbnail(req: FakeRequest): FakeResponse {
    const v = fake.videos.find((x) => x.id === req.query.get('videoId'));
    if (!v)
      return googleError(
        404,
        'videoNotFound',
        'The video that you are trying to update cannot be found.',
        'NOT_FOUND',
      );
    if (!req.body.length)
      return badRequest('mediaBodyRequired', 'The request does not include the image content.');
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    if (!['image/jpeg', 'image/png', 'application/octet-stream'].includes(type))
      return badRequest('invalidImage', 'The provided image content is invalid.');
    if (req.body.length > 2 * 1024 * 1024)
      return googleError(413, 'mediaBodyTooLarge', 'The image is larger than 2 MB.', 'INVALID_ARGUMENT');
    v.thumbnail = { bytes: Buffer.from(req.body), contentType: type, sets: (v.thumbnail?.sets ?? 0) + 1 };
    const url = `https://i.ytimg.example/vi/${v.id}/custom.jpg`;
    return {
      status: 200,
      body: {
        kind: 'youtube#thumbnailSetResponse',
        etag: `thumb-${v.id}-${v.thumbnail.sets}`,
        items: [{ default: { url, width: 120, height: 90 }, high: { url, width: 480, height: 360 } }],
      },
    };
  }

  /** The playlists of the user's channel: UCherald's for the default user, none for the others. */
  const playlistsOf = (me: FakeUser) => (me.isDefault ? fake.playlists : []);

  function listPlaylists(req: FakeRequest, me: FakeUser): FakeResponse {
    if (req.query.get('mine') !== 'true' && !req.query.get('id') && !req.query.get('channelId'))
      return badRequest(
        'missingRequiredParameter',
        'No filter selected. Expected one of: channelId, id, mine',
      );
    const max = Number(req.query.get('maxResults') ?? '5');
    if (!Number.isInteger(max) || max < 0 || max > 50)
      return badRequest('invalidParameter', 'maxResults must be between 0 and 50');
    const all = playlistsOf(me);
    const start = Number(req.query.get('pageToken')?.replace(/^PT/, '') ?? '0');
    if (!Number.isInteger(start) || start < 0) return badRequest('invalidPageToken', 'Invalid page token');
    const items = all.slice(start, start + max).map((p) => ({
      kind: 'youtube#playlist',
      etag: `etag-${p.id}`,
      id: p.id,
      snippet: {
        title: p.title,
        description: '',
        channelId: 'UCherald',
        publishedAt: '2024-01-01T00:00:00Z',
      },
    }));
    return {
      status: 200,
      body: {
        kind: 'youtube#playlistListResponse',
        etag: 'playlists',
        ...(start + max < all.length ? { nextPageToken: `PT${start + max}` } : {}),
        pageInfo: { totalResults: all.length, resultsPerPage: max },
        items,
      },
    };
  }

  function playlistItemResource(item: { id: string; playlistId: string; videoId: string }) {
    const position = fake.playlistItems.filter((i) => i.playlistId === item.playlistId).indexOf(item);
    return {
      kind: 'youtube#playlistItem',
      etag: `etag-${item.id}`,
      id: item.id,
      snippet: {
        playlistId: item.playlistId,
        position,
        channelId: 'UCherald',
        resourceId: { kind: 'youtube#video', videoId: item.videoId },
      },
    };
  }

  function insertPlaylistItem(req: FakeRequest, me: FakeUser): FakeResponse {
    if (!(req.query.get('part') ?? '').split(',').includes('snippet'))
      return badRequest('unexpectedPart', 'part must name snippet');
    const snippet = obj(obj(req.json)?.snippet);
    const resource = obj(snippet?.resourceId);
    const playlistId = snippet?.playlistId;
    if (typeof playlistId !== 'string' || !playlistsOf(me).some((p) => p.id === playlistId))
      return googleError(
        404,
        'playlistNotFound',
        'The playlist identified with the request’s playlistId parameter cannot be found.',
        'NOT_FOUND',
      );
    if (resource?.kind !== 'youtube#video')
      return badRequest('invalidResourceId', 'The resource ID specified in the request is not supported.');
    const videoId = resource.videoId;
    if (typeof videoId !== 'string' || !fake.videos.some((v) => v.id === videoId))
      return googleError(
        404,
        'videoNotFound',
        'The video that you are trying to add to the playlist cannot be found.',
        'NOT_FOUND',
      );
    seq++;
    const item = { id: `UEx${String(seq).padStart(10, '0')}`, playlistId, videoId };
    fake.playlistItems.push(item);
    if (fake.loseNextPlaylistInsert) {
      fake.loseNextPlaylistInsert = false;
      return googleError(503, 'backendError', 'Backend Error', 'UNAVAILABLE');
    }
    return { status: 200, body: playlistItemResource(item) };
  }

  function listPlaylistItems(req: FakeRequest): FakeResponse {
    const playlistId = req.query.get('playlistId');
    if (!playlistId && !req.query.get('id'))
      return badRequest('missingRequiredParameter', 'No filter selected. Expected one of: id, playlistId');
    if (playlistId && !fake.playlists.some((p) => p.id === playlistId))
      return googleError(
        404,
        'playlistNotFound',
        'The playlist identified with the request’s playlistId parameter cannot be found.',
        'NOT_FOUND',
      );
    const videoId = req.query.get('videoId');
    const items = fake.playlistItems
      .filter((i) => (playlistId ? i.playlistId === playlistId : i.id === req.query.get('id')))
      .filter((i) => !videoId || i.videoId === videoId)
      .map(playlistItemResource);
    return {
      status: 200,
      body: {
        kind: 'youtube#playlistItemListResponse',
        etag: 'items',
        pageInfo: { totalResults: items.length, resultsPerPage: items.length },
        items,
      },
    };
  }

  function list(req: FakeRequest): FakeResponse {
    const parts = (req.query.get('part') ?? '').split(',').filter(Boolean);
    if (!parts.length)
      return badRequest(
        'missingRequiredParameter',
        'No filter selected. Expected one of: id, myRating, chart',
      );
    const ids = (req.query.get('id') ?? '').split(',').filter(Boolean);
    if (ids.length > 50) return badRequest('invalidParameter', 'Too many ids');
    const items = fake.videos
      .filter((v) => ids.includes(v.id))
      .map((v) => ({
        kind: 'youtube#video',
        etag: `etag-${v.id}`,
        id: v.id,
        ...(parts.includes('statistics')
          ? {
              statistics: {
                viewCount: String(v.statistics.viewCount),
                likeCount: String(v.statistics.likeCount),
                favoriteCount: '0',
                commentCount: String(v.statistics.commentCount),
              },
            }
          : {}),
        ...(parts.includes('snippet') ? { snippet: v.snippet } : {}),
      }));
    return {
      status: 200,
      body: {
        kind: 'youtube#videoListResponse',
        etag: 'list',
        items,
        pageInfo: { totalResults: items.length, resultsPerPage: items.length },
      },
    };
  }

  return fake;
}
