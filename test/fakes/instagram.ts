import { imageSize } from 'image-size';
import {
  checkToken,
  type Downloaded,
  download,
  graphErrorResponse,
  graphId,
  graphParams,
  graphPath,
  graphTime,
  isJpeg,
  pageOf,
} from './facebook.ts';
import { FacebookLogin, userPages } from './facebook-login.ts';
import { FakeConversations, type FieldSpec, fieldSpecs, modParams, seedTime } from './meta-inbox.ts';
import { defaultAccount, type FakeOAuth, hashDigits, namedAccount, serveAvatar } from './oauth.ts';
import type { FakeContext, FakePlatform, FakeRequest, FakeResponse, InboxSeed } from './server.ts';

// Contract fake of Instagram content publishing (Instagram API with Facebook Login, graph.facebook.com):
// POST /{ig-user-id}/media creates containers (image_url; media_type=REELS + video_url; VIDEO items and
// CAROUSEL parents), GET /{container-id}?fields=status_code,status reports processing
// (IN_PROGRESS → FINISHED | ERROR; PUBLISHED after POST /{ig-user-id}/media_publish), plus the
// account's media list (since/until), single media reads, insights, and the documented error codes
// (9004/2207052 fetch failure, 36001/2207005 format, 36000/2207004 image over 8 MiB, 36003/2207009
// aspect ratio outside 4:5–1.91:1, 9007/2207027 not ready, 9/2207042 publish limit).
// Stories: media_type=STORIES with image_url or video_url (the reference lists no caption for them:
// a caption sent is dropped, as the story has none); published stories are listed on
// GET /{ig-user-id}/stories, not on the media edge. Reels: media_type=REELS with video_url (an
// image_url alone is refused), share_to_feed kept; a video URL whose bytes are not an MP4/MOV
// container ends the container in ERROR with 2207026 (the video format is not supported).
// Facebook Login (dialog, code and long-lived token exchange, /me, /me/permissions, /me/accounts with
// instagram_business_account{id,username,profile_picture_url,followers_count}) is served under this fake's
// prefix as test/fakes/facebook-login.ts describes. The default user manages two Pages; the first is linked
// to `igUserId`, the account the publishing endpoints act for; a fake_user's first Page is linked to an
// Instagram account of its own, which the publishing endpoints serve too. A token issued through the login
// needs instagram_content_publish to create containers or publish (else (#10), as Graph answers). Token
// errors are Facebook Login's (facebook-login.ts); throttling (Graph codes 4/17/613, Business Use Case
// 80002 with X-Business-Use-Case-Usage, HTTP 400/403) is never produced on its own: inject
// documentedErrors.instagram.throttled or its variants (documented-errors.ts).
// Comments (IG Media comments reference): POST /{ig-media-id}/comments?message=… answers {"id"} and
// needs instagram_manage_comments on a login token (else (#10), HTTP 403; the legacy test tokens in
// `tokensWithoutComments` lack it too); a media id the account does not have answers code 100 /
// subcode 33; GET /{ig-media-id}/comments lists them (id, text, timestamp, from{id,username},
// username), newest first. Comments made are kept in `comments` for tests to assert.
// The inbox (seeded with `inbox(seed)`, at the seed's time): comments by other people on the
// account's media (`parent`: the media, or the comment a reply answers; default the latest media,
// made if there is none); the comments edge lists top-level comments, each with `replies{…}` when
// asked (IG Comment Replies; replies carry `parent_id`), and GET|POST /{ig-comment-id}/replies lists
// and makes replies (a reply to a reply lands under its top-level comment, as the reference says;
// instagram_manage_comments). The media edge embeds comments when asked
// (`comments.limit(n){…,replies{…}}`). Mentions are media others tagged the account in:
// GET /{ig-user-id}/tags (id, caption, timestamp, permalink, username, newest first). Messages: the
// Page's Instagram conversations (platform=instagram) and the Send API as meta-inbox.ts describes,
// read through `me` (the Page of the Page token) and needing instagram_manage_messages on login
// tokens (else (#10), HTTP 403); the 24-hour window's refusal carries subcode 2534022.

