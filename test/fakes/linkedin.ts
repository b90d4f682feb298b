import { createHash } from 'node:crypto';
import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
} from './server.ts';

// Contract fake of LinkedIn's versioned REST API: POST /rest/posts (201, URN in x-restli-id), GET
// /rest/posts?q=author, images (initializeUpload → uploadUrl, PUT bytes, GET status), videos
// (initializeUpload → uploadInstructions, PUT parts answering ETags, finalizeUpload, GET status),
// GET /rest/socialMetadata/{urn}, and the OAuth refresh at /oauth/v2/accessToken (serve it from the
// same origin: the connector uses the API origin for OAuth when it is overridden locally).
// Requests without LinkedIn-Version or X-Restli-Protocol-Version: 2.0.0 are refused like LinkedIn
// does. Commentary is parsed as "little text": text after an unescaped reserved character is lost.

export interface FakeLinkedInAsset {
  urn: string;
  kind: 'image' | 'video';
  owner: string;
  bytes: Buffer;
  status: 'WAITING_UPLOAD' | 'PROCESSING' | 'AVAILABLE' | 'PROCESSING_FAILED';
  pollsLeft: number;
  parts: Array<{ firstByte: number; lastByte: number; etag: string; data: Buffer | null }>;
  uploadToken: string;
  fileSizeBytes: number;
}

export interface FakeLinkedInPost {
  urn: string;
  author: string;
  /** The commentary as sent (little text). */
  commentary: string;
  /** What LinkedIn would display: little text decoded, truncated at an unescaped reserved character. */
  text: string;
  visibility: string;
  body: Record<string, unknown>;
  createdAt: number;
  media: Array<{ urn: string; altText: string | null; bytes: Buffer }>;
}

export interface FakeLinkedIn extends FakePlatform {
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  clients: Map<string, string>;
  assets: Map<string, FakeLinkedInAsset>;
  posts: FakeLinkedInPost[];
  /** Whether the app may read the author's posts (r_member_social / r_organization_social). */
  canReadPosts: boolean;
  /** GET status polls answering PROCESSING before a video is AVAILABLE. */
  processingPolls: number;
  failVideoProcessing: boolean;
  minted: Array<{ access_token: string; refresh_token: string }>;
  reactions: Map<string, { likes: number; comments: number }>;
}

const li = (status: number, message: string, extra: Record<string, unknown> = {}): FakeResponse => ({
  status,
  body: { status, message, ...extra },
});
const RESERVED = '\\|{}@[]()<>#*_~';

/** Little text → displayed text; stops at an unescaped reserved character (LinkedIn drops the rest). */
function display(commentary: string): string {
  let out = '';
  for (let i = 0; i < commentary.length; i++) {
    const c = commentary[i] ?? '';
    if (c === '\\' && RESERVED.includes(commentary[i + 1] ?? '')) {
      out += commentary[i + 1];
      i++;
      continue;
    }
    if (RESERVED.includes(c)) break;
    out += c;
  }
  return out;
}

