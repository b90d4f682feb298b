import { metaAnswers } from './documented-errors.ts';
import {
  checkToken,
  type Downloaded,
  download,
  graphErrorResponse,
  graphId,
  graphParams,
  graphPath,
  graphTime,
  pageOf,
} from './facebook.ts';
import { seedTime } from './meta-inbox.ts';
import {
  type AuthorizeSpec,
  defaultAccount,
  errorPage,
  FakeOAuth,
  type FakeToken,
  type FakeUser,
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
  type InboxSeed,
} from './server.ts';

// Contract fake of the Threads API (graph.threads.net/v1.0): media containers
// (POST /{user-id}/threads), their processing status (GET /{container-id}?fields=status,error_message:
// IN_PROGRESS while Meta downloads the media, then FINISHED or ERROR; PUBLISHED after
// POST /{user-id}/threads_publish), the user's threads (GET /{user-id}/threads with since/until),
// replies (a container's reply_to_id, needing threads_manage_replies; a missing parent is Graph's
// code 100; GET /{user-id}/replies lists them with replied_to / root_post / is_reply),
// single media (GET /{media-id}?fields=…), insights, and GET /refresh_access_token. A TEXT container
// may carry a poll_attachment (the Polls guide), shown on the post as poll_attachment{…}.
//
// OAuth and profile (developers.facebook.com/docs/threads "Get Access Tokens", "Long-Lived Tokens"):
//   GET  /oauth/authorize          (threads.net) client_id, redirect_uri, scope comma-separated
//                                  (threads_basic,threads_content_publish,threads_manage_insights…),
//                                  response_type=code, state. Redirects carry `#_` after the code, as the
//                                  guide warns; a refusal redirects
//                                  error_reason=user_denied&error=access_denied&error_description=Permissions+error.
//   POST /oauth/access_token       client_id, client_secret, code, grant_type=authorization_code, redirect_uri
//                                  → {access_token, user_id} (short-lived: 1 hour; no token_type)
//   GET  /access_token             grant_type=th_exchange_token, client_secret, access_token (short-lived)
//                                  → {access_token, token_type: "bearer", expires_in: 5183944}
//   GET  /refresh_access_token     grant_type=th_refresh_token, access_token (long-lived) → the same shape;
//                                  the fake does not enforce the documented "at least 24 hours old"
//   GET  /v1.0/me?fields=id,username,name,threads_profile_picture_url,threads_biography
//   GET  /v1.0/me/threads_insights?metric=followers_count → {data: [{name, period: "day", title,
//                                  description, total_value: {value}, id}]} (needs threads_manage_insights)
//   GET  /v1.0/debug_token         input_token, access_token (a valid token, or the app's
//                                  TH|{app-id}|{app-secret}) → {data: {type: "USER", application,
//                                  is_valid, issued_at, expires_at, scopes, user_id}} ("Debug Access Token")
// There is no revoke endpoint (users remove the app in Threads' settings: the control API's revoke).
// Error answers (documented-errors.ts builds them; Threads documents none of its own): the code exchange
// answers Instagram-style, 400 {"error_type": "OAuthException", "code": 400, "error_message": "Matching
// code was not found or was already used"} (Instagram's reported wording; Threads unverified), and
// "Error validating client secret" for a bad secret — an assumption, as client libraries read them.
// user_id is sent as a string (libraries report both strings and numbers). Dead tokens answer Graph's code
// 190, subcode 458 (revoked) or 463 (expired), as graph.threads.net shares the Graph API's error handling
// (Graph API "Handling Errors"). Throttling is never produced on its own: inject
// documentedErrors.threads.throttled (Graph code 4, HTTP 403, X-App-Usage).
// A token issued through the flow needs threads_content_publish to create or publish containers (else
// (#10) Application does not have permission for this action).
// The inbox ("Retrieve Replies and Conversations", "Mentions"; seeded with `inbox(seed)` at the seed's
// time): replies by other people (`parent`: the post or reply answered, default the account's latest
// post, made if there is none) and their posts that mention the account. GET /{media-id}/replies lists
// a post's direct replies, GET /{media-id}/conversation every reply below it, newest first unless
// reverse=false (threads_read_replies); replies name their author by `username` and carry
// `is_reply_owned_by_me`; GET /{user-id}/mentions lists the mentions, with since/until
// (threads_manage_mentions). The account's own /threads and /replies list only its own posts;
// `has_replies` says whether a post has any.

