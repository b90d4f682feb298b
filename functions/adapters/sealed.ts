import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { requireEnv } from '#shared/config';
import { lean } from '#shared/sdk';

// Envelope encryption for connection secrets: channel tokens, platform apps' client secrets,
// Mastodon instances' app secrets and connection sessions' in-flight grants. Each value gets a
// fresh data key from KMS (GenerateDataKey, AES-256) and is sealed locally with AES-256-GCM, so any
// size fits (KMS Encrypt takes 4 KiB). The encryption context (who the value belongs to) is bound
// twice: KMS will not open the data key under another context, and the GCM tag covers it as
// associated data, so a sealed value copied onto another channel or org does not open.

const kms = lean(new KMSClient({ maxAttempts: 3 }));
const KEY_ID = requireEnv('CONNECTION_SECRETS_KEY_ID');

export type SealContext = Record<string, string>;

/** What the table stores: the wrapped data key, the GCM nonce and tag, the ciphertext (base64). */
export interface Sealed {
  v: 1;
  key: string;
  iv: string;
  tag: string;
  data: string;
}

const aad = (context: SealContext) =>
  Buffer.from(JSON.stringify(Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));

export async function seal(context: SealContext, value: unknown): Promise<Sealed> {
  const res = await kms.send(
    new GenerateDataKeyCommand({ KeyId: KEY_ID, KeySpec: 'AES_256', EncryptionContext: context }),
  );
  if (!res.Plaintext || !res.CiphertextBlob) throw new Error('KMS returned no data key');
  const dataKey = Buffer.from(res.Plaintext);
  try {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', dataKey, iv);
    cipher.setAAD(aad(context));
    const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return {
      v: 1,
      key: Buffer.from(res.CiphertextBlob).toString('base64'),
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
  } finally {
    dataKey.fill(0);
  }
}

/** Opened values stay in this container's memory briefly: one KMS call per value, not per use. */
const cache = new Map<string, { value: unknown; until: number }>();
const CACHE_MS = 5 * 60_000;
const CACHE_MAX = 1000;
// Keyed by the context too: a sealed value copied under another context must miss and fail in KMS.
const cacheKey = (context: SealContext, sealed: Sealed) =>
  `${JSON.stringify(aad(context))}\u0000${sealed.data}`;

export async function open<T>(context: SealContext, sealed: Sealed): Promise<T> {
  const id = cacheKey(context, sealed);
  const hit = cache.get(id);
  if (hit && hit.until > Date.now()) return structuredClone(hit.value) as T;
  const res = await kms.send(
    new DecryptCommand({
      KeyId: KEY_ID,
      CiphertextBlob: Buffer.from(sealed.key, 'base64'),
      EncryptionContext: context,
    }),
  );
  if (!res.Plaintext) throw new Error('KMS returned no plaintext');
  const dataKey = Buffer.from(res.Plaintext);
  let value: T;
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(aad(context));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    const plain = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
    value = JSON.parse(plain.toString('utf8')) as T;
  } finally {
    dataKey.fill(0);
  }
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
  cache.set(id, { value: structuredClone(value), until: Date.now() + CACHE_MS });
  return value;
}

export const isSealed = (v: unknown): v is Sealed =>
  typeof v === 'object' &&
  v !== null &&
  (v as { v?: unknown }).v === 1 &&
  typeof (v as Sealed).data === 'string';

/** For tests: forget opened values. */
export function clearOpened(): void {
  cache.clear();
}
