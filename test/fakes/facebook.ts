import { randomBytes } from 'node:crypto';
import { type FakeFbUpload, isVideoFile, ruploadError, uploadStatus } from './facebook-formats.ts';
import { FacebookLogin, userPages } from './facebook-login.ts';
import { FakeConversations, type FieldSpec, fieldSpecs, modParams, seedTime } from './meta-inbox.ts';
import { defaultAccount, type FakeOAuth, hashDigits, namedAccount, serveAvatar } from './oauth.ts';
import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
  type InboxSeed,
} from './server.ts';

// Contract fake of the Facebook Pages API (graph.facebook.com) — and the Graph API conventions the
// Threads and Instagram fakes share: parameters from the query string, a form body or JSON; the
// token as `access_token` (or a Bearer header); the error body
// `{"error": {"message", "type", "code", "error_subcode", "fbtrace_id"}}` with HTTP 400 for
// OAuth and parameter errors; an optional `/vNN.N` version prefix; media fetched from public URLs.
// Facebook Login (the dialog, code and long-lived token exchange, /me, /me/permissions, /me/accounts with
// Page tokens) is served as test/fakes/facebook-login.ts describes. The default user manages two Pages; the
// first is `pageId`, the Page the publishing endpoints act for. The Page endpoints serve every Page of a
// user of the fake; a Page token issued through the login needs pages_manage_posts to publish (else
// (#200), as Graph answers), and a user token cannot publish to a Page. The token errors and the throttling
// answers (codes 4/17/32/613/80001, HTTP 400/403 with X-App-Usage / X-Business-Use-Case-Usage) are
// described in facebook-login.ts and built by documented-errors.ts.
// Comments (Graph API /{object-id}/comments; Pages API "Comments and @mentions"): POST
// /{page-post-id|video-id}/comments with `message` answers {"id": "<post>_<comment>"}, made as the
// Page; a Page token issued through the login needs pages_manage_engagement (else (#200), HTTP 403;
// the legacy test tokens in `tokensWithoutComments` lack it too); an object the Page does not have
// answers code 100 / subcode 33. GET /{object-id}/comments lists them (id, message, created_time,
// from{id,name}, permalink_url) and GET /{comment-id} reads one. Comments made are kept in `comments`.
// The inbox (seeded with `inbox(seed)`): comments by other people on the Page's posts, at the seed's
// time, `parent` naming the post or the comment answered (default: the Page's latest post, made if
// there is none); with `filter=stream` the comments edge lists replies too, each with `parent{id}`
// (the Comments reference), else top-level comments only; lists come newest first. The feed embeds
// each post's comments when asked (`comments.filter(stream).limit(n){…}`, Graph field expansion).
// `from` of other people's comments is left out for a login token without pages_read_user_content
// (the Pages API comments guide). POST /{comment-id}/comments replies to a comment (as the Page).
// Messages: the Page's Messenger conversations and the Send API as test/fakes/meta-inbox.ts
// describes (pages_messaging on login tokens, else (#230), HTTP 403). Facebook has no mention kind:
// a mention seed is a comment that names the Page.
// Reels and stories (their upload phases, the rupload transfer, GET /{page-id}/stories) are served as
// test/fakes/facebook-formats.ts describes; upload sessions are kept in `uploads`, and a published
// reel or story joins `posts` with its `format` (stories stay off the feed).

// ---- Graph conventions (shared by the Meta fakes) ------------------------------------------

export const fbtrace = () => randomBytes(8).toString('base64url');

export function graphErrorResponse(
  code: number,
  message: string,
  opts: {
    subcode?: number;
    type?: string;
    status?: number;
    userMsg?: string;
    headers?: Record<string, string>;
  } = {},
): FakeResponse {
  return {
    status: opts.status ?? 400,
    headers: opts.headers,
    body: {
      error: {
        message,
        type: opts.type ?? 'OAuthException',
        code,
        ...(opts.subcode ? { error_subcode: opts.subcode } : {}),
        ...(opts.userMsg ? { error_user_msg: opts.userMsg } : {}),
        fbtrace_id: fbtrace(),
      },
    },
  };
}

/** Query string, form body and JSON body merged, as the Graph API accepts them. */
export function graphParams(req: FakeRequest): URLSearchParams {
  const out = new URLSearchParams(req.query);
  const type = req.headers['content-type'] ?? '';
  if (type.includes('application/x-www-form-urlencoded')) {
    for (const [k, v] of new URLSearchParams(req.body.toString('utf8'))) out.set(k, v);
  } else if (req.json && typeof req.json === 'object') {
    for (const [k, v] of Object.entries(req.json as Record<string, unknown>)) {
      out.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    }
  }
  return out;
}

/** Path segments below the fake's prefix, without the optional version. */
export function graphPath(req: FakeRequest): string[] {
  return req.path
    .split('/')
    .filter(Boolean)
    .filter((seg, i) => !(i === 0 && /^v\d+\.\d+$/.test(seg)));
}

