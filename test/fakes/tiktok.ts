import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of TikTok's Content Posting API (Direct Post), the OAuth token endpoint and the Display API
// video query, as documented on developers.tiktok.com:
//   POST /v2/oauth/token/                       form: client_key, client_secret, grant_type=refresh_token, refresh_token
//   POST /v2/post/publish/creator_info/query/   → privacy_level_options, *_disabled
//   POST /v2/post/publish/video/init/           FILE_UPLOAD with the documented chunk rules → publish_id, upload_url
//   PUT  /upload/?upload_id=…                   sequential chunks, Content-Range; 206 per chunk, 201 when complete
//   POST /v2/post/publish/content/init/         PHOTO, PULL_FROM_URL
//   POST /v2/post/publish/status/fetch/         PROCESSING_UPLOAD|PROCESSING_DOWNLOAD → PUBLISH_COMPLETE | FAILED
//   POST /v2/video/query/?fields=…              {filters: {video_ids}} → like/comment/share/view counts
// Envelope {"data", "error": {"code", "message", "log_id"}}; the post ids are emitted as bare 19-digit JSON
// numbers, exactly as TikTok does (they do not fit a double).

const MB = 1024 * 1024;
const PRIVACY = ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'FOLLOWER_OF_CREATOR', 'SELF_ONLY'];

export interface TikTokPost {
  id: string;
  publishId: string;
  kind: 'video' | 'photo';
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

export function createFake(): TikTokFake {
  let seq = 0;
  const publishes = new Map<string, Publish>();
  const byUpload = new Map<string, Publish>();

  const fake: TikTokFake = {
    name: 'tiktok',
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

    settle() {
      for (const p of publishes.values()) p.pollsLeft = 0;
    },

    reset() {
      seq = 0;
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
    },

    handle(req: FakeRequest, ctx: FakeContext): FakeResponse {
      if (req.method === 'POST' && req.path === '/v2/oauth/token/') return token(req);
      if (req.method === 'PUT' && req.path === '/upload/') return upload(req);
      if (req.method !== 'POST') return fail(404, 'invalid_params', 'Unknown endpoint');

      const t = bearer(req);
      if (!t || !fake.validTokens.has(t)) {
        return fail(401, 'access_token_invalid', 'The access token is invalid or not found in the request.');
      }
      switch (req.path) {
        case '/v2/post/publish/creator_info/query/':
          return envelope(200, {
            creator_avatar_url: 'https://p16.tiktokcdn.example/avatar.jpeg',
            creator_username: 'herald',
            creator_nickname: 'Herald',
            ...fake.creator,
          });
        case '/v2/post/publish/video/init/':
          return videoInit(req, ctx);
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

  function token(req: FakeRequest): FakeResponse {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const err = (status: number, error: string, description: string): FakeResponse => ({
      status,
      body: { error, error_description: description, log_id: logId() },
    });
    if (!(req.headers['content-type'] ?? '').includes('application/x-www-form-urlencoded')) {
      return err(400, 'invalid_request', 'Content-Type must be application/x-www-form-urlencoded');
    }
    if (form.get('client_key') !== fake.clientKey || form.get('client_secret') !== fake.clientSecret) {
      return err(401, 'invalid_client', 'Client key or secret is incorrect.');
    }
    if (form.get('grant_type') !== 'refresh_token')
      return err(400, 'unsupported_grant_type', 'Unsupported grant type.');
    const old = form.get('refresh_token') ?? '';
    if (!fake.refreshTokens.has(old))
      return err(400, 'invalid_grant', 'Refresh token is invalid or expired.');
    // Refresh tokens rotate: the old one stops working.
    fake.refreshTokens.delete(old);
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
        expires_in: 86400,
        open_id: 'open-id-1',
        refresh_expires_in: 31536000,
        refresh_token: refresh,
        scope: 'user.info.basic,video.publish,video.upload,video.list',
        token_type: 'Bearer',
      },
    };
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
    return null;
  }

  function newPublish(
    kind: 'video' | 'photo',
    postInfo: Record<string, unknown>,
    sourceInfo: Record<string, unknown>,
  ): Publish {
    seq++;
    const p: Publish = {
      id: kind === 'video' ? `v_pub_file~v2-1.${7_300_000_000 + seq}` : `p_pub_url~v2.${7_300_000_000 + seq}`,
      kind,
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

  function videoInit(req: FakeRequest, ctx: FakeContext): FakeResponse {
    const body = obj(req.json);
    const postInfo = obj(body?.post_info);
    const source = obj(body?.source_info);
    if (!postInfo || !source) return fail(400, 'invalid_params', 'post_info and source_info are required.');
    const bad = checkPostInfo(postInfo, 2200);
    if (bad) return bad;
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
    const p = newPublish('video', postInfo, source);
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
    const bad = checkPostInfo(postInfo, 90);
    if (bad) return bad;
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
    const p = newPublish('photo', postInfo, source);
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
      title: String(p.postInfo.title ?? ''),
      description: String(p.postInfo.description ?? ''),
      privacyLevel: String(p.postInfo.privacy_level),
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
    } else state = p.failReason ? 'FAILED' : 'PUBLISH_COMPLETE';
    // Private posts never get a public id.
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