export type ContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'ERROR' | 'EXPIRED' | 'PUBLISHED';

/** A post's poll as GET /{media-id}?fields=poll_attachment{…} answers it (the Polls guide). */
export interface FakeThreadsPoll {
  option_a: string;
  option_b: string;
  option_c?: string;
  option_d?: string;
  option_a_votes_percentage: number;
  option_b_votes_percentage: number;
  option_c_votes_percentage?: number;
  option_d_votes_percentage?: number;
  total_votes: number;
  expiration_timestamp: string;
}

export interface FakeThreadsContainer {
  id: string;
  mediaType: 'TEXT' | 'IMAGE' | 'VIDEO' | 'CAROUSEL';
  text?: string;
  url?: string;
  altText?: string;
  replyControl?: string;
  /** reply_to_id: the post this container's post will answer. */
  replyTo?: string;
  isCarouselItem: boolean;
  children: string[];
  /** poll_attachment as sent: the options by key. */
  poll?: Record<string, string>;
  status: ContainerStatus;
  errorMessage?: string;
  /** Status reads still answered IN_PROGRESS after the download finished. */
  pollsLeft: number;
  downloading: boolean;
  media?: Downloaded;
  mediaId?: string;
}

export interface FakeThreadsPost {
  id: string;
  mediaType: 'TEXT_POST' | 'IMAGE' | 'VIDEO' | 'CAROUSEL_ALBUM';
  text?: string;
  replyControl: string;
  /** A reply: the post it answers, and the thread's root post. */
  repliedTo?: string;
  rootPost?: string;
  /** Someone else's post (their username); absent: the account's own. */
  author?: string;
  /** Someone else's post that mentions the account. */
  mentions?: boolean;
  timestamp: number;
  permalink: string;
  containerId: string;
  /** Its poll (TEXT_POST only). */
  poll?: FakeThreadsPoll;
  media: Array<{
    type: 'IMAGE' | 'VIDEO';
    url: string;
    altText?: string;
    bytes: Buffer;
    contentType: string;
  }>;
}

export interface ThreadsFake extends FakePlatform {
  readonly oauth: FakeOAuth;
  userId: string;
  username: string;
  validTokens: Set<string>;
  expiredTokens: Set<string>;
  /** Tokens minted by GET /refresh_access_token, in order. */
  refreshed: string[];
  containers: Map<string, FakeThreadsContainer>;
  posts: FakeThreadsPost[];
  /** Status reads a new media container answers IN_PROGRESS (after its download). */
  processingPolls: number;
  insights: Map<
    string,
    Partial<Record<'views' | 'likes' | 'replies' | 'reposts' | 'quotes' | 'shares', number>>
  >;
  /** Publish the next container but answer 500, as if the connection died after Meta acted. */
  loseNextPublishResponse: boolean;
  inbox(seed: InboxSeed): { platform_id: string };
}

const METRICS = new Set(['views', 'likes', 'replies', 'reposts', 'quotes', 'shares']);
const REPLY_CONTROL = new Set([
  'everyone',
  'accounts_you_follow',
  'mentioned_only',
  'parent_post_author_only',
  'followers_only',
]);

const AUTHORIZE: AuthorizeSpec = {
  separator: /,+/,
  knownScope: (s) => /^threads_[a-z_]+$/.test(s),
  publishes: (s) => s === 'threads_content_publish',
  pkce: 'optional',
  defaultScopes: null,
  denied: { error_reason: 'user_denied', error: 'access_denied', error_description: 'Permissions error' },
  fragment: '_',
  page: (status, problem) =>
    errorPage(
      status,
      'Invalid Request',
      problem === 'client' ? 'Invalid platform app' : 'Invalid redirect_uri',
    ),
};

const SHORT_TTL = 3600;
const LONG_TTL = 5183944;