/**
 * Checks the access token (the legacy test tokens; tokens issued through Facebook Login are checked by
 * FacebookLogin.authenticate); an error response when it is missing, unknown or expired. Graph API
 * "Handling Errors": code 190 (subcode 463 "Expired"), HTTP 400, and code 104 for a missing token. Unknown
 * tokens carry Graph's WWW-Authenticate: OAuth "Facebook Platform" "invalid_token" "…" (observed).
 */
export function checkToken(
  req: FakeRequest,
  params: URLSearchParams,
  valid: Set<string>,
  expired: Set<string>,
): FakeResponse | null {
  const token = params.get('access_token') ?? bearer(req);
  if (!token) return graphErrorResponse(104, 'An access token is required to request this resource.');
  if (expired.has(token)) {
    return graphErrorResponse(
      190,
      'Error validating access token: Session has expired on Thursday, 01-Jan-26 00:00:00 PST.',
      { subcode: 463 },
    );
  }
  if (!valid.has(token)) {
    return graphErrorResponse(190, 'Invalid OAuth access token - Cannot parse access token', {
      headers: {
        'www-authenticate': 'OAuth "Facebook Platform" "invalid_token" "Invalid OAuth access token"',
      },
    });
  }
  return null;
}

export interface Downloaded {
  bytes: Buffer;
  contentType: string;
}

/** Meta cURLs media from the public URL it is given. */
export async function download(url: string | null): Promise<Downloaded | null> {
  if (!url || !/^https?:\/\//.test(url)) return null;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) return null;
    return {
      bytes: Buffer.from(await res.arrayBuffer()),
      contentType: res.headers.get('content-type') ?? '',
    };
  } catch {
    return null;
  }
}

export const isJpeg = (b: Buffer) => b.length > 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff;
export const isPng = (b: Buffer) =>
  b.length > 8 && b.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]));

/** `since`/`until` (unix seconds) filter plus `limit`/`after` cursor pagination, newest first. */
export function pageOf<T>(
  items: T[],
  time: (t: T) => number,
  params: URLSearchParams,
): { data: T[]; paging?: { cursors: { before: string; after: string }; next?: string } } {
  const since = Number(params.get('since') ?? Number.NaN);
  const until = Number(params.get('until') ?? Number.NaN);
  const filtered = items
    .filter((t) => (Number.isFinite(since) ? time(t) >= since * 1000 : true))
    .filter((t) => (Number.isFinite(until) ? time(t) <= until * 1000 : true))
    .sort((a, b) => time(b) - time(a));
  const limit = Math.min(100, Number(params.get('limit') ?? 25) || 25);
  const start = Number(Buffer.from(params.get('after') ?? '', 'base64url').toString() || 0);
  const data = filtered.slice(start, start + limit);
  if (!data.length) return { data };
  const end = start + data.length;
  const cursors = {
    before: Buffer.from(String(start)).toString('base64url'),
    after: Buffer.from(String(end)).toString('base64url'),
  };
  return { data, paging: { cursors, ...(end < filtered.length ? { next: `next-page-after-${end}` } : {}) } };
}

/** Graph timestamps: `2026-04-15T14:30:00+0000`. */
export const graphTime = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+0000');

let seq = 0;
/** A numeric Graph-style id. */
export const graphId = (prefix = '1789') =>
  `${prefix}${String(Date.now() % 1e6).padStart(6, '0')}${String(++seq).padStart(5, '0')}`;

// ---- Facebook Pages --------------------------------------------------------------------------

export interface FakeFacebookMedia {
  kind: 'photo' | 'video';
  url: string;
  alt?: string;
  bytes: Buffer;
  contentType: string;
}

export interface FakeFacebookPost {
  id: string;
  message?: string;
  link?: string;
  createdAt: number;
  permalink: string;
  media: FakeFacebookMedia[];
  /** For video posts, the video id (the id POST /videos answered). */
  videoId?: string;
  /** A reel or a story (absent: a feed post or a video). */
  format?: 'reel' | 'story';
  /** A story's photo or video id (GET /{page-id}/stories `media_id`). */
  mediaId?: string;
}

export interface FakeFacebookComment {
  id: string;
  /** The post (or video) commented on. */
  objectId: string;
  message: string;
  createdAt: number;
  from: { id: string; name: string };
  permalink: string;
  /** A reply: the comment it answers. */
  parentId?: string;
}

interface Photo {
  id: string;
  media: FakeFacebookMedia;
  published: boolean;
}