export type ContainerStatus = 'IN_PROGRESS' | 'FINISHED' | 'ERROR' | 'EXPIRED' | 'PUBLISHED';

export interface FakeIgContainer {
  id: string;
  kind: 'IMAGE' | 'REELS' | 'VIDEO' | 'CAROUSEL' | 'STORIES';
  url?: string;
  /** A story's: image_url or video_url. */
  storyOf?: 'IMAGE' | 'VIDEO';
  /** A reel's share_to_feed (shown in the feed as well as in Reels). */
  shareToFeed?: boolean;
  caption?: string;
  altText?: string;
  isCarouselItem: boolean;
  children: string[];
  status: ContainerStatus;
  statusText?: string;
  pollsLeft: number;
  downloading: boolean;
  media?: Downloaded;
}

export interface FakeIgMedia {
  id: string;
  mediaType: 'IMAGE' | 'VIDEO' | 'CAROUSEL_ALBUM';
  productType: 'FEED' | 'REELS' | 'STORY';
  /** A reel shown in the feed too (share_to_feed). */
  shareToFeed?: boolean;
  caption?: string;
  timestamp: number;
  permalink: string;
  containerId: string;
  items: Array<{
    kind: 'IMAGE' | 'VIDEO';
    url: string;
    altText?: string;
    bytes: Buffer;
    contentType: string;
  }>;
}

export interface FakeIgComment {
  id: string;
  mediaId: string;
  text: string;
  timestamp: number;
  from: { id: string; username: string };
  /** A reply: the top-level comment it is under. */
  parentId?: string;
}

/** A media of someone else's that tags the account (GET /{ig-user-id}/tags). */
export interface FakeIgTag {
  id: string;
  caption: string;
  timestamp: number;
  permalink: string;
  username: string;
}

export interface InstagramFake extends FakePlatform {
  readonly oauth: FakeOAuth;
  readonly login: FacebookLogin;
  igUserId: string;
  validTokens: Set<string>;
  expiredTokens: Set<string>;
  containers: Map<string, FakeIgContainer>;
  media: FakeIgMedia[];
  processingPolls: number;
  /** Posts the account may publish through the API per 24 hours. */
  publishLimit: number;
  insights: Map<string, Partial<Record<string, number>>>;
  loseNextPublishResponse: boolean;
  comments: FakeIgComment[];
  /** Legacy test tokens whose grant lacks instagram_manage_comments. */
  tokensWithoutComments: Set<string>;
  /** The next comment is made but its answer is lost (HTTP 500). */
  loseNextCommentResponse: boolean;
  tags: FakeIgTag[];
  /** The Page's Instagram conversations. */
  conversations: FakeConversations;
  inbox(seed: InboxSeed): { platform_id: string };
  /** The published media and the containers, as the control API's state shows them. */
  readonly posts: FakeIgMedia[];
  readonly uploads: FakeIgContainer[];
}

const METRICS = new Set(['views', 'reach', 'likes', 'comments', 'shares', 'saved', 'total_interactions']);
const DEPRECATED = new Set(['impressions', 'plays', 'video_views', 'clips_replays_count']);

