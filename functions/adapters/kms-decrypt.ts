import { awsFetch, awsRegion, serviceEndpoint } from '#shared/aws-fetch';

// KMS Decrypt as one signed JSON call (the awsJson1_1 protocol the SDK speaks), without the KMS
// client (see shared/aws-fetch.ts): the generation functions open one sealed key per container.

export class KmsError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
    this.name = 'KmsError';
  }
}

/** The plaintext of a base64 ciphertext sealed under `context`. */
export async function kmsDecrypt(
  ciphertextBase64: string,
  context: Record<string, string>,
  deps?: Parameters<typeof awsFetch>[1],
): Promise<Uint8Array> {
  const region = await (deps?.region ?? awsRegion)();
  const url = serviceEndpoint('KMS', (suffix) => `kms.${region}.${suffix}`, region);
  const res = await awsFetch(
    {
      service: 'kms',
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'TrentService.Decrypt' },
      body: JSON.stringify({ CiphertextBlob: ciphertextBase64, EncryptionContext: context }),
    },
    deps,
  );
  const text = await res.text();
  let parsed: { Plaintext?: unknown; __type?: unknown; message?: unknown; Message?: unknown } = {};
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    // Not JSON: reported by status below.
  }
  if (!res.ok) {
    // __type is "AccessDeniedException" or "com.amazonaws.kms#InvalidCiphertextException".
    const type =
      String(parsed.__type ?? `HTTP ${res.status}`)
        .split('#')
        .pop() ?? '';
    throw new KmsError(type, `${type}: ${String(parsed.message ?? parsed.Message ?? text.slice(0, 200))}`);
  }
  if (typeof parsed.Plaintext !== 'string') throw new KmsError('NoPlaintext', 'KMS returned no plaintext');
  return new Uint8Array(Buffer.from(parsed.Plaintext, 'base64'));
}