export interface FacebookFake extends FakePlatform {
  readonly oauth: FakeOAuth;
  readonly login: FacebookLogin;
  /** The Page the tokens act for. */
  pageId: string;
  validTokens: Set<string>;
  expiredTokens: Set<string>;
  posts: FakeFacebookPost[];
  photos: Map<string, Photo>;
  /** Engagement per post id (reactions, comments, shares, views). */
  engagement: Map<string, { reactions: number; comments: number; shares: number; views: number }>;
  /** Perform the next publishing call but answer 500, as if the connection died after Meta acted. */
  loseNextResponse: boolean;
  comments: FakeFacebookComment[];
  /** Legacy test tokens whose grant lacks pages_manage_engagement. */
  tokensWithoutComments: Set<string>;
  /** The Page's Messenger conversations. */
  conversations: FakeConversations;
  inbox(seed: InboxSeed): { platform_id: string };
  /** Reel and video story upload sessions. */
  uploads: FakeFbUpload[];
  /** Status reads that answer processing in_progress after each transfer. */
  processingPolls: number;
}

const INSIGHT_METRICS = new Set(['post_media_view', 'post_clicks', 'post_reactions_by_type_total']);
const DEPRECATED_METRICS = new Set(['post_impressions', 'post_impressions_unique', 'post_engaged_users']);

export function createFake(): FacebookFake {
  const login: FacebookLogin = new FacebookLogin({
    platform: 'facebook',
    defaultUser: () =>
      defaultAccount({
        id: '10160000000000001',
        username: 'ada.acme',
        displayName: 'Ada Acme',
        followers: 0,
        following: 0,
        posts: 0,
      }),
    makeUser: (name) => namedAccount(name, `1016${hashDigits(name, 13, 'fbuser')}`),
    pagesOf: (user) =>
      user.isDefault
        ? [
            { id: fake.pageId, name: 'Acme', category: 'Software', followers: 4200, fans: 4105 },
            {
              id: '104857600000002',
              name: 'Acme Outlet',
              category: 'Shopping & retail',
              followers: 310,
              fans: 298,
            },
          ]
        : userPages(user, false),
  });
  const fake: FacebookFake = {
    name: 'facebook',
    oauth: login.oauth,
    login,
    pageId: '104857600000001',
    validTokens: new Set(['token']),
    expiredTokens: new Set(),
    posts: [],
    photos: new Map(),
    engagement: new Map(),
    loseNextResponse: false,
    comments: [],
    tokensWithoutComments: new Set(),
    conversations: new FakeConversations('messenger', 2018278),
    inbox: (seed) => seedInbox(fake, seed),
    uploads: [],
    processingPolls: 0,
    reset() {
      login.reset();
      fake.validTokens = new Set(['token']);
      fake.expiredTokens = new Set();
      fake.posts = [];
      fake.photos = new Map();
      fake.engagement = new Map();
      fake.loseNextResponse = false;
      fake.comments = [];
      fake.tokensWithoutComments = new Set();
      fake.conversations.reset();
      fake.uploads = [];
      fake.processingPolls = 0;
    },
    handle: (req, ctx) => handle(fake, req, ctx),
  };
  return fake;
}

const lost = (fake: FacebookFake, ok: FakeResponse): FakeResponse => {
  if (!fake.loseNextResponse) return ok;
  fake.loseNextResponse = false;
  return graphErrorResponse(2, 'An unexpected error has occurred. Please retry your request later.', {
    status: 500,
    type: 'OAuthException',
  });
};