export function createFake(): InstagramFake {
  const login: FacebookLogin = new FacebookLogin({
    platform: 'instagram',
    defaultUser: () =>
      defaultAccount({
        id: '10160000000000011',
        username: 'ada.acme',
        displayName: 'Ada Acme',
        followers: 0,
        following: 0,
        posts: 0,
      }),
    makeUser: (name) => namedAccount(name, `1016${hashDigits(name, 13, 'iguser')}`),
    pagesOf: (user) =>
      user.isDefault
        ? [
            {
              id: '104857600000011',
              name: 'Acme',
              category: 'Software',
              followers: 4200,
              fans: 4105,
              ig: { id: fake.igUserId, username: 'acme', name: 'Acme', followers: 12850, media: 214 },
            },
            {
              id: '104857600000012',
              name: 'Acme Outlet',
              category: 'Shopping & retail',
              followers: 310,
              fans: 298,
            },
          ]
        : userPages(user, true),
  });
  const fake: InstagramFake = {
    name: 'instagram',
    oauth: login.oauth,
    login,
    igUserId: '17841405822304914',
    validTokens: new Set(['token']),
    expiredTokens: new Set(),
    containers: new Map(),
    media: [],
    processingPolls: 0,
    publishLimit: 50,
    insights: new Map(),
    loseNextPublishResponse: false,
    comments: [],
    tokensWithoutComments: new Set(),
    loseNextCommentResponse: false,
    tags: [],
    conversations: new FakeConversations('instagram', 2534022),
    inbox: (seed) => seedInbox(fake, seed),
    get posts() {
      return fake.media;
    },
    get uploads() {
      return [...fake.containers.values()];
    },
    reset() {
      login.reset();
      fake.validTokens = new Set(['token']);
      fake.expiredTokens = new Set();
      fake.containers = new Map();
      fake.media = [];
      fake.processingPolls = 0;
      fake.publishLimit = 50;
      fake.insights = new Map();
      fake.loseNextPublishResponse = false;
      fake.comments = [];
      fake.tokensWithoutComments = new Set();
      fake.loseNextCommentResponse = false;
      fake.tags = [];
      fake.conversations.reset();
    },
    handle: (req, ctx) => handle(fake, req, ctx),
  };
  return fake;
}

