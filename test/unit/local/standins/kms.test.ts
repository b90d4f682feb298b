import {
  DecryptCommand,
  EncryptCommand,
  GenerateDataKeyCommand,
  IncorrectKeyException,
  InvalidCiphertextException,
  KMSServiceException,
  ReEncryptCommand,
} from '@aws-sdk/client-kms';
import { describe, expect, it } from 'vitest';
import { failure, KEY_ID, kms, useStandins } from './fixture.ts';

// The KMS stand-in through the real SDK client: the exception classes are the ones AWS gives.

useStandins();

describe('KMS stand-in', () => {
  const encrypt = async (text: string, context?: Record<string, string>) =>
    (
      await kms.send(
        new EncryptCommand({ KeyId: KEY_ID, Plaintext: Buffer.from(text), EncryptionContext: context }),
      )
    ).CiphertextBlob as Uint8Array;

  it('decrypts what it encrypted, under the same context in any key order, without a KeyId', async () => {
    // Arrange
    const blob = await encrypt('platform token', { org: 'o1', purpose: 'oauth' });

    // Act
    const out = await kms.send(
      new DecryptCommand({ CiphertextBlob: blob, EncryptionContext: { purpose: 'oauth', org: 'o1' } }),
    );

    // Assert
    expect(Buffer.from(out.Plaintext ?? []).toString()).toBe('platform token');
    expect(out.KeyId).toBe(KEY_ID);
    expect(out.EncryptionAlgorithm).toBe('SYMMETRIC_DEFAULT');
    expect(Buffer.from(blob).includes(Buffer.from('platform token'))).toBe(false);
  });

  it.each([
    ['another context', { org: 'o2', purpose: 'oauth' }],
    ['no context', undefined],
  ])('refuses a blob under %s with InvalidCiphertextException', async (_, context) => {
    // Arrange
    const blob = await encrypt('platform token', { org: 'o1', purpose: 'oauth' });

    // Act
    const err = await failure(
      kms.send(new DecryptCommand({ CiphertextBlob: blob, EncryptionContext: context })),
    );

    // Assert
    expect(err).toBeInstanceOf(InvalidCiphertextException);
  });

  it('refuses a tampered or malformed blob with InvalidCiphertextException', async () => {
    // Arrange
    const blob = Buffer.from(await encrypt('platform token'));
    blob[blob.length - 1] = (blob.at(-1) as number) ^ 1;

    // Act
    const tampered = await failure(kms.send(new DecryptCommand({ CiphertextBlob: blob })));
    const garbage = await failure(kms.send(new DecryptCommand({ CiphertextBlob: Buffer.from('nonsense') })));

    // Assert
    expect(tampered).toBeInstanceOf(InvalidCiphertextException);
    expect(garbage).toBeInstanceOf(InvalidCiphertextException);
  });

  it('refuses to decrypt under a KeyId other than the one that encrypted', async () => {
    // Arrange
    const blob = await encrypt('platform token');

    // Act
    const err = await failure(kms.send(new DecryptCommand({ CiphertextBlob: blob, KeyId: 'alias/other' })));

    // Assert
    expect(err).toBeInstanceOf(IncorrectKeyException);
  });

  it('rejects a plaintext over 4096 bytes with ValidationException, as KMS does', async () => {
    // Act
    const err = await failure(
      kms.send(new EncryptCommand({ KeyId: KEY_ID, Plaintext: Buffer.alloc(4097, 1) })),
    );
    const atLimit = await kms.send(new EncryptCommand({ KeyId: KEY_ID, Plaintext: Buffer.alloc(4096, 1) }));

    // Assert
    expect(err).toBeInstanceOf(KMSServiceException);
    expect((err as Error).name).toBe('ValidationException');
    expect(atLimit.CiphertextBlob?.length).toBeGreaterThan(4096);
  });

  it('makes data keys (GenerateDataKey) that Decrypt opens only under the same context', async () => {
    // Act
    const made = await kms.send(
      new GenerateDataKeyCommand({
        KeyId: KEY_ID,
        KeySpec: 'AES_256',
        EncryptionContext: { channel_id: 'ch_1' },
      }),
    );
    const opened = await kms.send(
      new DecryptCommand({ CiphertextBlob: made.CiphertextBlob, EncryptionContext: { channel_id: 'ch_1' } }),
    );
    const other = await failure(
      kms.send(
        new DecryptCommand({
          CiphertextBlob: made.CiphertextBlob,
          EncryptionContext: { channel_id: 'ch_2' },
        }),
      ),
    );

    // Assert
    expect(made.Plaintext).toHaveLength(32);
    expect(Buffer.from(opened.Plaintext ?? []).equals(Buffer.from(made.Plaintext ?? []))).toBe(true);
    expect((other as Error).name).toBe('InvalidCiphertextException');
  });

  it('answers an operation it does not stand in for with UnknownOperationException', async () => {
    // Act
    const err = await failure(
      kms.send(new ReEncryptCommand({ CiphertextBlob: new Uint8Array(8), DestinationKeyId: KEY_ID })),
    );

    // Assert
    expect((err as Error).name).toBe('UnknownOperationException');
  });
});