async function handle(fake: FacebookFake, req: FakeRequest, ctx: FakeContext): Promise<FakeResponse> {
  const params = graphParams(req);
  const avatar = serveAvatar(req);
  if (avatar) return avatar;
  const segs = graphPath(req);
  const oauth = fake.login.handleOAuth(req, params, segs);
  if (oauth) return oauth;
  // rupload takes the token as `Authorization: OAuth <token>`.
  const rupload = segs[0] === 'video-upload' ? /^OAuth (.+)$/i.exec(req.headers.authorization ?? '') : null;
  if (rupload?.[1]) params.set('access_token', rupload[1]);
  const who = fake.login.authenticate(req, params);
  if (who && 'status' in who) return who;
  if (!who) {
    const denied = checkToken(req, params, fake.validTokens, fake.expiredTokens);
    if (denied) return denied;
  }
  if (segs[0] === 'video-upload' && req.method === 'POST' && segs.length === 3)
    return transfer(fake, req, segs[2] as string, who?.page?.id);
  if (who) {
    const account = fake.login.handleAccount(req, ctx, params, segs, who);
    if (account) return account;
  }
  const [rawNode, edge, extra] = segs;
  if (!rawNode || extra) return unknownPath(req);
  // With a Page token `me` is the Page.
  const node = rawNode === 'me' ? (who?.page?.id ?? fake.pageId) : rawNode;
  const scopes = who?.token.grant.scopes;
  const authors = !scopes || scopes.includes('pages_read_user_content');
  const convs = fake.conversations.handle(req, params, node, edge, {
    accountId: who?.page?.id ?? fake.pageId,
    self: { id: who?.page?.id ?? fake.pageId, name: who?.page?.name ?? 'Acme' },
    granted: !scopes || scopes.includes('pages_messaging'),
    denied: graphErrorResponse(230, '(#230) Requires pages_messaging permission to manage the object', {
      status: 403,
    }),
  });
  if (convs) return convs;

  if ((node === fake.pageId || fake.login.pageIds().has(node)) && edge) {
    if (
      who &&
      req.method === 'POST' &&
      ['feed', 'photos', 'videos', 'video_reels', 'video_stories', 'photo_stories'].includes(edge)
    ) {
      if (!who.page || who.page.id !== node || !who.token.grant.scopes.includes('pages_manage_posts'))
        return graphErrorResponse(
          200,
          '(#200) If posting to a page, requires both pages_read_engagement and pages_manage_posts as an admin with sufficient administrative permission',
          { status: 403 },
        );
    }
    if (req.method === 'POST' && edge === 'feed') return postFeed(fake, node, params);
    if (req.method === 'POST' && edge === 'photos') return postPhoto(fake, node, params);
    if (req.method === 'POST' && edge === 'videos') return postVideo(fake, node, params);
    if (req.method === 'POST' && (edge === 'video_reels' || edge === 'video_stories'))
      return videoPhase(fake, node, edge, params);
    if (req.method === 'POST' && edge === 'photo_stories') return photoStory(fake, node, params);
    if (req.method === 'GET' && edge === 'stories') {
      const rows = fake.posts
        .filter((p) => p.format === 'story' && p.id.startsWith(`${node}_`))
        .map((p) => ({
          _t: p.createdAt,
          post_id: p.id,
          status: 'PUBLISHED',
          creation_time: String(Math.floor(p.createdAt / 1000)),
          media_type: p.media[0]?.kind === 'video' ? 'video' : 'photo',
          media_id: p.mediaId,
          url: p.permalink,
        }));
      const page = pageOf(rows, (r) => r._t, params);
      return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
    }
    const ofPage = fake.posts.filter((p) => p.id.startsWith(`${node}_`) && p.format !== 'story');
    if (req.method === 'GET' && edge === 'feed') {
      return {
        status: 200,
        body: pageOf(
          ofPage.map((p) => postFields(fake, p, params, authors)),
          (p) => p._t,
          params,
        ),
      };
    }
    if (req.method === 'GET' && edge === 'videos') {
      const videos = ofPage.filter((p) => p.videoId).map((p) => videoFields(p, params));
      return { status: 200, body: pageOf(videos, (p) => p._t, params) };
    }
    return unknownPath(req);
  }
  if (edge === 'comments') {
    const granted = who
      ? !!who.page && who.token.grant.scopes.includes('pages_manage_engagement')
      : !fake.tokensWithoutComments.has(params.get('access_token') ?? bearer(req) ?? '');
    return comments(fake, req.method, node, params, granted, who?.page ?? null, authors);
  }
  if (!edge && req.method === 'GET') {
    const account = fake.login.node(ctx, node, params);
    if (account) return account;
  }
  if (!edge && req.method === 'GET') {
    const comment = fake.comments.find((c) => c.id === node);
    if (comment) return { status: 200, body: commentFields(fake, comment, params, authors) };
  }
  if (!edge && req.method === 'GET') return getNode(fake, node, params);
  if (edge === 'insights' && req.method === 'GET') return insights(fake, node, params);
  // DELETE /{page-post-id} (Pages API "Posts": the Page token with pages_manage_posts) → {"success":
  // true}; the post is gone, so a second delete is the 100/33 below.
  if (!edge && req.method === 'DELETE') {
    const i = fake.posts.findIndex((p) => p.id === node || p.videoId === node);
    if (i >= 0) {
      if (who && !who.token.grant.scopes.includes('pages_manage_posts'))
        return graphErrorResponse(200, '(#200) Permissions error', { status: 403 });
      fake.posts.splice(i, 1);
      return { status: 200, body: { success: true } };
    }
  }
  if (!edge || /^\d+$/.test(node)) {
    return graphErrorResponse(
      100,
      `Unsupported ${req.method.toLowerCase()} request. Object with ID '${node}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
      { subcode: 33, type: 'GraphMethodException' },
    );
  }
  return unknownPath(req);
}

const unknownPath = (req: FakeRequest) =>
  graphErrorResponse(2500, `Unknown path components: ${req.path}`, { type: 'OAuthException' });

async function postFeed(fake: FacebookFake, page: string, params: URLSearchParams): Promise<FakeResponse> {
  const message = params.get('message') ?? undefined;
  const link = params.get('link') ?? undefined;
  const attached: Photo[] = [];
  for (let i = 0; params.has(`attached_media[${i}]`); i++) {
    let fbid: unknown;
    try {
      fbid = (JSON.parse(params.get(`attached_media[${i}]`) ?? '') as { media_fbid?: unknown }).media_fbid;
    } catch {
      fbid = undefined;
    }
    const photo = typeof fbid === 'string' ? fake.photos.get(fbid) : undefined;
    if (!photo || photo.published) {
      return graphErrorResponse(
        100,
        `(#100) param attached_media[${i}] must be an unpublished photo of this Page.`,
        {
          type: 'OAuthException',
        },
      );
    }
    attached.push(photo);
  }
  if (!message && !link && !attached.length) {
    return graphErrorResponse(100, '(#100) Missing message or attachment');
  }
  if ((message?.length ?? 0) > 63206)
    return graphErrorResponse(100, '(#100) Param message must be at most 63206 characters');
  if (link && !/^https?:\/\/\S+$/.test(link)) {
    return graphErrorResponse(1609005, 'Error posting link: the URL could not be scraped.', {
      type: 'OAuthException',
    });
  }
  // Meta refuses the same status twice in a row.
  const last = fake.posts.at(-1);
  if (message && last?.message === message && !attached.length && !last.media.length) {
    return graphErrorResponse(506, 'Duplicate status message', { type: 'OAuthException' });
  }
  for (const p of attached) p.published = true;
  const post = addPost(fake, page, { message, link, media: attached.map((p) => p.media) });
  return lost(fake, { status: 200, body: { id: post.id } });
}

