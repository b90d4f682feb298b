import { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';

// S3 behind the SDK's HTTP layer (the production client of `#shared/s3` with its retry strategy):
// HeadObject, ranged GetObject, CopyObject, PutObject and DeleteObject over in-memory buckets, and
// injected 503s (ServiceUnavailable / SlowDown) per operation — an outage lasts until `heal()`.

export type S3Operation = 'HeadObject' | 'GetObject' | 'CopyObject' | 'PutObject' | 'DeleteObject';

export interface S3Call {
  op: S3Operation;
  bucket: string;
  key: string;
  attempt: number;
  status: number;
}

interface S3Request {
  method: string;
  hostname: string;
  path: string;
  query?: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
}

type Obj = { bytes: Buffer; contentType: string };

export class FakeS3 {
  readonly objects = new Map<string, Obj>();
  readonly calls: S3Call[] = [];
  private faults: Array<{ op: S3Operation; code: string; left: number }> = [];

  install(client: S3Client): void {
    (client.config as unknown as { requestHandler: unknown }).requestHandler = {
      handle: (request: S3Request) => this.handle(request),
      updateHttpClientConfig: () => undefined,
      httpHandlerConfigs: () => ({}),
      destroy: () => undefined,
    };
  }

  reset(): void {
    this.objects.clear();
    this.calls.length = 0;
    this.faults = [];
  }

  put(bucket: string, key: string, bytes: Uint8Array, contentType: string): void {
    this.objects.set(`${bucket}/${key}`, { bytes: Buffer.from(bytes), contentType });
  }

  has(bucket: string, key: string): boolean {
    return this.objects.has(`${bucket}/${key}`);
  }

  /** The next `times` requests of `op` answer 503 with `code` (Infinity: until heal()). */
  unavailable(op: S3Operation, times = Number.POSITIVE_INFINITY, code = 'ServiceUnavailable'): void {
    this.faults.push({ op, code, left: times });
  }

  heal(): void {
    this.faults = [];
  }

  callsOf(op: S3Operation): S3Call[] {
    return this.calls.filter((c) => c.op === op);
  }

  private async handle(req: S3Request) {
    const bucket = req.hostname.split('.s3.')[0] as string;
    const key = decodeURIComponent(req.path.replace(/^\//, ''));
    const copySource = req.headers['x-amz-copy-source'];
    const op: S3Operation =
      req.method === 'HEAD'
        ? 'HeadObject'
        : req.method === 'GET'
          ? 'GetObject'
          : req.method === 'DELETE'
            ? 'DeleteObject'
            : copySource
              ? 'CopyObject'
              : 'PutObject';
    const attempt = Number(/attempt=(\d+)/.exec(req.headers['amz-sdk-request'] ?? '')?.[1] ?? 1);
    const answer = (status: number, headers: Record<string, string> = {}, body: Buffer = Buffer.alloc(0)) => {
      this.calls.push({ op, bucket, key, attempt, status });
      return { response: { statusCode: status, headers, body: Readable.from([body]) } };
    };
    const fault = this.faults.find((f) => f.op === op && f.left > 0);
    if (fault) {
      fault.left -= 1;
      if (fault.left <= 0) this.faults = this.faults.filter((f) => f !== fault);
      // HEAD answers carry no body; the others an S3 error document.
      return op === 'HeadObject'
        ? answer(503)
        : answer(
            503,
            { 'content-type': 'application/xml' },
            Buffer.from(
              `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${fault.code}</Code><Message>injected</Message></Error>`,
            ),
          );
    }
    const id = `${bucket}/${key}`;
    const obj = this.objects.get(id);
    const notFound = () =>
      op === 'HeadObject'
        ? answer(404)
        : answer(
            404,
            { 'content-type': 'application/xml' },
            Buffer.from(
              '<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
            ),
          );
    switch (op) {
      case 'HeadObject':
        return obj
          ? answer(200, { 'content-length': String(obj.bytes.length), 'content-type': obj.contentType })
          : notFound();
      case 'GetObject': {
        if (!obj) return notFound();
        const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
        const bytes = m ? obj.bytes.subarray(Number(m[1]), Number(m[2]) + 1) : obj.bytes;
        return answer(
          m ? 206 : 200,
          { 'content-length': String(bytes.length), 'content-type': obj.contentType },
          Buffer.from(bytes),
        );
      }
      case 'CopyObject': {
        const source = decodeURIComponent(String(copySource).replace(/^\//, ''));
        const from = this.objects.get(source);
        if (!from) return notFound();
        this.objects.set(id, {
          bytes: Buffer.from(from.bytes),
          contentType: req.headers['content-type'] ?? from.contentType,
        });
        return answer(
          200,
          { 'content-type': 'application/xml' },
          Buffer.from('<CopyObjectResult><ETag>"etag"</ETag></CopyObjectResult>'),
        );
      }
      case 'PutObject': {
        const body = req.body as Uint8Array | Buffer | undefined;
        this.objects.set(id, {
          bytes: Buffer.from(body ?? new Uint8Array()),
          contentType: req.headers['content-type'] ?? 'application/octet-stream',
        });
        return answer(200, { etag: '"etag"' });
      }
      case 'DeleteObject':
        this.objects.delete(id);
        return answer(204);
    }
  }
}