const notFound = (method: string, id: string) =>
  graphErrorResponse(
    100,
    `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
    { subcode: 33, type: 'GraphMethodException' },
  );

async function handle(fake: InstagramFake, req: FakeRequest, ctx: FakeContext): Promise<FakeResponse> {
  const params = graphParams(req);
  const avatar = serveAvatar(req);
  if (avatar) return avatar;
  const segs = graphPath(req);
  const oauth = fake.login.handleOAuth(req, params, segs);
  if (oauth) return oauth;
  const who = fake.login.authenticate(req, params);
  if (who && 'status' in who) return who;
  if (!who) {
    const denied = checkToken(req, params, fake.validTokens, fake.expiredTokens);
    if (denied) return denied;
  }
  if (who) {
    const account = fake.login.handleAccount(req, ctx, params, segs, who);
    if (account) return account;
  }
  const [rawNode, edge, extra] = segs;
  if (!rawNode || extra) return graphErrorResponse(2500, `Unknown path components: ${req.path}`);
  // With a Page token `me` is the Page (whose conversations include its Instagram account's).
  const pageId = who?.page?.id ?? DEFAULT_PAGE;
  const node = rawNode === 'me' ? pageId : rawNode;
  const scopes = who?.token.grant.scopes;
  const igAccount = who?.page?.ig ?? { id: fake.igUserId, username: 'acme' };
  const convs = fake.conversations.handle(req, params, node, edge, {
    accountId: pageId,
    self: { id: igAccount.id, username: igAccount.username },
    granted: !scopes || scopes.includes('instagram_manage_messages'),
    denied: graphErrorResponse(10, '(#10) Application does not have permission for this action', {
      status: 403,
    }),
  });
  if (convs) return convs;
  const canComment = !scopes || scopes.includes('instagram_manage_comments');

  if (node === fake.igUserId || fake.login.igIds().has(node)) {
    if (who && req.method === 'POST' && (edge === 'media' || edge === 'media_publish')) {
      if (!who.token.grant.scopes.includes('instagram_content_publish'))
        return graphErrorResponse(10, '(#10) Application does not have permission for this action', {
          status: 403,
        });
    }
    if (edge === 'media' && req.method === 'POST') return createContainer(fake, params);
    if (edge === 'media_publish' && req.method === 'POST') return publish(fake, params);
    if (edge === 'tags' && req.method === 'GET') {
      if (!canComment)
        return graphErrorResponse(10, '(#10) Application does not have permission for this action', {
          status: 403,
        });
      const rows = fake.tags.map((t) => ({ _t: t.timestamp, ...tagFields(t, params) }));
      const page = pageOf(rows, (r) => r._t, params);
      return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
    }
    if ((edge === 'media' || edge === 'stories') && req.method === 'GET') {
      // Stories are listed on their own edge (for 24 hours), never on the media edge.
      const listed = fake.media.filter((m) =>
        edge === 'stories'
          ? m.productType === 'STORY' && m.timestamp > Date.now() - 24 * 3600_000
          : m.productType !== 'STORY',
      );
      const rows = listed.map((m) => ({ _t: m.timestamp, ...fields(m, params, fake) }));
      const page = pageOf(rows, (r) => r._t, params);
      return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
    }
  }
  if (edge === 'comments') {
    const raw = params.get('access_token') ?? '';
    const granted = who
      ? who.token.grant.scopes.includes('instagram_manage_comments')
      : !fake.tokensWithoutComments.has(raw);
    const author = who?.page?.ig ?? { id: fake.igUserId, username: 'acme' };
    return comments(fake, req.method, node, params, granted, author);
  }
  if (edge === 'replies') {
    const target = fake.comments.find((c) => c.id === node);
    if (!target) return notFound(req.method, node);
    return replies(fake, req.method, target, params, canComment, igAccount);
  }
  if (!edge && req.method === 'GET') {
    const account = fake.login.node(ctx, node, params);
    if (account) return account;
  }
  if (!edge && req.method === 'GET') {
    const c = fake.containers.get(node);
    if (c) {
      const status = currentStatus(c);
      const wanted = (params.get('fields') ?? 'id').split(',');
      return {
        status: 200,
        body: {
          id: c.id,
          ...(wanted.includes('status_code') ? { status_code: status } : {}),
          ...(wanted.includes('status') ? { status: c.statusText ?? status } : {}),
        },
      };
    }
    const m = fake.media.find((x) => x.id === node);
    if (m) return { status: 200, body: fields(m, params, fake) };
  }
  if (edge === 'insights' && req.method === 'GET' && fake.media.some((m) => m.id === node)) {
    return insights(fake, node, params);
  }
  return notFound(req.method, node);
}

async function createContainer(fake: InstagramFake, params: URLSearchParams): Promise<FakeResponse> {
  const mediaType = params.get('media_type');
  const isCarouselItem = params.get('is_carousel_item') === 'true';
  const caption = params.get('caption') ?? undefined;
  if (caption && [...caption].length > 2200)
    return graphErrorResponse(100, 'Param caption must be at most 2200 characters long.');
  const imageUrl = params.get('image_url');
  const videoUrl = params.get('video_url');
  let kind: FakeIgContainer['kind'];
  if (!mediaType || mediaType === 'IMAGE') kind = 'IMAGE';
  else if (mediaType === 'REELS' || mediaType === 'CAROUSEL' || mediaType === 'STORIES') kind = mediaType;
  else if (mediaType === 'VIDEO') {
    if (!isCarouselItem) {
      return graphErrorResponse(
        100,
        'The video media type is no longer supported for feed videos. Use media_type=REELS.',
        {
          subcode: 2207023,
        },
      );
    }
    kind = 'VIDEO';
  } else
    return graphErrorResponse(100, 'The media type entered is not one of the expected media types.', {
      subcode: 2207023,
    });

  if (kind === 'IMAGE' && !imageUrl) return graphErrorResponse(100, 'The parameter image_url is required');
  if ((kind === 'REELS' || kind === 'VIDEO') && !videoUrl)
    return graphErrorResponse(100, 'The parameter video_url is required');
  if (kind === 'STORIES' && !imageUrl === !videoUrl)
    return graphErrorResponse(100, 'The parameter image_url or video_url is required');
  const storyOf = kind === 'STORIES' ? (imageUrl ? 'IMAGE' : 'VIDEO') : undefined;
  const children = (params.get('children') ?? '').split(',').filter(Boolean);
  if (kind === 'CAROUSEL') {
    if (children.length < 2 || children.length > 10) {
      return graphErrorResponse(100, 'Carousel validation failed: a carousel has 2 to 10 items.', {
        subcode: 2207028,
      });
    }
    for (const id of children) {
      const child = fake.containers.get(id);
      if (!child?.isCarouselItem || child.status !== 'FINISHED') {
        return graphErrorResponse(
          100,
          `Carousel validation failed: item ${id} is not a finished carousel item.`,
          {
            subcode: 2207028,
          },
        );
      }
    }
  }
  const container: FakeIgContainer = {
    id: graphId('1790'),
    kind,
    url: imageUrl ?? videoUrl ?? undefined,
    // A story has no caption: Instagram keeps none.
    caption: kind === 'STORIES' ? undefined : caption,
    ...(storyOf ? { storyOf } : {}),
    ...(kind === 'REELS' ? { shareToFeed: params.get('share_to_feed') !== 'false' } : {}),
    altText: params.get('alt_text') ?? undefined,
    isCarouselItem,
    children,
    status: 'IN_PROGRESS',
    pollsLeft: fake.processingPolls,
    downloading: false,
  };
  if (kind === 'IMAGE' || storyOf === 'IMAGE') {
    // Images are fetched while the container is created; JPEG is the only supported format.
    const got = await download(imageUrl);
    if (!got) {
      return graphErrorResponse(9004, `The media could not be fetched from this uri: ${imageUrl}`, {
        subcode: 2207052,
        userMsg: 'Media download has failed. The media URI doesn’t meet our requirements.',
      });
    }
    if (!isJpeg(got.bytes)) {
      return graphErrorResponse(36001, 'The image format is not supported.', {
        subcode: 2207005,
        userMsg: 'The image format is not supported. Only JPEG images are supported.',
      });
    }
    // IG User media reference, image specifications: at most 8 MiB, aspect ratio 4:5 to 1.91:1
    // (Herald checks the same numbers before scheduling: functions/core/media-limits.ts).
    if (got.bytes.length > 8 * 1024 * 1024) {
      return graphErrorResponse(36000, 'The image is too large to download. It should be less than 8 MiB.', {
        subcode: 2207004,
        userMsg: 'The image is too large to download. It should be less than 8 MiB.',
      });
    }
    const { width, height } = (() => {
      try {
        return imageSize(got.bytes);
      } catch {
        return { width: 0, height: 0 };
      }
    })();
    // Stories are full-screen (9:16 recommended): the feed's aspect range does not apply to them.
    if (
      kind === 'IMAGE' &&
      width &&
      height &&
      (width / height < 0.8 - 0.005 || width / height > 1.91 + 0.005)
    ) {
      return graphErrorResponse(36003, `The aspect ratio is not supported.`, {
        subcode: 2207009,
        userMsg: `The submitted image with aspect ratio ('${(width / height).toFixed(2)}') cannot be published. Please submit an image with a valid aspect ratio.`,
      });
    }
    container.media = got;
  } else if (videoUrl) {
    // Videos are downloaded and transcoded after the answer.
    container.downloading = true;
    void download(videoUrl).then((got) => {
      container.downloading = false;
      if (got && !isVideoContainer(got.bytes)) {
        container.status = 'ERROR';
        container.statusText = 'Error: The video format is not supported. (2207026)';
      } else if (got) container.media = got;
      else {
        container.status = 'ERROR';
        container.statusText =
          'Error: Media download has failed. The media URI doesn’t meet our requirements. (2207052)';
      }
    });
  }
  fake.containers.set(container.id, container);
  return { status: 200, body: { id: container.id } };
}

/** An ISO base media file (MP4, MOV): `ftyp` (or QuickTime's `moov`/`mdat`/`wide`) at byte 4. */
const isVideoContainer = (b: Buffer) =>
  b.length > 8 && ['ftyp', 'moov', 'mdat', 'wide', 'free'].includes(b.subarray(4, 8).toString('latin1'));

function currentStatus(c: FakeIgContainer): ContainerStatus {
  if (c.status !== 'IN_PROGRESS' || c.downloading) return c.status;
  if (c.pollsLeft > 0) {
    c.pollsLeft--;
    return 'IN_PROGRESS';
  }
  c.status = 'FINISHED';
  return c.status;
}

function publish(fake: InstagramFake, params: URLSearchParams): FakeResponse {
  const id = params.get('creation_id');
  const c = id ? fake.containers.get(id) : undefined;
  if (!c || c.isCarouselItem) return notFound('post', id ?? '');
  const dayAgo = Date.now() - 24 * 3600_000;
  if (fake.media.filter((m) => m.timestamp > dayAgo).length >= fake.publishLimit) {
    return graphErrorResponse(9, 'Application request limit reached', {
      subcode: 2207042,
      userMsg:
        'You reached maximum number of posts that is allowed to be published by Content Publishing API.',
    });
  }
  if (c.status === 'PUBLISHED')
    return graphErrorResponse(9007, 'Media ID is not available', { subcode: 2207027 });
  if (currentStatus(c) !== 'FINISHED') {
    return graphErrorResponse(9007, 'Media ID is not available', {
      subcode: 2207027,
      userMsg: 'The media is not ready for publishing, please wait for a moment',
    });
  }
  const items =
    c.kind === 'CAROUSEL'
      ? c.children.map((x) => fake.containers.get(x)).filter((x) => x !== undefined)
      : [c];
  const m: FakeIgMedia = {
    id: graphId('1792'),
    mediaType:
      c.kind === 'CAROUSEL'
        ? 'CAROUSEL_ALBUM'
        : c.kind === 'IMAGE' || c.storyOf === 'IMAGE'
          ? 'IMAGE'
          : 'VIDEO',
    productType: c.kind === 'REELS' ? 'REELS' : c.kind === 'STORIES' ? 'STORY' : 'FEED',
    ...(c.shareToFeed !== undefined ? { shareToFeed: c.shareToFeed } : {}),
    caption: c.caption,
    timestamp: Date.now(),
    permalink: '',
    containerId: c.id,
    items: items.map((x) => ({
      kind: x.kind === 'IMAGE' || x.storyOf === 'IMAGE' ? 'IMAGE' : 'VIDEO',
      url: x.url ?? '',
      altText: x.altText,
      bytes: x.media?.bytes ?? Buffer.alloc(0),
      contentType: x.media?.contentType ?? '',
    })),
  };
  m.permalink =
    c.kind === 'STORIES'
      ? `https://www.instagram.com/stories/acme/${m.id}/`
      : `https://www.instagram.com/${c.kind === 'REELS' ? 'reel' : 'p'}/${m.id.slice(-11)}/`;
  fake.media.push(m);
  c.status = 'PUBLISHED';
  if (fake.loseNextPublishResponse) {
    fake.loseNextPublishResponse = false;
    return graphErrorResponse(2, 'Service temporarily unavailable', { status: 500, type: 'OAuthException' });
  }
  return { status: 200, body: { id: m.id } };
}