export function createFake(): ThreadsFake {
  const fake: ThreadsFake = {
    name: 'threads',
    oauth: new FakeOAuth({
      platform: 'threads',
      prefixes: { access: 'THAA', code: 'AQ' },
      defaultUser: () =>
        defaultAccount({
          id: '17841400000000001',
          username: 'herald_test',
          displayName: 'Herald Test',
          followers: 2750,
          following: 0,
          posts: 0,
        }),
      makeUser: (name) =>
        namedAccount(name, `1784${hashDigits(name, 13, 'threads')}`, {
          following: hashNumber(name, 900, 'following'),
        }),
    }),
    userId: '17841400000000001',
    username: 'herald_test',
    validTokens: new Set(['token']),
    expiredTokens: new Set(),
    refreshed: [],
    containers: new Map(),
    posts: [],
    processingPolls: 0,
    insights: new Map(),
    loseNextPublishResponse: false,
    inbox: (seed) => seedInbox(fake, seed),
    reset() {
      fake.oauth.reset();
      fake.validTokens = new Set(['token']);
      fake.expiredTokens = new Set();
      fake.refreshed = [];
      fake.containers = new Map();
      fake.posts = [];
      fake.processingPolls = 0;
      fake.insights = new Map();
      fake.loseNextPublishResponse = false;
    },
    handle: (req, ctx) => handle(fake, req, ctx),
  };
  return fake;
}

const param = (code: number, message: string, subcode?: number) =>
  graphErrorResponse(code, message, { type: 'THApiException', subcode });

/** Instagram-style OAuth error of the code exchange. */
const igError = metaAnswers.igOAuth;

function codeExchange(fake: ThreadsFake, params: URLSearchParams): FakeResponse {
  const clientId = params.get('client_id') ?? '';
  const client = fake.oauth.checkClient(clientId, params.get('client_secret'));
  if (client === 'unknown') return igError('Invalid platform app');
  if (client === 'secret') return igError('Error validating client secret');
  if (params.get('grant_type') !== 'authorization_code') return igError('Unsupported grant type');
  if (!params.get('redirect_uri')) return igError('Missing required field redirect_uri');
  if (!params.get('code')) return igError('Missing required field code');
  const r = fake.oauth.redeem(params.get('code') ?? '', {
    clientId,
    redirectUri: params.get('redirect_uri'),
    verifier: params.get('code_verifier'),
  });
  if (!r.ok)
    return igError(
      r.reason === 'redirect'
        ? 'Error validating verification code. Please make sure your redirect_uri is identical to the one you used in the OAuth dialog request'
        : 'Matching code was not found or was already used',
    );
  const t = fake.oauth.issue(r.grant, 'access', SHORT_TTL, { longLived: false });
  return { status: 200, body: { access_token: t.token, user_id: r.grant.user.id } };
}

/** Graph's answer for a token the user revoked (190/458) or that expired (190/463). */
function deadToken(t: FakeToken, state: 'revoked' | 'expired'): FakeResponse {
  return metaAnswers.token(state, t.grant.clientId, t.expiresAt ?? 0, false);
}

function longLived(fake: ThreadsFake, params: URLSearchParams, kind: 'exchange' | 'refresh'): FakeResponse {
  const c = fake.oauth.check(params.get('access_token'));
  if (c.state === 'unknown')
    return graphErrorResponse(190, 'Invalid OAuth access token - Cannot parse access token');
  if (c.state !== 'valid') return deadToken(c.token, c.state);
  if (kind === 'exchange') {
    if (params.get('grant_type') !== 'th_exchange_token')
      return graphErrorResponse(100, 'Invalid grant_type; expected th_exchange_token');
    const app = fake.oauth.apps.get(c.token.grant.clientId);
    if (!app || params.get('client_secret') !== app.secret)
      return graphErrorResponse(1, 'Error validating client secret.');
    if (c.token.meta.longLived)
      return graphErrorResponse(100, 'The access token is already a long-lived token.');
  } else if (!c.token.meta.longLived) {
    return graphErrorResponse(190, 'Error validating access token: a short-lived token cannot be refreshed.');
  }
  fake.oauth.countRefresh();
  const t = fake.oauth.issue(c.token.grant, 'access', LONG_TTL, { longLived: true });
  if (kind === 'refresh') fake.refreshed.push(t.token);
  return {
    status: 200,
    body: { access_token: t.token, token_type: 'bearer', expires_in: fake.oauth.expiresIn(t) ?? LONG_TTL },
  };
}

