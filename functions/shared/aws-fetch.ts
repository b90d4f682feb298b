import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentity, Checksum, SourceData } from '@smithy/types';
import { dynamo } from './clients.ts';

// One SigV4-signed HTTPS call to an AWS service, without that service's SDK client. For the few
// calls a function makes once (the generation function's S3 GET of one image, its KMS Decrypt of
// the model key): the S3 client alone is ≈ 125 KB of bundle with its checksum and XML middleware,
// paid at every cold start (BENCHMARKS.md, "AI generation"). The signer is the SDK's own
// (@smithy/signature-v4), and the credentials and region are those of the DynamoDB client that
// every function already holds, so a rotated role session is picked up the same way.

/** SHA-256 / HMAC-SHA256 over node:crypto, in the signer's Checksum shape. */
class Sha256 implements Checksum {
  private hash;
  constructor(secret?: SourceData) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytesOf(secret));
  }
  update(data: Uint8Array): void {
    this.hash.update(data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    throw new Error('Sha256.reset is not used by the signer');
  }
}

function bytesOf(data: SourceData): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}

export interface AwsCall {
  /** The signing name: `s3`, `kms`. */
  service: string;
  method: 'GET' | 'POST';
  url: URL;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

export interface AwsFetchDeps {
  credentials: () => Promise<AwsCredentialIdentity>;
  region: () => Promise<string>;
  fetch: typeof fetch;
  /** The signing time (tests pin it). */
  now: () => Date;
}

const DEFAULTS: AwsFetchDeps = {
  credentials: () => dynamo.config.credentials(),
  region: () => dynamo.config.region(),
  fetch: (input, init) => fetch(input, init),
  now: () => new Date(),
};

/** The region the DynamoDB client uses (the function's own). */
export const awsRegion = (): Promise<string> => DEFAULTS.region();

/**
 * The service's base URL: the SDK's own AWS_ENDPOINT_URL_<SERVICE> / AWS_ENDPOINT_URL when set (the
 * local stack's stand-ins), otherwise the regional endpoint.
 */
export function serviceEndpoint(envName: string, host: (suffix: string) => string, region: string): URL {
  const configured = process.env[`AWS_ENDPOINT_URL_${envName}`] ?? process.env.AWS_ENDPOINT_URL;
  if (configured) return new URL(configured);
  return new URL(`https://${host(region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com')}`);
}

/** Signs the call (SigV4, headers) and sends it; the answer is the caller's to read. */
export async function awsFetch(call: AwsCall, deps: Partial<AwsFetchDeps> = {}): Promise<Response> {
  const d = { ...DEFAULTS, ...deps };
  const signer = new SignatureV4({
    service: call.service,
    region: await d.region(),
    credentials: d.credentials,
    sha256: Sha256,
    // S3 signs the path as sent (each segment encoded once, by the caller); the others encode it again.
    uriEscapePath: call.service !== 's3',
    applyChecksum: true,
  });
  const query: Record<string, string> = {};
  call.url.searchParams.forEach((v, k) => {
    query[k] = v;
  });
  const signed = await signer.sign(
    {
      method: call.method,
      protocol: call.url.protocol,
      hostname: call.url.hostname,
      ...(call.url.port ? { port: Number(call.url.port) } : {}),
      path: call.url.pathname,
      query,
      headers: { host: call.url.host, ...call.headers },
      body: call.body,
    },
    { signingDate: d.now() },
  );
  const { host: _host, ...headers } = signed.headers;
  return d.fetch(call.url, {
    method: call.method,
    headers,
    ...(call.body !== undefined ? { body: call.body } : {}),
    ...(call.signal ? { signal: call.signal } : {}),
  });
}

/** An object key as an S3 path: each segment percent-encoded (RFC 3986 unreserved kept). */
export function s3Path(bucket: string | undefined, key: string): string {
  const enc = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${bucket === undefined ? '' : `/${enc(bucket)}`}/${key.split('/').map(enc).join('/')}`;
}