export function createFake(): FakeLinkedIn {
  let seq = 0;
  const next = () => String(7300000000000000000n + BigInt(++seq));

  function assetJson(a: FakeLinkedInAsset, base: string) {
    return {
      id: a.urn,
      owner: a.owner,
      status: a.status,
      ...(a.status === 'AVAILABLE'
        ? {
            downloadUrl: `${base}/dms/${encodeURIComponent(a.urn)}`,
            downloadUrlExpiresAt: Date.now() + 3600_000,
          }
        : {}),
      ...(a.status === 'PROCESSING_FAILED'
        ? { processingFailureReason: 'Media file is corrupt or in an unsupported format' }
        : {}),
    };
  }

  async function handle(req: FakeRequest, ctx: FakeContext): Promise<FakeResponse | null> {
    if (req.method === 'POST' && req.path === '/oauth/v2/accessToken') {
      const form = new URLSearchParams(req.body.toString('utf8'));
      const id = form.get('client_id') ?? '';
      if (!id || fake.clients.get(id) !== form.get('client_secret')) {
        return {
          status: 401,
          body: { error: 'invalid_client', error_description: 'Client authentication failed' },
        };
      }
      if (form.get('grant_type') !== 'refresh_token')
        return {
          status: 400,
          body: { error: 'unsupported_grant_type', error_description: 'grant_type is invalid' },
        };
      const old = form.get('refresh_token') ?? '';
      if (!fake.refreshTokens.has(old)) {
        return {
          status: 400,
          body: {
            error: 'invalid_request',
            error_description:
              'The provided authorization grant or refresh token is invalid, expired or revoked',
          },
        };
      }
      const pair = { access_token: `AQV${next()}`, refresh_token: old };
      fake.validTokens.add(pair.access_token);
      fake.minted.push(pair);
      return {
        status: 200,
        body: {
          access_token: pair.access_token,
          expires_in: 5184000,
          refresh_token: old,
          refresh_token_expires_in: 31536000,
        },
      };
    }

    const token = bearer(req);
    if (!token || !fake.validTokens.has(token)) {
      return {
        status: 401,
        body: {
          status: 401,
          serviceErrorCode: 65600,
          code: 'INVALID_ACCESS_TOKEN',
          message: 'Invalid access token',
        },
      };
    }

    // Upload URLs (pre-signed in reality; on the fake's origin here).
    const imagePut = /^\/dms-uploads\/image\/(.+)$/.exec(req.path);
    if (req.method === 'PUT' && imagePut) {
      const a = fake.assets.get(decodeURIComponent(imagePut[1] ?? ''));
      if (a?.status !== 'WAITING_UPLOAD') return li(400, 'Upload URL is invalid or was already used');
      a.bytes = Buffer.from(req.body);
      a.status = 'AVAILABLE';
      return { status: 201 };
    }
    const videoPut = /^\/dms-uploads\/video\/(.+)\/part\/(\d+)$/.exec(req.path);
    if (req.method === 'PUT' && videoPut) {
      const a = fake.assets.get(decodeURIComponent(videoPut[1] ?? ''));
      const part = a?.parts[Number(videoPut[2])];
      if (!a || !part) return li(400, 'Upload URL is invalid');
      if (req.body.length !== part.lastByte - part.firstByte + 1)
        return li(400, `Part size mismatch: expected ${part.lastByte - part.firstByte + 1} bytes`);
      part.data = Buffer.from(req.body);
      return { status: 200, headers: { etag: part.etag } };
    }

    if (!req.headers['linkedin-version'])
      return li(
        400,
        'A version must be present. Please specify a version by adding the LinkedIn-Version header.',
        { code: 'VERSION_MISSING' },
      );
    if (!/^20\d{4}$/.test(req.headers['linkedin-version']))
      return li(426, `Requested version ${req.headers['linkedin-version']} is not active`, {
        code: 'NONEXISTENT_VERSION',
      });
    if (req.headers['x-restli-protocol-version'] !== '2.0.0')
      return li(400, 'Restli protocol version 2.0.0 is required', { code: 'ILLEGAL_ARGUMENT' });
    const action = req.query.get('action');

    if (
      req.method === 'POST' &&
      (req.path === '/rest/images' || req.path === '/rest/videos') &&
      action === 'initializeUpload'
    ) {
      const r = ((req.json ?? {}) as { initializeUploadRequest?: { owner?: string; fileSizeBytes?: number } })
        .initializeUploadRequest;
      if (!r?.owner || !/^urn:li:(person|organization):/.test(r.owner))
        return li(
          422,
          'ERROR :: /initializeUploadRequest/owner :: field is required but not found and has no default value',
        );
      const kind = req.path === '/rest/images' ? 'image' : 'video';
      const urn = `urn:li:${kind}:C4D${next()}`;
      if (kind === 'image') {
        fake.assets.set(urn, {
          urn,
          kind,
          owner: r.owner,
          bytes: Buffer.alloc(0),
          status: 'WAITING_UPLOAD',
          pollsLeft: 0,
          parts: [],
          uploadToken: '',
          fileSizeBytes: 0,
        });
        return {
          status: 200,
          body: {
            value: {
              uploadUrlExpiresAt: Date.now() + 3600_000,
              uploadUrl: `${ctx.base}/dms-uploads/image/${encodeURIComponent(urn)}`,
              image: urn,
            },
          },
        };
      }
      const size = r.fileSizeBytes;
      if (typeof size !== 'number' || size <= 0)
        return li(
          422,
          'ERROR :: /initializeUploadRequest/fileSizeBytes :: field is required but not found and has no default value',
        );
      const PART = 4 * 1024 * 1024;
      const parts = [];
      for (let first = 0, i = 0; first < size; first += PART, i++) {
        parts.push({
          firstByte: first,
          lastByte: Math.min(size, first + PART) - 1,
          etag: `/ambry-video/signedId/${createHash('md5').update(`${urn}${i}`).digest('hex')}`,
          data: null,
        });
      }
      const uploadToken = parts.length > 1 ? `token-${next()}` : '';
      fake.assets.set(urn, {
        urn,
        kind,
        owner: r.owner,
        bytes: Buffer.alloc(0),
        status: 'WAITING_UPLOAD',
        pollsLeft: fake.processingPolls,
        parts,
        uploadToken,
        fileSizeBytes: size,
      });
      return {
        status: 200,
        body: {
          value: {
            uploadUrlsExpireAt: Date.now() + 3600_000,
            video: urn,
            uploadInstructions: parts.map((p, i) => ({
              uploadUrl: `${ctx.base}/dms-uploads/video/${encodeURIComponent(urn)}/part/${i}`,
              firstByte: p.firstByte,
              lastByte: p.lastByte,
            })),
            uploadToken,
          },
        },
      };
    }

    if (req.method === 'POST' && req.path === '/rest/videos' && action === 'finalizeUpload') {
      const r = (
        (req.json ?? {}) as {
          finalizeUploadRequest?: { video?: string; uploadToken?: string; uploadedPartIds?: string[] };
        }
      ).finalizeUploadRequest;
      const a = fake.assets.get(r?.video ?? '');
      if (!a) return li(404, `Video ${r?.video} not found`);
      if ((r?.uploadToken ?? '') !== a.uploadToken) return li(400, 'Invalid uploadToken');
      const ids = r?.uploadedPartIds ?? [];
      if (ids.length !== a.parts.length || a.parts.some((p, i) => p.etag !== ids[i] || !p.data)) {
        return li(400, 'The uploadedPartIds do not match the uploaded parts');
      }
      a.bytes = Buffer.concat(a.parts.map((p) => p.data ?? Buffer.alloc(0)));
      a.status = fake.failVideoProcessing ? 'PROCESSING_FAILED' : 'PROCESSING';
      return { status: 200 };
    }

    const assetGet = /^\/rest\/(images|videos)\/(.+)$/.exec(req.path);
    if (req.method === 'GET' && assetGet) {
      const a = fake.assets.get(decodeURIComponent(assetGet[2] ?? ''));
      if (!a) return li(404, 'Not Found');
      if (a.status === 'PROCESSING') {
        if (a.pollsLeft > 0) a.pollsLeft--;
        else a.status = 'AVAILABLE';
      }
      return { status: 200, body: assetJson(a, ctx.base) };
    }

    if (req.method === 'POST' && req.path === '/rest/posts') {
      const b = (req.json ?? {}) as Record<string, unknown>;
      for (const field of ['author', 'lifecycleState', 'distribution', 'visibility'] as const) {
        if (b[field] === undefined)
          return li(422, `ERROR :: /${field} :: field is required but not found and has no default value`);
      }
      const author = String(b.author);
      if (!/^urn:li:(person|organization):[A-Za-z0-9_-]+$/.test(author))
        return li(422, `ERROR :: /author :: "${author}" is not a valid author URN`);
      if (!['PUBLIC', 'CONNECTIONS', 'LOGGED_IN'].includes(String(b.visibility)))
        return li(422, `ERROR :: /visibility :: Invalid value ${String(b.visibility)}`);
      const dist = b.distribution as { feedDistribution?: string };
      if (!['MAIN_FEED', 'NONE'].includes(String(dist.feedDistribution)))
        return li(422, 'ERROR :: /distribution/feedDistribution :: field is required');
      if (b.lifecycleState !== 'PUBLISHED' && b.lifecycleState !== 'DRAFT')
        return li(422, 'ERROR :: /lifecycleState :: Invalid value');
      const commentary = typeof b.commentary === 'string' ? b.commentary : '';
      if ([...commentary].length > 3000)
        return li(422, 'ERROR :: /commentary :: length of commentary exceeds 3000 characters');
      const content = b.content as
        | {
            media?: { id?: string; altText?: string };
            multiImage?: { images?: Array<{ id?: string; altText?: string }> };
          }
        | undefined;
      const refs = content?.media ? [content.media] : (content?.multiImage?.images ?? []);
      if (content?.multiImage && (refs.length < 2 || refs.length > 20))
        return li(422, 'ERROR :: /content/multiImage/images :: multiImage needs 2 to 20 images');
      const media: FakeLinkedInPost['media'] = [];
      for (const ref of refs) {
        const a = fake.assets.get(ref.id ?? '');
        if (!a) return li(422, `ERROR :: /content/media/id :: ${ref.id} does not exist`);
        if (a.status !== 'AVAILABLE')
          return li(422, `ERROR :: /content/media/id :: ${ref.id} is not AVAILABLE (${a.status})`);
        if (content?.multiImage && a.kind !== 'image')
          return li(422, 'ERROR :: /content/multiImage/images :: only images are allowed');
        media.push({ urn: a.urn, altText: ref.altText ?? null, bytes: a.bytes });
      }
      const text = display(commentary);
      if (fake.posts.some((p) => p.author === author && p.commentary === commentary && commentary !== '')) {
        const dup = fake.posts.find((p) => p.author === author && p.commentary === commentary);
        return {
          status: 422,
          body: {
            errorDetailType: 'com.linkedin.common.error.BadRequest',
            message: `com.linkedin.content.common.exception.BadRequestResponseException: Content is a duplicate of ${dup?.urn}`,
            errorDetails: {
              inputErrors: [{ description: 'Duplicate post is detected', input: {}, code: 'DUPLICATE_POST' }],
            },
            status: 422,
          },
        };
      }
      const urn = `urn:li:share:${next()}`;
      fake.posts.push({
        urn,
        author,
        commentary,
        text,
        visibility: String(b.visibility),
        body: b,
        createdAt: Date.now(),
        media,
      });
      return { status: 201, headers: { 'x-restli-id': urn, 'x-linkedin-id': urn } };
    }

    if (req.method === 'GET' && req.path === '/rest/posts' && req.query.get('q') === 'author') {
      if (!fake.canReadPosts) {
        return li(403, 'Not enough permissions to access: partnerApiPostsExternal.FINDER-author.20240501', {
          serviceErrorCode: 100,
          code: 'ACCESS_DENIED',
        });
      }
      const author = req.query.get('author') ?? '';
      const count = Math.min(100, Number(req.query.get('count') ?? 10));
      const elements = fake.posts
        .filter((p) => p.author === author)
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, count)
        .map((p) => ({
          id: p.urn,
          author: p.author,
          commentary: p.commentary,
          visibility: p.visibility,
          lifecycleState: 'PUBLISHED',
          createdAt: p.createdAt,
          publishedAt: p.createdAt,
          lastModifiedAt: p.createdAt,
          distribution: {
            feedDistribution: 'MAIN_FEED',
            targetEntities: [],
            thirdPartyDistributionChannels: [],
          },
          isReshareDisabledByAuthor: false,
        }));
      return {
        status: 200,
        body: { paging: { start: 0, count, links: [], total: elements.length }, elements },
      };
    }

    const social = /^\/rest\/socialMetadata\/(.+)$/.exec(req.path);
    if (req.method === 'GET' && social) {
      const urn = decodeURIComponent(social[1] ?? '');
      if (!fake.posts.some((p) => p.urn === urn)) return li(404, `Entity ${urn} not found`);
      const r = fake.reactions.get(urn) ?? { likes: 0, comments: 0 };
      return {
        status: 200,
        body: {
          entity: urn,
          reactionSummaries: r.likes
            ? {
                LIKE: { reactionType: 'LIKE', count: r.likes - 1 },
                PRAISE: { reactionType: 'PRAISE', count: 1 },
              }
            : {},
          commentsState: 'OPEN',
          commentSummary: { count: r.comments, topLevelCount: r.comments },
        },
      };
    }

    return null;
  }

  const fake: FakeLinkedIn = {
    name: 'linkedin',
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clients: new Map([['client-id', 'client-secret']]),
    assets: new Map(),
    posts: [],
    canReadPosts: true,
    processingPolls: 0,
    failVideoProcessing: false,
    minted: [],
    reactions: new Map(),
    reset() {
      seq = 0;
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.clients = new Map([['client-id', 'client-secret']]);
      fake.assets = new Map();
      fake.posts = [];
      fake.canReadPosts = true;
      fake.processingPolls = 0;
      fake.failVideoProcessing = false;
      fake.minted = [];
      fake.reactions = new Map();
    },
    handle,
  };
  return fake;
}
