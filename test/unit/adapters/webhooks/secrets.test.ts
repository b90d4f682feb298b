import { DecryptCommand, EncryptCommand, InvalidCiphertextException, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { openSecret, sealSecret } from '#adapters/webhooks/secrets';

// Sealing binds a secret to its endpoint through the KMS encryption context; the per-container
// cache of opened secrets must not undo that binding.

const kms = mockClient(KMSClient);
const ORG = 'org_01JD0000000000000000000000';
const A = 'whe_01JD00000000000000000000AA';
const B = 'whe_01JD00000000000000000000BB';

beforeEach(() => {
  kms.reset();
  kms
    .on(EncryptCommand)
    .callsFake((input: { Plaintext: Uint8Array; EncryptionContext: Record<string, string> }) => ({
      CiphertextBlob: Buffer.from(
        JSON.stringify({ p: Buffer.from(input.Plaintext).toString(), c: input.EncryptionContext }),
      ),
    }));
  kms
    .on(DecryptCommand)
    .callsFake((input: { CiphertextBlob: Uint8Array; EncryptionContext: Record<string, string> }) => {
      const blob = JSON.parse(Buffer.from(input.CiphertextBlob).toString()) as {
        p: string;
        c: Record<string, string>;
      };
      if (JSON.stringify(blob.c) !== JSON.stringify(input.EncryptionContext))
        throw new InvalidCiphertextException({ message: 'context mismatch', $metadata: {} });
      return { Plaintext: Buffer.from(blob.p) };
    });
});

describe('webhook secrets', () => {
  it('seal with the endpoint as encryption context and the configured key', async () => {
    await sealSecret(ORG, A, 'whsec_a');
    const input = kms.commandCalls(EncryptCommand)[0]?.args[0].input;
    expect(input?.EncryptionContext).toEqual({ org_id: ORG, endpoint_id: A });
    expect(input?.KeyId).toBe(process.env.WEBHOOK_SECRETS_KEY_ID);
  });

  it('open from the cache only for the same endpoint: a copied ciphertext still goes to KMS and fails', async () => {
    const sealed = await sealSecret(ORG, A, 'whsec_a');
    expect(await openSecret(ORG, A, sealed)).toBe('whsec_a');
    expect(await openSecret(ORG, A, sealed)).toBe('whsec_a');
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(1);
    await expect(openSecret(ORG, B, sealed)).rejects.toBeInstanceOf(InvalidCiphertextException);
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(2);
  });
});