function profile(ctx: FakeContext, user: FakeUser, params: URLSearchParams) {
  const all: Record<string, unknown> = {
    id: user.id,
    username: user.username,
    name: user.displayName,
    threads_profile_picture_url: `${ctx.base}${user.avatarPath}`,
    threads_biography: '',
    is_verified: false,
  };
  const wanted = (params.get('fields') ?? 'id').split(',').map((f) => f.trim());
  return { status: 200, body: Object.fromEntries(wanted.filter((f) => f in all).map((f) => [f, all[f]])) };
}

function userInsights(user: FakeUser, params: URLSearchParams): FakeResponse {
  const metrics = (params.get('metric') ?? '').split(',').filter(Boolean);
  const known = ['followers_count', 'views', 'likes', 'replies', 'reposts', 'quotes', 'clicks'];
  if (!metrics.length || metrics.some((m) => !known.includes(m)))
    return param(100, `Param metric must be one of ${known.join(', ')}`);
  return {
    status: 200,
    body: {
      data: metrics.map((name) => ({
        name,
        period: 'day',
        title: name,
        description:
          name === 'followers_count'
            ? 'This is the number of followers on your profile.'
            : `The number of ${name}.`,
        total_value: { value: name === 'followers_count' ? user.followers : 0 },
        id: `${user.id}/insights/${name}/day`,
      })),
    },
  };
}