function addPost(
  fake: FacebookFake,
  page: string,
  p: Pick<FakeFacebookPost, 'message' | 'link' | 'media' | 'videoId'>,
): FakeFacebookPost {
  const n = graphId('');
  const post: FakeFacebookPost = {
    ...p,
    id: `${page}_${n}`,
    createdAt: Date.now(),
    permalink: `https://www.facebook.com/${page}/posts/${n}`,
  };
  fake.posts.push(post);
  return post;
}

async function postPhoto(fake: FacebookFake, page: string, params: URLSearchParams): Promise<FakeResponse> {
  const url = params.get('url');
  if (!url) return graphErrorResponse(324, '(#324) Requires upload file');
  const got = await download(url);
  if (!got) return graphErrorResponse(324, '(#324) Missing or invalid image file');
  if (!isJpeg(got.bytes) && !isPng(got.bytes) && !got.contentType.startsWith('image/')) {
    return graphErrorResponse(324, '(#324) Missing or invalid image file');
  }
  const media: FakeFacebookMedia = {
    kind: 'photo',
    url,
    alt: params.get('alt_text_custom') ?? undefined,
    bytes: got.bytes,
    contentType: got.contentType,
  };
  const published = params.get('published') !== 'false';
  const photo: Photo = { id: graphId('5'), media, published: false };
  fake.photos.set(photo.id, photo);
  if (!published) return { status: 200, body: { id: photo.id } };
  photo.published = true;
  const post = addPost(fake, page, {
    message: params.get('caption') ?? params.get('message') ?? undefined,
    media: [media],
  });
  return lost(fake, { status: 200, body: { id: photo.id, post_id: post.id } });
}

async function postVideo(fake: FacebookFake, page: string, params: URLSearchParams): Promise<FakeResponse> {
  const url = params.get('file_url');
  if (!url)
    return graphErrorResponse(100, '(#100) Invalid parameter', { userMsg: 'A video file is required.' });
  const got = await download(url);
  if (!got) {
    return graphErrorResponse(
      351,
      '(#351) Sorry, there was a problem with your video file. Please try again with another file.',
      {
        type: 'OAuthException',
      },
    );
  }
  const videoId = graphId('7');
  const media: FakeFacebookMedia = { kind: 'video', url, bytes: got.bytes, contentType: got.contentType };
  const post = addPost(fake, page, {
    message: params.get('description') ?? undefined,
    media: [media],
    videoId,
  });
  post.permalink = `/${page}/videos/${videoId}/`;
  return lost(fake, { status: 200, body: { id: videoId } });
}

type Row = Record<string, unknown> & { _t: number };

function counts(fake: FacebookFake, id: string) {
  return fake.engagement.get(id) ?? { reactions: 0, comments: 0, shares: 0, views: 0 };
}

/** Fields a node read asked for (`a,b.limit(0).summary(true)` → `a`, `b`). */
const fieldNames = (params: URLSearchParams) => fieldSpecs(params.get('fields') ?? 'id').map((f) => f.name);

function postFields(fake: FacebookFake, p: FakeFacebookPost, params: URLSearchParams, authors = true): Row {
  const row: Row = { _t: p.createdAt, id: p.id };
  const c = counts(fake, p.id);
  const embedded = fieldSpecs(params.get('fields')).find((f) => f.name === 'comments' && f.sub.length);
  if (embedded) row.comments = embeddedComments(fake, p, embedded, authors);
  for (const f of fieldNames(params)) {
    if (f === 'message' && p.message !== undefined) row.message = p.message;
    if (f === 'created_time') row.created_time = graphTime(p.createdAt);
    if (f === 'permalink_url') row.permalink_url = p.permalink;
    if (f === 'shares' && c.shares) row.shares = { count: c.shares };
    if (f === 'reactions')
      row.reactions = { data: [], summary: { total_count: c.reactions, viewer_reaction: 'NONE' } };
    if (f === 'comments' && !embedded)
      row.comments = { data: [], summary: { order: 'ranked', total_count: c.comments, can_comment: true } };
  }
  return row;
}

