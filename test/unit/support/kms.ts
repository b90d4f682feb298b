import { randomBytes } from 'node:crypto';
import {
  DecryptCommand,
  type DecryptCommandInput,
  GenerateDataKeyCommand,
  type GenerateDataKeyCommandInput,
  type KMSClient,
} from '@aws-sdk/client-kms';
import type { AwsClientStub } from 'aws-sdk-client-mock';

/**
 * KMS as envelope sealing (adapters/sealed.ts) uses it: GenerateDataKey answers a fresh 256-bit key
 * and a "wrapped" blob that records the encryption context; Decrypt unwraps it only under that same
 * context (InvalidCiphertextException otherwise), as KMS does.
 */
export function serveDataKeys(kms: AwsClientStub<KMSClient>): void {
  kms.on(GenerateDataKeyCommand).callsFake(dataKey);
  kms.on(DecryptCommand).callsFake(decrypt);
}

/** KMS's GenerateDataKey, as serveDataKeys answers it. */
export function dataKey(input: GenerateDataKeyCommandInput) {
  const key = randomBytes(32);
  const wrapped = Buffer.from(
    JSON.stringify({ key: key.toString('base64'), ctx: input.EncryptionContext ?? {} }),
  );
  return { Plaintext: new Uint8Array(key), CiphertextBlob: new Uint8Array(wrapped), KeyId: input.KeyId };
}

/** KMS's Decrypt, as serveDataKeys answers it. */
export function decrypt(input: DecryptCommandInput) {
  const { key, ctx } = JSON.parse(Buffer.from(input.CiphertextBlob as Uint8Array).toString()) as {
    key: string;
    ctx: Record<string, string>;
  };
  const same = (a: Record<string, string>, b: Record<string, string>) =>
    JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
  if (!same(ctx, input.EncryptionContext ?? {}))
    throw Object.assign(new Error('InvalidCiphertextException'), { name: 'InvalidCiphertextException' });
  return { Plaintext: new Uint8Array(Buffer.from(key, 'base64')) };
}
