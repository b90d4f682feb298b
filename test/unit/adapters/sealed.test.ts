import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { clearOpened, isSealed, open, seal } from '#adapters/sealed';
import { serveDataKeys } from '../support/kms.ts';

// Envelope encryption of connection secrets: a data key per value from KMS, AES-256-GCM here, the
// encryption context bound by KMS and by the GCM tag.

const kms = mockClient(KMSClient);

const CTX = { purpose: 'channel_credentials', org_id: 'org_1', channel_id: 'ch_1' };

beforeEach(() => {
  kms.reset();
  clearOpened();
  serveDataKeys(kms);
});

describe('seal / open', () => {
  it('round-trips a value of any size, with a fresh data key each time, and never stores the plaintext', async () => {
    // Arrange: larger than KMS Encrypt's 4 KiB.
    const value = { access_token: 'a'.repeat(6000), refresh_token: 'r', nested: { n: 1 } };

    // Act
    const sealed = await seal(CTX, value);
    const again = await seal(CTX, value);

    // Assert
    expect(isSealed(sealed)).toBe(true);
    expect(JSON.stringify(sealed)).not.toContain('aaaa');
    expect(sealed.key).not.toBe(again.key);
    expect(await open(CTX, sealed)).toEqual(value);
    expect(kms.commandCalls(GenerateDataKeyCommand)[0]?.args[0].input).toMatchObject({
      KeySpec: 'AES_256',
      EncryptionContext: CTX,
    });
  });

  it('does not open under another context (a sealed value copied to another channel)', async () => {
    const sealed = await seal(CTX, { access_token: 't' });
    await expect(open({ ...CTX, channel_id: 'ch_2' }, sealed)).rejects.toThrow();
  });

  it('refuses tampered data (the GCM tag)', async () => {
    const sealed = await seal(CTX, { access_token: 'token' });
    const data = Buffer.from(sealed.data, 'base64');
    data[0] = (data[0] ?? 0) ^ 1;
    await expect(open(CTX, { ...sealed, data: data.toString('base64') })).rejects.toThrow();
  });

  it('opens each sealed value once per container (then from memory), and a copy is not shared by reference', async () => {
    const sealed = await seal(CTX, { access_token: 't' });
    const first = await open<{ access_token: string }>(CTX, sealed);
    first.access_token = 'changed';
    const second = await open<{ access_token: string }>(CTX, sealed);
    expect(second.access_token).toBe('t');
    expect(kms.commandCalls(DecryptCommand)).toHaveLength(1);
  });
});