function videoFields(p: FakeFacebookPost, params: URLSearchParams): Row {
  const row: Row = { _t: p.createdAt, id: p.videoId ?? p.id };
  for (const f of fieldNames(params)) {
    if (f === 'description' && p.message !== undefined) row.description = p.message;
    if (f === 'created_time') row.created_time = graphTime(p.createdAt);
    if (f === 'permalink_url') row.permalink_url = p.permalink;
  }
  return row;
}

function getNode(fake: FacebookFake, id: string, params: URLSearchParams): FakeResponse {
  const upload = fake.uploads.find((u) => u.videoId === id);
  if (upload && fieldNames(params).includes('status')) {
    const row: Record<string, unknown> = { id, status: uploadStatus(upload) };
    const reel = fake.posts.find((p) => p.videoId === id);
    if (reel && fieldNames(params).includes('permalink_url')) row.permalink_url = reel.permalink;
    return { status: 200, body: row };
  }
  const post = fake.posts.find((p) => p.id === id);
  if (post) {
    const { _t, ...row } = postFields(fake, post, params);
    return { status: 200, body: row };
  }
  const video = fake.posts.find((p) => p.videoId === id);
  if (video) {
    const { _t, ...row } = videoFields(video, params);
    const c = counts(fake, id);
    for (const f of fieldNames(params)) {
      if (f === 'shares')
        return graphErrorResponse(
          100,
          '(#100) Tried accessing nonexisting field (shares) on node type (Video)',
        );
      if (f === 'reactions') row.reactions = { data: [], summary: { total_count: c.reactions } };
      if (f === 'comments') row.comments = { data: [], summary: { total_count: c.comments } };
    }
    return { status: 200, body: row };
  }
  const photo = fake.photos.get(id);
  if (photo) return { status: 200, body: { id } };
  return graphErrorResponse(
    100,
    `Unsupported get request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
    { subcode: 33, type: 'GraphMethodException' },
  );
}

function insights(fake: FacebookFake, id: string, params: URLSearchParams): FakeResponse {
  const post = fake.posts.find((p) => p.id === id);
  if (!post) return getNode(fake, id, params);
  const metrics = (params.get('metric') ?? '').split(',').filter(Boolean);
  if (!metrics.length) {
    return graphErrorResponse(3001, 'No metric was specified to be fetched.', { subcode: 1504028 });
  }
  for (const m of metrics) {
    if (DEPRECATED_METRICS.has(m) || !INSIGHT_METRICS.has(m)) {
      return graphErrorResponse(100, '(#100) The value must be a valid insights metric');
    }
  }
  const c = counts(fake, id);
  return {
    status: 200,
    body: {
      data: metrics.map((name) => ({
        name,
        period: 'lifetime',
        values: [{ value: name === 'post_media_view' ? c.views : 0 }],
        title: name,
        description: name,
        id: `${id}/insights/${name}/lifetime`,
      })),
      paging: {},
    },
  };
}

function comments(
  fake: FacebookFake,
  method: string,
  objectId: string,
  params: URLSearchParams,
  granted: boolean,
  page: { id: string; name: string } | null,
  authors = true,
): FakeResponse {
  if (method === 'POST' && !granted)
    return graphErrorResponse(200, '(#200) Permissions error', { status: 403 });
  const target = fake.comments.find((c) => c.id === objectId);
  if (target) return commentReplies(fake, method, target, params, page, authors);
  const post = fake.posts.find((p) => p.id === objectId || p.videoId === objectId);
  if (!post || (method !== 'GET' && method !== 'POST'))
    return graphErrorResponse(
      100,
      `Unsupported ${method.toLowerCase()} request. Object with ID '${objectId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
      { subcode: 33, type: 'GraphMethodException' },
    );
  if (method === 'GET') {
    const stream = params.get('filter') === 'stream';
    const rows = fake.comments
      .filter((c) => c.objectId === objectId && (stream || !c.parentId))
      .map((c) => ({ _t: c.createdAt, ...commentFields(fake, c, params, authors) }));
    const listed = pageOf(rows, (r) => r._t, params);
    return { status: 200, body: { ...listed, data: listed.data.map(({ _t, ...r }) => r) } };
  }
  const message = params.get('message') ?? '';
  if (!message.trim() && !params.get('attachment_url'))
    return graphErrorResponse(100, '(#100) The parameter message or attachment_url is required');
  if ([...message].length > 8000)
    return graphErrorResponse(100, '(#100) Param message must be at most 8000 characters long.');
  const pageId = page?.id ?? fake.pageId;
  const n = graphId('');
  const c: FakeFacebookComment = {
    id: `${post.id.split('_').at(-1)}_${n}`,
    objectId,
    message,
    createdAt: Date.now(),
    from: { id: pageId, name: page?.name ?? 'Acme' },
    permalink: `${post.permalink}?comment_id=${n}`,
  };
  fake.comments.push(c);
  return lost(fake, { status: 200, body: { id: c.id } });
}