async function handle(fake: ThreadsFake, req: FakeRequest, ctx: FakeContext): Promise<FakeResponse> {
  const params = graphParams(req);
  const avatar = serveAvatar(req);
  if (avatar) return avatar;
  const [node, edge, extra] = graphPath(req);
  if (node === 'oauth' && edge === 'authorize' && req.method === 'GET')
    return fake.oauth.authorize(req, AUTHORIZE);
  if (node === 'oauth' && edge === 'access_token' && req.method === 'POST') return codeExchange(fake, params);
  if (node === 'access_token' && !edge && req.method === 'GET') return longLived(fake, params, 'exchange');
  if (node === 'refresh_access_token' && req.method === 'GET') {
    if (fake.oauth.find(params.get('access_token'))) return longLived(fake, params, 'refresh');
    return refresh(fake, params);
  }

  if (node === 'debug_token' && !edge && req.method === 'GET') {
    // Inspected by a valid token of the fake, or by the app's token TH|{app-id}|{app-secret}.
    const [th, appId, secret] = (params.get('access_token') ?? '').split('|');
    const byApp = th === 'TH' && fake.oauth.checkClient(appId, secret) === 'ok';
    if (!byApp && fake.oauth.check(params.get('access_token')).state !== 'valid')
      return param(190, 'Invalid OAuth access token - Cannot parse access token');
    const inspected = fake.oauth.find(params.get('input_token'));
    if (!inspected) return param(190, 'Invalid OAuth access token - Cannot parse access token');
    const at = (ms: number | null | undefined) => (ms ? Math.floor(ms / 1000) : 0);
    return {
      status: 200,
      body: {
        data: {
          type: 'USER',
          application: 'Herald',
          is_valid: fake.oauth.check(inspected.token).state === 'valid',
          issued_at: at(inspected.grant.createdAt),
          expires_at: at(inspected.expiresAt),
          scopes: inspected.grant.scopes,
          user_id: inspected.grant.user.id,
        },
      },
    };
  }
  const issued = fake.oauth.check(params.get('access_token') ?? bearer(req));
  if (issued.state === 'revoked' || issued.state === 'expired') return deadToken(issued.token, issued.state);
  if (issued.state === 'unknown') {
    const denied = checkToken(req, params, fake.validTokens, fake.expiredTokens);
    if (denied) return denied;
  }
  const me = issued.state === 'valid' ? issued.token.grant.user : fake.oauth.user();
  const lacks = (scope: string) =>
    issued.state === 'valid' && !issued.token.grant.scopes.includes(scope)
      ? param(10, '(#10) Application does not have permission for this action')
      : null;
  if (!node || extra) return param(100, `Unknown path components: ${req.path}`);
  const isUser = node === fake.userId || node === 'me' || node === me.id;
  if (isUser && !edge && req.method === 'GET') return lacks('threads_basic') ?? profile(ctx, me, params);
  if (isUser && edge === 'threads_insights' && req.method === 'GET')
    return lacks('threads_manage_insights') ?? userInsights(me, params);
  if (isUser && (edge === 'threads' || edge === 'threads_publish') && req.method === 'POST') {
    const denied = lacks('threads_content_publish');
    if (denied) return denied;
  }

  if (isUser && edge === 'threads' && req.method === 'POST' && params.get('reply_to_id')) {
    // Replying needs threads_manage_replies (Threads API "Reply Management").
    const denied = lacks('threads_manage_replies');
    if (denied) return denied;
  }
  if (isUser && edge === 'threads' && req.method === 'POST') return createContainer(fake, params);
  if (isUser && edge === 'threads_publish' && req.method === 'POST') return publish(fake, params);
  if (isUser && (edge === 'threads' || edge === 'replies') && req.method === 'GET') {
    // The account's threads are its top-level posts; its replies are listed apart.
    const listed = fake.posts.filter(
      (p) => !p.author && (edge === 'replies') === (p.repliedTo !== undefined),
    );
    const rows = listed.map((p) => ({ _t: p.timestamp, ...fields(fake, p, params) }));
    const page = pageOf(rows, (r) => r._t, params);
    return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
  }
  if (isUser && edge === 'mentions' && req.method === 'GET') {
    const denied = lacks('threads_manage_mentions');
    if (denied) return denied;
    const rows = fake.posts
      .filter((p) => p.mentions)
      .map((p) => ({ _t: p.timestamp, ...fields(fake, p, params) }));
    const page = pageOf(rows, (r) => r._t, params);
    return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
  }
  if (
    (edge === 'replies' || edge === 'conversation') &&
    req.method === 'GET' &&
    fake.posts.some((p) => p.id === node)
  ) {
    const denied = lacks('threads_read_replies');
    if (denied) return denied;
    const below =
      edge === 'replies' ? fake.posts.filter((p) => p.repliedTo === node) : descendants(fake, node);
    // Newest first unless reverse=false (chronological): paged on the negated time.
    const newest = params.get('reverse') !== 'false';
    const rows = below.map((p) => ({ _t: p.timestamp, ...fields(fake, p, params) }));
    const page = pageOf(
      rows,
      (r) => (newest ? r._t : -r._t),
      new URLSearchParams({
        ...(params.get('limit') ? { limit: params.get('limit') as string } : {}),
        ...(params.get('after') ? { after: params.get('after') as string } : {}),
      }),
    );
    return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
  }
  if (!edge && req.method === 'GET') {
    const container = fake.containers.get(node);
    if (container) return { status: 200, body: containerFields(container, params) };
    const post = fake.posts.find((p) => p.id === node);
    if (post) return { status: 200, body: fields(fake, post, params) };
  }
  if (edge === 'insights' && req.method === 'GET') {
    const post = fake.posts.find((p) => p.id === node);
    if (post) return insights(fake, post.id, params);
  }
  // DELETE /{threads-media-id} (docs "Delete Posts", scope threads_delete): {"success": true,
  // "deleted_id"}; the post is gone, so a second delete falls through to the 100/33 below.
  if (!edge && req.method === 'DELETE') {
    const denied = lacks('threads_delete');
    if (denied) return denied;
    const i = fake.posts.findIndex((p) => p.id === node);
    if (i >= 0) {
      fake.posts.splice(i, 1);
      return { status: 200, body: { success: true, deleted_id: node } };
    }
  }
  return param(
    100,
    `Unsupported ${req.method.toLowerCase()} request. Object with ID '${node}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
    33,
  );
}

function refresh(fake: ThreadsFake, params: URLSearchParams): FakeResponse {
  if (params.get('grant_type') !== 'th_refresh_token') {
    return graphErrorResponse(100, 'Invalid grant_type; expected th_refresh_token');
  }
  const token = params.get('access_token');
  if (!token || !fake.validTokens.has(token)) {
    return graphErrorResponse(190, 'Invalid OAuth access token - Cannot parse access token');
  }
  const fresh = `threads-refreshed-${fake.refreshed.length + 1}`;
  fake.refreshed.push(fresh);
  fake.validTokens.add(fresh);
  return { status: 200, body: { access_token: fresh, token_type: 'bearer', expires_in: 5_183_944 } };
}

const POLL_KEYS = ['option_a', 'option_b', 'option_c', 'option_d'];

/**
 * A container's poll_attachment (the Polls guide: a JSON object of option_a, option_b and optional
 * option_c, option_d, each 1–25 characters; text-only posts only), or why it is refused. The
 * guide states the rules, not the error wording: the messages are the fake's, as Graph code 100.
 */
function pollAttachment(raw: string | null, mediaType: string): Record<string, string> | string | undefined {
  if (raw === null) return undefined;
  if (mediaType !== 'TEXT') return 'Param poll_attachment is only supported for media_type=TEXT';
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return 'Param poll_attachment must be a JSON object';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return 'Param poll_attachment must be a JSON object';
  const o = parsed as Record<string, unknown>;
  const unknown = Object.keys(o).find((k) => !POLL_KEYS.includes(k));
  if (unknown) return `Param poll_attachment has an unknown key ${unknown}`;
  const keys = POLL_KEYS.filter((k) => k in o);
  // Options fill a, b, then c, then d: no gap.
  if (keys.length < 2 || keys.some((k, i) => k !== POLL_KEYS[i]))
    return 'Param poll_attachment must contain at least 2 options (option_a, option_b) and no more than 4';
  for (const k of keys) {
    const v = o[k];
    if (typeof v !== 'string' || [...v].length < 1 || [...v].length > 25)
      return `Param poll_attachment.${k} must be between 1 and 25 characters long`;
  }
  return Object.fromEntries(keys.map((k) => [k, String(o[k])]));
}

async function createContainer(fake: ThreadsFake, params: URLSearchParams): Promise<FakeResponse> {
  const mediaType = params.get('media_type');
  if (mediaType !== 'TEXT' && mediaType !== 'IMAGE' && mediaType !== 'VIDEO' && mediaType !== 'CAROUSEL') {
    return param(100, 'Param media_type must be one of {TEXT, IMAGE, VIDEO, CAROUSEL}');
  }
  const text = params.get('text') ?? undefined;
  // Threads counts up to 500 characters (emoji by their UTF-8 byte count; code points are close enough here).
  if (text && [...text].length > 500) return param(100, 'Param text must be at most 500 characters long.');
  if (mediaType === 'TEXT' && !text) return param(100, 'Param text is required for media_type=TEXT');
  const replyControl = params.get('reply_control') ?? undefined;
  if (replyControl && !REPLY_CONTROL.has(replyControl)) return param(100, 'Param reply_control is invalid');
  const altText = params.get('alt_text') ?? undefined;
  if (altText && altText.length > 1000)
    return param(100, 'Param alt_text must be at most 1000 characters long.');
  const replyTo = params.get('reply_to_id') ?? undefined;
  if (replyTo && !fake.posts.some((p) => p.id === replyTo))
    return param(100, `Param reply_to_id must be the id of a Threads media object you can reply to`);
  const poll = pollAttachment(params.get('poll_attachment'), mediaType);
  if (typeof poll === 'string') return param(100, poll);
  const isCarouselItem = params.get('is_carousel_item') === 'true';
  const url =
    mediaType === 'IMAGE' ? params.get('image_url') : mediaType === 'VIDEO' ? params.get('video_url') : null;
  if ((mediaType === 'IMAGE' || mediaType === 'VIDEO') && !url) {
    return param(
      100,
      `Param ${mediaType === 'IMAGE' ? 'image_url' : 'video_url'} is required for media_type=${mediaType}`,
    );
  }
  const children = (params.get('children') ?? '').split(',').filter(Boolean);
  if (mediaType === 'CAROUSEL') {
    if (children.length < 2 || children.length > 20) return param(100, 'A carousel needs 2 to 20 children');
    for (const id of children) {
      const child = fake.containers.get(id);
      if (!child?.isCarouselItem) return param(100, `Param children: ${id} is not a carousel item container`);
      if (child.status !== 'FINISHED') return param(24, `Carousel item ${id} is not ready`, 4279009);
    }
  }
  const container: FakeThreadsContainer = {
    id: graphId('1790'),
    mediaType,
    text,
    url: url ?? undefined,
    altText,
    replyControl,
    replyTo,
    isCarouselItem,
    children,
    ...(poll ? { poll } : {}),
    status: 'IN_PROGRESS',
    pollsLeft: fake.processingPolls,
    downloading: Boolean(url),
  };
  fake.containers.set(container.id, container);
  if (url) {
    // Meta downloads the media after answering; the container stays IN_PROGRESS meanwhile.
    void download(url).then((got) => {
      container.downloading = false;
      if (got) container.media = got;
      else {
        container.status = 'ERROR';
        container.errorMessage = mediaType === 'VIDEO' ? 'FAILED_DOWNLOADING_VIDEO' : 'UNKNOWN';
      }
    });
  }
  return { status: 200, body: { id: container.id } };
}

function currentStatus(c: FakeThreadsContainer): ContainerStatus {
  if (c.status !== 'IN_PROGRESS' || c.downloading) return c.status;
  if (c.pollsLeft > 0) {
    c.pollsLeft--;
    return 'IN_PROGRESS';
  }
  c.status = 'FINISHED';
  return c.status;
}

function containerFields(c: FakeThreadsContainer, params: URLSearchParams) {
  const wanted = (params.get('fields') ?? 'id').split(',');
  const status = currentStatus(c);
  return {
    id: c.id,
    ...(wanted.includes('status') ? { status } : {}),
    ...(wanted.includes('error_message') && c.errorMessage ? { error_message: c.errorMessage } : {}),
  };
}

function publish(fake: ThreadsFake, params: URLSearchParams): FakeResponse {
  const id = params.get('creation_id');
  const container = id ? fake.containers.get(id) : undefined;
  if (!container || container.isCarouselItem)
    return param(100, 'Param creation_id is not a publishable container', 4279009);
  if (container.status === 'PUBLISHED') return param(24, 'The container has already been published', 4279009);
  if (currentStatus(container) !== 'FINISHED') {
    return param(24, 'The media is not ready to be published. Please wait a moment.', 4279009);
  }
  const items =
    container.mediaType === 'CAROUSEL'
      ? container.children
          .map((c) => fake.containers.get(c))
          .filter((c): c is FakeThreadsContainer => Boolean(c))
      : container.mediaType === 'TEXT'
        ? []
        : [container];
  const post: FakeThreadsPost = {
    id: graphId('1791'),
    mediaType:
      container.mediaType === 'TEXT'
        ? 'TEXT_POST'
        : container.mediaType === 'CAROUSEL'
          ? 'CAROUSEL_ALBUM'
          : container.mediaType,
    text: container.text,
    replyControl: container.replyControl ?? 'everyone',
    ...(container.replyTo
      ? {
          repliedTo: container.replyTo,
          rootPost: fake.posts.find((p) => p.id === container.replyTo)?.rootPost ?? container.replyTo,
        }
      : {}),
    timestamp: Date.now(),
    permalink: '',
    containerId: container.id,
    ...(container.poll ? { poll: openPoll(container.poll) } : {}),
    media: items.map((c) => ({
      type: c.mediaType === 'VIDEO' ? 'VIDEO' : 'IMAGE',
      url: c.url ?? '',
      altText: c.altText,
      bytes: c.media?.bytes ?? Buffer.alloc(0),
      contentType: c.media?.contentType ?? '',
    })),
  };
  post.permalink = `https://www.threads.net/@${fake.username}/post/${post.id.slice(-8)}`;
  fake.posts.push(post);
  container.status = 'PUBLISHED';
  container.mediaId = post.id;
  if (fake.loseNextPublishResponse) {
    fake.loseNextPublishResponse = false;
    return graphErrorResponse(2, 'Service temporarily unavailable', { status: 500, type: 'THApiException' });
  }
  return { status: 200, body: { id: post.id } };
}

/** A published poll: no votes yet, open for 24 hours. */
function openPoll(options: Record<string, string>): FakeThreadsPoll {
  const poll: Record<string, unknown> = { ...options, total_votes: 0 };
  for (const k of Object.keys(options)) poll[`${k}_votes_percentage`] = 0;
  poll.expiration_timestamp = graphTime(Date.now() + 24 * 3600_000);
  return poll as unknown as FakeThreadsPoll;
}

function fields(fake: ThreadsFake, p: FakeThreadsPost, params: URLSearchParams): Record<string, unknown> {
  const row: Record<string, unknown> = { id: p.id };
  for (const f of (params.get('fields') ?? 'id').split(',')) {
    if (f === 'text' && p.text !== undefined) row.text = p.text;
    if (f === 'timestamp') row.timestamp = graphTime(p.timestamp);
    if (f === 'permalink') row.permalink = p.permalink;
    if (f === 'media_type') row.media_type = p.mediaType;
    if (f === 'media_product_type') row.media_product_type = 'THREADS';
    if (f === 'username') row.username = p.author ?? fake.username;
    if (f === 'is_reply_owned_by_me' && p.repliedTo) row.is_reply_owned_by_me = !p.author;
    if (f === 'has_replies') row.has_replies = fake.posts.some((r) => r.repliedTo === p.id);
    if (f === 'is_reply') row.is_reply = p.repliedTo !== undefined;
    if (f === 'replied_to' && p.repliedTo) row.replied_to = { id: p.repliedTo };
    if (f === 'root_post' && p.rootPost) row.root_post = { id: p.rootPost };
    // `poll_attachment` or `poll_attachment{option_a,…}`: the whole object either way.
    if (f.startsWith('poll_attachment') && p.poll) row.poll_attachment = p.poll;
  }
  return row;
}

function insights(fake: ThreadsFake, id: string, params: URLSearchParams): FakeResponse {
  const metrics = (params.get('metric') ?? '').split(',').filter(Boolean);
  if (!metrics.length || metrics.some((m) => !METRICS.has(m))) {
    return param(
      100,
      'Param metric must be a comma-separated list of views, likes, replies, reposts, quotes, shares',
    );
  }
  const values = fake.insights.get(id) ?? {};
  return {
    status: 200,
    body: {
      data: metrics.map((name) => ({
        name,
        period: 'lifetime',
        values: [{ value: values[name as keyof typeof values] ?? 0 }],
        title: name,
        description: name,
        id: `${id}/insights/${name}/lifetime`,
      })),
    },
  };
}

/** Every reply below a post, at any depth. */
function descendants(fake: ThreadsFake, id: string): FakeThreadsPost[] {
  const out: FakeThreadsPost[] = [];
  let frontier = [id];
  while (frontier.length) {
    const next = fake.posts.filter((p) => p.repliedTo && frontier.includes(p.repliedTo));
    out.push(...next);
    frontier = next.map((p) => p.id);
  }
  return out;
}

/** Someone replies to the account's post (or a reply under it), or mentions the account. */
function seedInbox(fake: ThreadsFake, seed: InboxSeed): { platform_id: string } {
  const at = seedTime(seed);
  const author = seed.author?.handle ?? 'grace_h';
  let parent = seed.parent ? fake.posts.find((p) => p.id === seed.parent) : undefined;
  if (!parent && seed.kind === 'comment') {
    parent = fake.posts.filter((p) => !p.author && !p.repliedTo).at(-1);
    if (!parent) {
      parent = {
        id: graphId('1791'),
        mediaType: 'TEXT_POST',
        text: 'Hello from Herald',
        replyControl: 'everyone',
        timestamp: Math.min(at, Date.now()) - 3600_000,
        permalink: '',
        containerId: '',
        media: [],
      };
      parent.permalink = `https://www.threads.net/@${fake.username}/post/${parent.id.slice(-8)}`;
      fake.posts.push(parent);
    }
  }
  const post: FakeThreadsPost = {
    id: graphId('1791'),
    mediaType: 'TEXT_POST',
    text: seed.text,
    replyControl: 'everyone',
    ...(parent ? { repliedTo: parent.id, rootPost: parent.rootPost ?? parent.id } : {}),
    author,
    ...(seed.kind === 'mention' ? { mentions: true } : {}),
    timestamp: at,
    permalink: '',
    containerId: '',
    media: [],
  };
  post.permalink = `https://www.threads.net/@${author}/post/${post.id.slice(-8)}`;
  fake.posts.push(post);
  return { platform_id: post.id };
}
