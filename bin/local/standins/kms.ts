import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AwsError, type JsonService, unknownOperation } from './http.ts';

// KMS (awsJson1.1, X-Amz-Target TrentService.*): Encrypt, Decrypt and GenerateDataKey.

const BLOB_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Symmetric KMS with one AES-256-GCM key. Blob: version | keyId length (u16) | keyId | iv | tag |
 * ciphertext. KeyId and the encryption context are the AAD: a blob opens only under both, as in KMS.
 */
export function createKms(key: Buffer): JsonService {
  const aad = (keyId: string, context: unknown) => {
    const entries = Object.entries((context ?? {}) as Record<string, string>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return Buffer.from(JSON.stringify([keyId, entries]));
  };
  const invalid = () => new AwsError('InvalidCiphertextException', 'the ciphertext is invalid');

  const encrypt = (keyId: string, plaintext: Buffer, context: unknown) => {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aad(keyId, context));
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
    const id = Buffer.from(keyId);
    const header = Buffer.alloc(3);
    header.writeUInt8(BLOB_VERSION, 0);
    header.writeUInt16BE(id.length, 1);
    return Buffer.concat([header, id, iv, cipher.getAuthTag(), ciphertext]).toString('base64');
  };

  return (op: string, body: Record<string, unknown>) => {
    if (op === 'GenerateDataKey') {
      const keyId = body.KeyId;
      if (typeof keyId !== 'string' || !keyId) throw new AwsError('ValidationException', 'KeyId is required');
      const bytes =
        body.KeySpec === 'AES_128' ? 16 : body.KeySpec === 'AES_256' ? 32 : Number(body.NumberOfBytes);
      if (!Number.isInteger(bytes) || bytes < 1 || bytes > 1024)
        throw new AwsError('ValidationException', 'Specify either KeySpec or NumberOfBytes');
      const dataKey = randomBytes(bytes);
      return {
        CiphertextBlob: encrypt(keyId, dataKey, body.EncryptionContext),
        Plaintext: dataKey.toString('base64'),
        KeyId: keyId,
      };
    }
    if (op === 'Encrypt') {
      const keyId = body.KeyId;
      if (typeof keyId !== 'string' || !keyId) throw new AwsError('ValidationException', 'KeyId is required');
      const plaintext = Buffer.from(String(body.Plaintext ?? ''), 'base64');
      if (plaintext.length < 1 || plaintext.length > 4096)
        throw new AwsError(
          'ValidationException',
          "1 validation error detected: Value at 'plaintext' failed to satisfy constraint: Member must have length between 1 and 4096",
        );
      return {
        CiphertextBlob: encrypt(keyId, plaintext, body.EncryptionContext),
        KeyId: keyId,
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    }
    if (op === 'Decrypt') {
      const blob = Buffer.from(String(body.CiphertextBlob ?? ''), 'base64');
      if (blob.length < 3 || blob.readUInt8(0) !== BLOB_VERSION) throw invalid();
      const idEnd = 3 + blob.readUInt16BE(1);
      if (blob.length < idEnd + IV_BYTES + TAG_BYTES) throw invalid();
      const keyId = blob.subarray(3, idEnd).toString();
      if (typeof body.KeyId === 'string' && body.KeyId !== keyId)
        throw new AwsError('IncorrectKeyException', 'the ciphertext was not encrypted under this KeyId');
      const decipher = createDecipheriv('aes-256-gcm', key, blob.subarray(idEnd, idEnd + IV_BYTES));
      decipher.setAAD(aad(keyId, body.EncryptionContext));
      decipher.setAuthTag(blob.subarray(idEnd + IV_BYTES, idEnd + IV_BYTES + TAG_BYTES));
      let plaintext: Buffer;
      try {
        plaintext = Buffer.concat([
          decipher.update(blob.subarray(idEnd + IV_BYTES + TAG_BYTES)),
          decipher.final(),
        ]);
      } catch {
        throw invalid();
      }
      return {
        Plaintext: plaintext.toString('base64'),
        KeyId: keyId,
        EncryptionAlgorithm: 'SYMMETRIC_DEFAULT',
      };
    }
    return unknownOperation(`TrentService.${op}`);
  };
}