function fields(m: FakeIgMedia, params: URLSearchParams, fake?: InstagramFake): Record<string, unknown> {
  const row: Record<string, unknown> = { id: m.id };
  const embedded = fieldSpecs(params.get('fields')).find((f) => f.name === 'comments' && f.sub.length);
  if (embedded && fake) {
    const rows = fake.comments
      .filter((c) => c.mediaId === m.id && !c.parentId)
      .map((c) => ({ _t: c.timestamp, ...commentRow(fake, c, embedded.sub) }));
    const page = pageOf(rows, (r) => r._t, modParams(embedded));
    row.comments = { ...page, data: page.data.map(({ _t, ...r }) => r) };
  }
  for (const f of fieldSpecs(params.get('fields') ?? 'id').map((x) => x.name)) {
    if (f === 'caption' && m.caption !== undefined) row.caption = m.caption;
    if (f === 'timestamp') row.timestamp = graphTime(m.timestamp);
    if (f === 'permalink') row.permalink = m.permalink;
    if (f === 'media_type') row.media_type = m.mediaType;
    if (f === 'media_product_type') row.media_product_type = m.productType;
  }
  return row;
}

function insights(fake: InstagramFake, id: string, params: URLSearchParams): FakeResponse {
  const metrics = (params.get('metric') ?? '').split(',').filter(Boolean);
  for (const name of metrics) {
    if (DEPRECATED.has(name)) {
      return graphErrorResponse(
        100,
        `(#100) The Media Insights API does not support the ${name} metric for this media product type.`,
      );
    }
    if (!METRICS.has(name))
      return graphErrorResponse(
        100,
        `(#100) metric[0] must be one of the following values: ${[...METRICS].join(', ')}`,
      );
  }
  const values = fake.insights.get(id) ?? {};
  return {
    status: 200,
    body: {
      data: metrics.map((name) => ({
        name,
        period: 'lifetime',
        values: [{ value: values[name] ?? 0 }],
        title: name,
        description: name,
        id: `${id}/insights/${name}/lifetime`,
      })),
    },
  };
}

