import { awsFetch, awsRegion, s3Path, serviceEndpoint } from '#shared/aws-fetch';
import { requireEnv } from '#shared/config';

// One object of the media bucket read whole by a signed GET, without the S3 client (see
// shared/aws-fetch.ts): the generation function reads one probed image for `alt_text` and nothing
// else from S3. Everything else that touches media goes through media-store.ts.

/** Larger than any image the media rules accept: a guard, not a rule. */
const MAX_BYTES = 64 * 1024 * 1024;

export async function readMediaObject(key: string, signal?: AbortSignal): Promise<Uint8Array> {
  const bucket = requireEnv('HERALD_MEDIA_BUCKET');
  const region = await awsRegion();
  // Locally AWS_ENDPOINT_URL_S3 points at s3rver, which only understands path-style addresses.
  const pathStyle = Boolean(process.env.AWS_ENDPOINT_URL_S3 ?? process.env.AWS_ENDPOINT_URL);
  const base = serviceEndpoint('S3', (suffix) => `${bucket}.s3.${region}.${suffix}`, region);
  const url = new URL(s3Path(pathStyle ? bucket : undefined, key), base);
  const res = await awsFetch({ service: 's3', method: 'GET', url, ...(signal ? { signal } : {}) });
  if (!res.ok) {
    const text = await res.text().catch(() => '');
    const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1];
    throw new Error(`media object ${key}: S3 answered ${res.status}${code ? ` ${code}` : ''}`);
  }
  const length = Number(res.headers.get('content-length') ?? '0');
  if (length > MAX_BYTES) {
    await res.body?.cancel();
    throw new Error(`media object ${key}: ${length} bytes is over the ${MAX_BYTES}-byte read guard`);
  }
  return new Uint8Array(await res.arrayBuffer());
}
