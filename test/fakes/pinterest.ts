import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of Pinterest API v5, as its OpenAPI description (pinterest/api-description) documents it:
//   POST /v5/oauth/token                 Basic client auth; form grant_type=refresh_token, refresh_token
//   POST /v5/pins                        board_id, title ≤ 100, description ≤ 800, link ≤ 2048, alt_text ≤ 500,
//                                        media_source image_url | image_base64 (jpeg/png) | video_id (+ cover)
//   GET  /v5/boards/{board_id}/pins      {items, bookmark}, page_size ≤ 250
//   POST /v5/media                       {media_type: video} → media_id, upload_url, upload_parameters
//   POST <upload_url>                    the S3 form: every upload parameter, then `file` → 204
//   GET  /v5/media/{media_id}            registered → processing → succeeded | failed
//   GET  /v5/pins/{pin_id}/analytics     start_date, end_date, metric_types → {all: {summary_metrics, …}}
// Errors are {"code", "message"} with the documented statuses.

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

export interface PinterestFake extends FakePlatform {
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

export function createFake(): PinterestFake {
  let seq = 0;
  const media = new Map<string, Media>();

  const fake: PinterestFake = {
    name: 'pinterest',
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
      if (req.method === 'POST' && req.path === '/v5/oauth/token') return token(req);
      if (req.method === 'POST' && req.path === '/s3-upload/') return s3(req);
      const t = bearer(req);
      if (!t || !fake.validTokens.has(t)) return error(401, 2, 'Authentication failed.');
      if (req.method === 'POST' && req.path === '/v5/pins') return createPin(req);
      if (req.method === 'POST' && req.path === '/v5/media') return registerMedia(req, ctx);
      let m = /^\/v5\/media\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && m) return mediaStatus(m[1] ?? '');
      m = /^\/v5\/boards\/([^/]+)\/pins$/.exec(req.path);
      if (req.method === 'GET' && m) return boardPins(req, m[1] ?? '');
      m = /^\/v5\/pins\/([^/]+)\/analytics$/.exec(req.path);
      if (req.method === 'GET' && m) return analytics(req, m[1] ?? '');
      return error(404, 3, 'Not found.');
    },
  };

  function token(req: FakeRequest): FakeResponse {
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!basic || Buffer.from(basic, 'base64').toString() !== `${fake.clientId}:${fake.clientSecret}`) {
      return error(401, 2, 'Authentication failed.');
    }
    const form = new URLSearchParams(req.body.toString('utf8'));
    if (form.get('grant_type') !== 'refresh_token') return error(400, 1, 'Unsupported grant_type.');
    if (!fake.refreshTokens.has(form.get('refresh_token') ?? ''))
      return error(400, 1, 'Invalid refresh token.');
    seq++;
    const access = `pina_minted${seq}`;
    fake.validTokens.add(access);
    fake.minted.push(access);
    return {
      status: 200,
      body: {
        access_token: access,
        token_type: 'bearer',
        expires_in: 2_592_000,
        scope: 'boards:read,pins:read,pins:write',
      },
    };
  }

  function createPin(req: FakeRequest): FakeResponse {
    const b = obj(req.json);
    if (!b) return error(400, 1, 'Invalid request body.');
    const board = b.board_id;
    if (typeof board !== 'string' || !board) return error(400, 1, 'board_id is required.');
    if (!fake.boards.has(board)) return error(404, 3, 'Board not found.');
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