function comments(
  fake: InstagramFake,
  method: string,
  mediaId: string,
  params: URLSearchParams,
  granted: boolean,
  author: { id: string; username: string },
): FakeResponse {
  if (method === 'POST' && !granted)
    return graphErrorResponse(10, '(#10) Application does not have permission for this action', {
      status: 403,
    });
  if (!fake.media.some((m) => m.id === mediaId)) return notFound(method, mediaId);
  if (method === 'GET') {
    const rows = fake.comments
      .filter((c) => c.mediaId === mediaId && !c.parentId)
      .map((c) => ({
        _t: c.timestamp,
        ...commentRow(fake, c, fieldSpecs(params.get('fields') ?? 'id,text,timestamp')),
      }));
    const page = pageOf(rows, (r) => r._t, params);
    return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
  }
  if (method !== 'POST') return notFound(method, mediaId);
  const text = params.get('message') ?? '';
  if (!text.trim()) return graphErrorResponse(100, '(#100) The parameter message is required');
  if ([...text].length > 2200)
    return graphErrorResponse(100, '(#100) Param message must be at most 2200 characters long.');
  const c: FakeIgComment = { id: graphId('1787'), mediaId, text, timestamp: Date.now(), from: author };
  fake.comments.push(c);
  if (fake.loseNextCommentResponse) {
    fake.loseNextCommentResponse = false;
    return graphErrorResponse(2, 'Service temporarily unavailable', { status: 500 });
  }
  return { status: 200, body: { id: c.id } };
}

