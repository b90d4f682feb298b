import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of the YouTube Data API v3 upload path and Google's OAuth token endpoint:
//   POST /token                                   form: client_id, client_secret, refresh_token, grant_type
//   POST /upload/youtube/v3/videos?uploadType=resumable&part=…   video resource + X-Upload-Content-* → Location
//   PUT  <session URI>                            Content-Range bytes a-b/N → 308 (Range: bytes=0-M) | 200 video
//   PUT  <session URI>  Content-Range bytes */N   → upload status (308 or the finished video)
//   GET  /youtube/v3/videos?part=statistics&id=…  → items[].statistics (counts as strings)
// Errors use Google's JSON shape {"error": {"code", "message", "errors": [{"reason", …}], "status"}}; metadata is
// validated as videos.insert documents it (title ≤ 100 chars, no < or >, description ≤ 5000 bytes, tags ≤ 500
// chars in all, assignable categoryId, privacyStatus).

export interface YouTubeVideo {
  id: string;
  snippet: { title: string; description: string; tags?: string[]; categoryId: string };
  status: { privacyStatus: string; selfDeclaredMadeForKids: boolean };
  bytes: Buffer;
  contentType: string;
  /** Content-Range of every PUT that carried bytes, in order. */
  chunks: string[];
  statistics: { viewCount: number; likeCount: number; commentCount: number };
}

interface Session {
  id: string;
  resource: { snippet: YouTubeVideo['snippet']; status: YouTubeVideo['status'] };
  size: number;
  contentType: string;
  parts: Buffer[];
  received: number;
  chunks: string[];
  video: YouTubeVideo | null;
}

export interface YouTubeFake extends FakePlatform {
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  clientId: string;
  clientSecret: string;
  videos: YouTubeVideo[];
  /** Store at most this many bytes of each PUT (the server persisting less than was sent). */
  acceptPerPut: number | null;
  /** Create the video on the final PUT but answer 503, as if the connection died there. */
  loseNextCompletion: boolean;
  /** Uploads the channel may still make before 400 uploadLimitExceeded. */
  uploadsLeft: number;
  /** Forget every upload session (they expired). */
  expireSessions(): void;
  minted: string[];
}

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

export function createFake(): YouTubeFake {
  let seq = 0;
  const sessions = new Map<string, Session>();

  const fake: YouTubeFake = {
    name: 'youtube',
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clientId: 'client-id.apps.googleusercontent.com',
    clientSecret: 'client-secret',
    videos: [],
    acceptPerPut: null,
    loseNextCompletion: false,
    uploadsLeft: 100,
    minted: [],

    expireSessions() {
      sessions.clear();
    },

    reset() {
      seq = 0;
      sessions.clear();
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.videos = [];
      fake.acceptPerPut = null;
      fake.loseNextCompletion = false;
      fake.uploadsLeft = 100;
      fake.minted = [];
    },

    handle(req: FakeRequest, ctx: FakeContext): FakeResponse {
      if (req.method === 'POST' && req.path === '/token') return token(req);
      if (req.method === 'PUT' && req.path === '/upload/youtube/v3/videos' && req.query.has('upload_id'))
        return put(req);
      const t = bearer(req);
      if (!t || !fake.validTokens.has(t)) {
        return {
          status: 401,
          headers: {
            'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"',
          },
          body: {
            error: {
              code: 401,
              message:
                'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
              errors: [
                {
                  message: 'Invalid Credentials',
                  domain: 'global',
                  reason: 'authError',
                  location: 'Authorization',
                  locationType: 'header',
                },
              ],
              status: 'UNAUTHENTICATED',
            },
          },
        };
      }
      if (req.method === 'POST' && req.path === '/upload/youtube/v3/videos') return start(req, ctx);
      if (req.method === 'GET' && req.path === '/youtube/v3/videos') return list(req);
      return googleError(404, 'notFound', 'Not Found', 'NOT_FOUND');
    },
  };

  function token(req: FakeRequest): FakeResponse {
    const form = new URLSearchParams(req.body.toString('utf8'));
    if (form.get('client_id') !== fake.clientId || form.get('client_secret') !== fake.clientSecret) {
      return {
        status: 401,
        body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' },
      };
    }
    if (form.get('grant_type') !== 'refresh_token') {
      return {
        status: 400,
        body: { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' },
      };
    }
    if (!fake.refreshTokens.has(form.get('refresh_token') ?? '')) {
      return {
        status: 400,
        body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' },
      };
    }
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
    if (fake.uploadsLeft <= 0) {
      return badRequest('uploadLimitExceeded', 'The user has exceeded the number of videos they may upload.');
    }
    seq++;
    const s: Session = {
      id: `AEnB2U${seq}xq`,
      resource: {
        snippet: { title, description, ...(tags ? { tags: tags as string[] } : {}), categoryId },
        status: { privacyStatus: privacy, selfDeclaredMadeForKids: status?.selfDeclaredMadeForKids === true },
      },
      size,
      contentType: type,
      parts: [],
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
    s.parts.push(Buffer.from(req.body.subarray(0, take)));
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
