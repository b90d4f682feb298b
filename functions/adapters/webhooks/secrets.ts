import { DecryptCommand, EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { requireEnv } from '#shared/config';
import { lean } from '#shared/sdk';

// Signing secrets are sealed with a dedicated KMS key (locally: the KMS stand-in), bound to their
// endpoint by the encryption context, so a ciphertext copied onto another endpoint cannot be opened.

const kms = lean(new KMSClient({ maxAttempts: 3 }));
const KEY_ID = requireEnv('WEBHOOK_SECRETS_KEY_ID');

const context = (orgId: string, endpointId: string) => ({ org_id: orgId, endpoint_id: endpointId });

export async function sealSecret(orgId: string, endpointId: string, secret: string): Promise<string> {
  const res = await kms.send(
    new EncryptCommand({
      KeyId: KEY_ID,
      Plaintext: Buffer.from(secret, 'utf8'),
      EncryptionContext: context(orgId, endpointId),
    }),
  );
  if (!res.CiphertextBlob) throw new Error('KMS returned no ciphertext');
  return Buffer.from(res.CiphertextBlob).toString('base64');
}

/** Opened secrets stay in this container's memory for a few minutes: one KMS call per secret, not per delivery. */
const cache = new Map<string, { value: string; until: number }>();
// Keyed by the context too: a ciphertext copied onto another endpoint must miss and go to KMS.
const cacheKey = (orgId: string, endpointId: string, sealed: string) =>
  `${orgId}\u0000${endpointId}\u0000${sealed}`;
const CACHE_MS = 5 * 60_000;
const CACHE_MAX = 1000;

export async function openSecret(orgId: string, endpointId: string, sealed: string): Promise<string> {
  const key = cacheKey(orgId, endpointId, sealed);
  const hit = cache.get(key);
  if (hit && hit.until > Date.now()) return hit.value;
  const res = await kms.send(
    new DecryptCommand({
      KeyId: KEY_ID,
      CiphertextBlob: Buffer.from(sealed, 'base64'),
      EncryptionContext: context(orgId, endpointId),
    }),
  );
  if (!res.Plaintext) throw new Error('KMS returned no plaintext');
  const value = Buffer.from(res.Plaintext).toString('utf8');
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(key, { value, until: Date.now() + CACHE_MS });
  return value;
}