const DEFAULT_PAGE = '104857600000011';

function commentRow(fake: InstagramFake, c: FakeIgComment, specs: FieldSpec[]): Record<string, unknown> {
  const row: Record<string, unknown> = { id: c.id };
  for (const f of specs) {
    if (f.name === 'text') row.text = c.text;
    if (f.name === 'timestamp') row.timestamp = graphTime(c.timestamp);
    if (f.name === 'from') row.from = c.from;
    if (f.name === 'username') row.username = c.from.username;
    if (f.name === 'parent_id' && c.parentId) row.parent_id = c.parentId;
    if (f.name === 'replies') {
      const rows = fake.comments
        .filter((r) => r.parentId === c.id)
        .map((r) => ({
          _t: r.timestamp,
          ...commentRow(fake, r, f.sub.length ? f.sub : fieldSpecs('id,text,timestamp')),
        }));
      const page = pageOf(rows, (r) => r._t, modParams(f));
      row.replies = { ...page, data: page.data.map(({ _t, ...r }) => r) };
    }
  }
  return row;
}

/** GET|POST /{ig-comment-id}/replies: a top-level comment's replies, or a reply by the account. */
function replies(
  fake: InstagramFake,
  method: string,
  target: FakeIgComment,
  params: URLSearchParams,
  granted: boolean,
  author: { id: string; username: string },
): FakeResponse {
  const top = target.parentId ? (fake.comments.find((c) => c.id === target.parentId) ?? target) : target;
  if (method === 'GET') {
    const rows = fake.comments
      .filter((c) => c.parentId === top.id)
      .map((c) => ({
        _t: c.timestamp,
        ...commentRow(fake, c, fieldSpecs(params.get('fields') ?? 'id,text,timestamp')),
      }));
    const page = pageOf(rows, (r) => r._t, params);
    return { status: 200, body: { ...page, data: page.data.map(({ _t, ...r }) => r) } };
  }
  if (method !== 'POST') return notFound(method, target.id);
  if (!granted)
    return graphErrorResponse(10, '(#10) Application does not have permission for this action', {
      status: 403,
    });
  const text = params.get('message') ?? '';
  if (!text.trim()) return graphErrorResponse(100, '(#100) The parameter message is required');
  if ([...text].length > 2200)
    return graphErrorResponse(100, '(#100) Param message must be at most 2200 characters long.');
  const c: FakeIgComment = {
    id: graphId('1787'),
    mediaId: top.mediaId,
    text,
    timestamp: Date.now(),
    from: author,
    parentId: top.id,
  };
  fake.comments.push(c);
  if (fake.loseNextCommentResponse) {
    fake.loseNextCommentResponse = false;
    return graphErrorResponse(2, 'Service temporarily unavailable', { status: 500 });
  }
  return { status: 200, body: { id: c.id } };
}