function commentFields(
  fake: FacebookFake,
  c: FakeFacebookComment,
  params: URLSearchParams,
  authors = true,
): Record<string, unknown> {
  return commentRow(fake, c, fieldSpecs(params.get('fields') ?? 'id,message,created_time'), authors);
}

function commentRow(
  fake: FacebookFake,
  c: FakeFacebookComment,
  fields: FieldSpec[],
  authors: boolean,
): Record<string, unknown> {
  const row: Record<string, unknown> = { id: c.id };
  const byPage = c.from.id === fake.pageId || fake.login.pageIds().has(c.from.id);
  for (const { name: f } of fields) {
    if (f === 'message') row.message = c.message;
    if (f === 'created_time') row.created_time = graphTime(c.createdAt);
    if (f === 'from' && (authors || byPage)) row.from = c.from;
    if (f === 'permalink_url') row.permalink_url = c.permalink;
    if (f === 'parent' && c.parentId) row.parent = { id: c.parentId };
  }
  return row;
}

/** A post's comments as the feed embeds them (`comments.filter(stream).limit(n){…}`), newest first. */
function embeddedComments(fake: FacebookFake, p: FakeFacebookPost, spec: FieldSpec, authors: boolean) {
  const stream = spec.mods.filter === 'stream';
  const rows = fake.comments
    .filter((c) => (c.objectId === p.id || c.objectId === p.videoId) && (stream || !c.parentId))
    .map((c) => ({ _t: c.createdAt, ...commentRow(fake, c, spec.sub, authors) }));
  const listed = pageOf(rows, (r) => r._t, modParams(spec));
  return { ...listed, data: listed.data.map(({ _t, ...r }) => r) };
}

/** GET and POST /{comment-id}/comments: the replies to a comment, or a reply by the Page. */
function commentReplies(
  fake: FacebookFake,
  method: string,
  target: FakeFacebookComment,
  params: URLSearchParams,
  page: { id: string; name: string } | null,
  authors: boolean,
): FakeResponse {
  if (method === 'GET') {
    const rows = fake.comments
      .filter((c) => c.parentId === target.id)
      .map((c) => ({ _t: c.createdAt, ...commentFields(fake, c, params, authors) }));
    const listed = pageOf(rows, (r) => r._t, params);
    return { status: 200, body: { ...listed, data: listed.data.map(({ _t, ...r }) => r) } };
  }
  const message = params.get('message') ?? '';
  if (!message.trim())
    return graphErrorResponse(100, '(#100) The parameter message or attachment_url is required');
  if ([...message].length > 8000)
    return graphErrorResponse(100, '(#100) Param message must be at most 8000 characters long.');
  const c = addComment(
    fake,
    target.objectId,
    message,
    { id: page?.id ?? fake.pageId, name: page?.name ?? 'Acme' },
    Date.now(),
    target.id,
  );
  return lost(fake, { status: 200, body: { id: c.id } });
}

function addComment(
  fake: FacebookFake,
  objectId: string,
  message: string,
  from: { id: string; name: string },
  createdAt: number,
  parentId?: string,
): FakeFacebookComment {
  const post = fake.posts.find((p) => p.id === objectId || p.videoId === objectId);
  const n = graphId('');
  const c: FakeFacebookComment = {
    id: `${(post?.id ?? objectId).split('_').at(-1)}_${n}`,
    objectId,
    message,
    createdAt,
    from,
    permalink: `${post?.permalink ?? `https://www.facebook.com/${objectId}`}?comment_id=${n}`,
    ...(parentId ? { parentId } : {}),
  };
  fake.comments.push(c);
  return c;
}

/** Someone comments on (or writes to) the Page. */
function seedInbox(fake: FacebookFake, seed: InboxSeed): { platform_id: string } {
  const at = seedTime(seed);
  const author = {
    id: seed.author?.id ?? `2${hashDigits(seed.author?.handle ?? 'grace', 15, 'psid')}`,
    name: seed.author?.name ?? seed.author?.handle ?? 'Grace Hopper',
  };
  if (seed.kind === 'message') return fake.conversations.seed(seed, author);
  const parent = seed.parent ? fake.comments.find((c) => c.id === seed.parent) : undefined;
  let objectId = parent?.objectId ?? seed.parent;
  if (!objectId) {
    const page = seed.to && fake.login.pageIds().has(seed.to) ? seed.to : fake.pageId;
    const latest = fake.posts.filter((p) => p.id.startsWith(`${page}_`)).at(-1);
    objectId = (latest ?? addPost(fake, page, { message: 'Hello from the Page', media: [] })).id;
    if (!latest) (fake.posts.at(-1) as FakeFacebookPost).createdAt = Math.min(at, Date.now()) - 3600_000;
  }
  return { platform_id: addComment(fake, objectId, seed.text, author, at, parent?.id).id };
}

