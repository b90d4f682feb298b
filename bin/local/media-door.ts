import type { IncomingMessage, ServerResponse } from 'node:http';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { LOCAL_REGION, type LocalCredentials } from './services.ts';

// The media part of the local front door, standing in for S3 presigned uploads and the CDN:
// - PUT /_uploads/<upload bucket>/<key>?X-Amz-…: s3rver does not verify signatures, so this checks
//   the upload ticket itself — the asset exists and is pending, the key is the ticket's, the
//   Content-Type (and signed Content-Length) are the ticket's, the ticket has not expired, and the
//   signature equals the one the presigner computes for those values — then stores the bytes.
// - GET /orgs/<org>/media/<med_id>/<name>: the media bucket's objects (assets and posters).

export interface LocalS3 {
  endpoint: string;
  /** The handlers' key: the expected signature of an upload is computed with it. */
  credentials: LocalCredentials;
  uploadBucket: string;
  mediaBucket: string;
}

interface PendingAsset {
  status: string;
  upload_key: string;
  content_type: string;
  size_bytes: number;
  expires_at: string;
}

type FindAsset = (orgId: string, mediaId: string) => Promise<PendingAsset | null>;

function s3Error(res: ServerResponse, status: number, code: string, message: string) {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/** X-Amz-Date (YYYYMMDDTHHMMSSZ) as a Date. */
function amzDate(value: string): Date | null {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return null;
  return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!));
}

export function createMediaDoor(config: LocalS3) {
  const s3 = new S3Client({
    endpoint: config.endpoint,
    region: LOCAL_REGION,
    credentials: config.credentials,
    forcePathStyle: true,
  });
  let findAsset: FindAsset | undefined;
  const lookup: FindAsset = async (orgId, mediaId) => {
    // Loaded on first use: the adapter reads TABLE_NAME, which the stack sets before serving.
    findAsset ??= (await import('#adapters/media')).getAsset as unknown as FindAsset;
    return findAsset(orgId, mediaId);
  };

  async function upload(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const prefix = `/_uploads/${config.uploadBucket}/`;
    if (req.method !== 'PUT' || !url.pathname.startsWith(prefix))
      return s3Error(res, 405, 'MethodNotAllowed', 'Uploads are PUT to a ticket’s upload_url.');
    const key = decodeURIComponent(url.pathname.slice(prefix.length));
    const [root, orgId, mediaId] = key.split('/');
    const asset = root === 'uploads' && orgId && mediaId ? await lookup(orgId, mediaId) : null;
    if (!asset || asset.upload_key !== key)
      return s3Error(res, 403, 'AccessDenied', 'No upload ticket for this key.');
    if (asset.status !== 'pending')
      return s3Error(res, 403, 'AccessDenied', 'The asset is no longer waiting for bytes.');
    const q = url.searchParams;
    const signedAt = amzDate(q.get('X-Amz-Date') ?? '');
    const expires = Number(q.get('X-Amz-Expires'));
    if (!signedAt || !Number.isInteger(expires) || expires <= 0)
      return s3Error(res, 403, 'AccessDenied', 'The upload_url is not a presigned URL.');
    const now = Date.now();
    if (now > signedAt.getTime() + expires * 1000 || now > Date.parse(asset.expires_at))
      return s3Error(res, 403, 'AccessDenied', 'Request has expired');
    const contentType = req.headers['content-type'] ?? '';
    if (contentType !== asset.content_type)
      return s3Error(res, 403, 'SignatureDoesNotMatch', 'Content-Type differs from the upload ticket’s.');
    const signedHeaders = (q.get('X-Amz-SignedHeaders') ?? '').split(';');
    const lengthSigned = signedHeaders.includes('content-length');
    const length = Number(req.headers['content-length']);
    if (lengthSigned && length !== asset.size_bytes)
      return s3Error(res, 403, 'SignatureDoesNotMatch', 'Content-Length differs from the upload ticket’s.');
    if (!Number.isInteger(length) || length < 0)
      return s3Error(res, 411, 'MissingContentLength', 'Send Content-Length.');
    // The signature the presigner makes for exactly these values must be the one presented.
    const expected = new URL(
      await getSignedUrl(
        s3,
        new PutObjectCommand({
          Bucket: config.uploadBucket,
          Key: key,
          ContentType: asset.content_type,
          ...(lengthSigned ? { ContentLength: asset.size_bytes } : {}),
        }),
        {
          expiresIn: expires,
          signingDate: signedAt,
          signableHeaders: new Set(['content-type', ...(lengthSigned ? ['content-length'] : [])]),
        },
      ),
    ).searchParams.get('X-Amz-Signature');
    if (!expected || expected !== q.get('X-Amz-Signature'))
      return s3Error(res, 403, 'SignatureDoesNotMatch', 'The request signature does not match.');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const put = await s3.send(
      new PutObjectCommand({ Bucket: config.uploadBucket, Key: key, Body: body, ContentType: contentType }),
    );
    res.writeHead(200, { etag: put.ETag ?? '', 'content-length': 0 });
    res.end();
  }

  async function deliver(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return s3Error(res, 405, 'MethodNotAllowed', 'Media is read-only here.');
    const key = decodeURIComponent(url.pathname.slice(1));
    try {
      const obj = await s3.send(new GetObjectCommand({ Bucket: config.mediaBucket, Key: key }));
      const bytes = obj.Body ? Buffer.from(await obj.Body.transformToByteArray()) : Buffer.alloc(0);
      res.writeHead(200, {
        'content-type': obj.ContentType ?? 'application/octet-stream',
        'content-length': bytes.length,
        'cache-control': 'public, max-age=31536000, immutable',
      });
      res.end(req.method === 'HEAD' ? undefined : bytes);
    } catch (err) {
      const e = err as { name?: string };
      if (e.name === 'NoSuchKey' || e.name === 'NotFound')
        return s3Error(res, 404, 'NoSuchKey', 'The specified key does not exist.');
      throw err;
    }
  }

  /** Handles the request when it is a media one; false otherwise. */
  return async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = new URL(req.url ?? '/', 'http://local');
    if (url.pathname.startsWith('/_uploads/')) {
      await upload(req, res, url);
      return true;
    }
    if (/^\/orgs\/[^/]+\/media\//.test(url.pathname)) {
      await deliver(req, res, url);
      return true;
    }
    return false;
  };
}