function tagFields(t: FakeIgTag, params: URLSearchParams): Record<string, unknown> {
  const row: Record<string, unknown> = { id: t.id };
  for (const { name: f } of fieldSpecs(params.get('fields') ?? 'id')) {
    if (f === 'caption') row.caption = t.caption;
    if (f === 'timestamp') row.timestamp = graphTime(t.timestamp);
    if (f === 'permalink') row.permalink = t.permalink;
    if (f === 'username') row.username = t.username;
  }
  return row;
}

/** Someone comments on the account's media, tags it, or writes to it. */
function seedInbox(fake: InstagramFake, seed: InboxSeed): { platform_id: string } {
  const at = seedTime(seed);
  const handle = seed.author?.handle ?? 'grace.h';
  const author = { id: seed.author?.id ?? `1784${hashDigits(handle, 13, 'igsid')}`, username: handle };
  if (seed.kind === 'message') return fake.conversations.seed(seed, author);
  if (seed.kind === 'mention') {
    const id = graphId('1795');
    fake.tags.push({
      id,
      caption: seed.text,
      timestamp: at,
      permalink: `https://www.instagram.com/p/${id.slice(-11)}/`,
      username: handle,
    });
    return { platform_id: id };
  }
  const parent = seed.parent ? fake.comments.find((c) => c.id === seed.parent) : undefined;
  const top = parent?.parentId ? fake.comments.find((c) => c.id === parent.parentId) : parent;
  let mediaId = top?.mediaId ?? seed.parent;
  if (!mediaId) {
    let latest = fake.media.at(-1);
    if (!latest) {
      const id = graphId('1792');
      latest = {
        id,
        mediaType: 'IMAGE',
        productType: 'FEED',
        caption: 'Hello from Acme',
        timestamp: Math.min(at, Date.now()) - 3600_000,
        permalink: `https://www.instagram.com/p/${id.slice(-11)}/`,
        containerId: '',
        items: [],
      };
      fake.media.push(latest);
    }
    mediaId = latest.id;
  }
  const c: FakeIgComment = {
    id: graphId('1787'),
    mediaId,
    text: seed.text,
    timestamp: at,
    from: author,
    ...(top ? { parentId: top.id } : {}),
  };
  fake.comments.push(c);
  return { platform_id: c.id };
}