// ---- Reels and stories (facebook-formats.ts) ---------------------------------------------------

const phaseError = (message: string) => graphErrorResponse(6000, `(#6000) ${message}`);

/** POST /{page-id}/video_reels | video_stories: upload_phase start or finish. */
function videoPhase(
  fake: FacebookFake,
  page: string,
  edge: 'video_reels' | 'video_stories',
  params: URLSearchParams,
): FakeResponse {
  const phase = params.get('upload_phase');
  if (phase === 'start') {
    const videoId = graphId('8');
    fake.uploads.push({
      videoId,
      page,
      edge,
      phase: 'started',
      processingPolls: fake.processingPolls,
      createdAt: Date.now(),
    });
    // rupload.facebook.com's address, as Meta answers it; with the platform's URL pointed at this
    // fake, the connector sends it here (every host of the platform maps to the fake's prefix).
    return {
      status: 200,
      body: { video_id: videoId, upload_url: `https://rupload.facebook.com/video-upload/v24.0/${videoId}` },
    };
  }
  if (phase !== 'finish')
    return graphErrorResponse(100, '(#100) upload_phase must be one of {start, transfer, finish}');
  const id = params.get('video_id') ?? '';
  const u = fake.uploads.find((x) => x.videoId === id);
  if (!u || u.page !== page || u.edge !== edge)
    return graphErrorResponse(100, `(#100) Invalid video_id for ${edge}: ${id}`);
  if (u.phase === 'started') return phaseError('The video has not been uploaded yet.');
  if (u.phase === 'finished') return phaseError('The video has already been published.');
  if (u.error) return phaseError(`There was a problem processing your video: ${u.error}`);
  if (edge === 'video_reels' && params.get('video_state') !== 'PUBLISHED' && params.get('video_state'))
    return graphErrorResponse(100, '(#100) This fake publishes reels only (video_state=PUBLISHED).');
  u.phase = 'finished';
  u.publishedAt = Date.now();
  const media: FakeFacebookMedia = {
    kind: 'video',
    url: u.fileUrl ?? '',
    bytes: u.media?.bytes ?? Buffer.alloc(0),
    contentType: u.media?.contentType ?? '',
  };
  if (edge === 'video_reels') {
    u.description = params.get('description') ?? undefined;
    const post = addPost(fake, page, { message: u.description, media: [media], videoId: u.videoId });
    post.format = 'reel';
    post.permalink = `https://www.facebook.com/reel/${u.videoId}`;
    return lost(fake, { status: 200, body: { success: true } });
  }
  const post = addPost(fake, page, { media: [media] });
  post.format = 'story';
  post.mediaId = u.videoId;
  post.permalink = `https://www.facebook.com/stories/${page}/${post.id.split('_')[1]}/`;
  return lost(fake, { status: 200, body: { success: true, post_id: post.id } });
}

/** rupload.facebook.com/video-upload/<version>/<video_id>: the file by `file_url`, or its bytes. */
async function transfer(
  fake: FacebookFake,
  req: FakeRequest,
  videoId: string,
  tokenPage: string | undefined,
): Promise<FakeResponse> {
  const u = fake.uploads.find((x) => x.videoId === videoId);
  if (!u || (tokenPage && tokenPage !== u.page)) return ruploadError(400, `Unknown video id ${videoId}`);
  if (u.phase !== 'started') return ruploadError(400, 'The video has already been uploaded.');
  const fileUrl = req.headers.file_url;
  let got: Downloaded | null;
  if (fileUrl) {
    got = await download(fileUrl);
    if (!got) return ruploadError(400, `The file could not be fetched from ${fileUrl}`);
  } else {
    const size = Number(req.headers.file_size);
    if (req.headers.offset !== '0' || size !== req.body.length || !size)
      return ruploadError(400, 'offset 0 and file_size equal to the body length are required');
    got = { bytes: req.body, contentType: req.headers['content-type'] ?? '' };
  }
  u.phase = 'uploaded';
  u.fileUrl = fileUrl;
  u.media = got;
  if (!isVideoFile(got.bytes)) u.error = 'The file is not a video (MP4 or MOV).';
  return { status: 200, body: { success: true } };
}

/** POST /{page-id}/photo_stories photo_id: an unpublished photo of the Page becomes a story. */
function photoStory(fake: FacebookFake, page: string, params: URLSearchParams): FakeResponse {
  const id = params.get('photo_id') ?? '';
  const photo = fake.photos.get(id);
  if (!photo || photo.published)
    return graphErrorResponse(100, `(#100) param photo_id must be an unpublished photo of this Page.`);
  photo.published = true;
  const post = addPost(fake, page, { media: [photo.media] });
  post.format = 'story';
  post.mediaId = id;
  post.permalink = `https://www.facebook.com/stories/${page}/${post.id.split('_')[1]}/`;
  return lost(fake, { status: 200, body: { success: true, post_id: post.id } });
}
