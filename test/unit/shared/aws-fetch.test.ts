import { randomBytes } from 'node:crypto';
import { EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { describe, expect, it } from 'vitest';
import { KmsError, kmsDecrypt } from '#adapters/kms-decrypt';
import { awsFetch, s3Path } from '#shared/aws-fetch';
import { startAwsStandins } from '../../../bin/local/aws-standins.ts';

// The signed calls the generation function makes without SDK clients. The first case is AWS's own
// worked example of a header-signed S3 GET (the SigV4 documentation's "GET Object" with a Range):
// the same access key, time and request must give the same signature, byte for byte.

const EXAMPLE = {
  credentials: async () => ({
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  }),
  region: async () => 'us-east-1',
  now: () => new Date('2013-05-24T00:00:00Z'),
};

interface Sent {
  url: string;
  init: RequestInit;
}

function recorder(answer: () => Response) {
  const sent: Sent[] = [];
  const fetchImpl = (async (url: URL | string, init?: RequestInit) => {
    sent.push({ url: String(url), init: init ?? {} });
    return answer();
  }) as typeof fetch;
  return { sent, fetchImpl };
}

const headersOf = (s: Sent | undefined) => (s?.init.headers ?? {}) as Record<string, string>;

describe('awsFetch', () => {
  it("signs AWS's S3 GET example to its published signature", async () => {
    const r = recorder(() => new Response('0123456789'));
    await awsFetch(
      {
        service: 's3',
        method: 'GET',
        url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
        headers: { range: 'bytes=0-9' },
      },
      { ...EXAMPLE, fetch: r.fetchImpl },
    );
    expect(r.sent[0]?.url).toBe('https://examplebucket.s3.amazonaws.com/test.txt');
    expect(headersOf(r.sent[0])).toMatchObject({
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41',
      'x-amz-date': '20130524T000000Z',
      'x-amz-content-sha256': 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    });
    // fetch sets Host from the URL (the signed value); it is not sent as a header of ours.
    expect(headersOf(r.sent[0])).not.toHaveProperty('host');
  });

  it('carries a session token, signed', async () => {
    const r = recorder(() => new Response(''));
    await awsFetch(
      { service: 's3', method: 'GET', url: new URL('http://127.0.0.1:4569/b/k') },
      {
        ...EXAMPLE,
        credentials: async () => ({ ...(await EXAMPLE.credentials()), sessionToken: 'tok' }),
        fetch: r.fetchImpl,
      },
    );
    const h = headersOf(r.sent[0]);
    expect(h['x-amz-security-token']).toBe('tok');
    expect(h.authorization).toContain('x-amz-security-token');
  });
});

describe('s3Path', () => {
  it('encodes each segment once and keeps the slashes', () => {
    expect(s3Path(undefined, 'media/org_1/a b(1).png')).toBe('/media/org_1/a%20b%281%29.png');
    expect(s3Path('herald-media', 'k/é')).toBe('/herald-media/k/%C3%A9');
  });
});

describe('kmsDecrypt', () => {
  it('is one awsJson1_1 Decrypt call with the context, signed for kms', async () => {
    const r = recorder(() =>
      Response.json({ Plaintext: Buffer.from('sk-1').toString('base64'), KeyId: 'arn:aws:kms:k' }),
    );
    const plain = await kmsDecrypt(
      'YmxvYg==',
      { herald: 'ai-openai-key' },
      { ...EXAMPLE, fetch: r.fetchImpl },
    );
    expect(Buffer.from(plain).toString()).toBe('sk-1');
    const sent = r.sent[0];
    expect(sent?.init.method).toBe('POST');
    expect(JSON.parse(String(sent?.init.body))).toEqual({
      CiphertextBlob: 'YmxvYg==',
      EncryptionContext: { herald: 'ai-openai-key' },
    });
    expect(headersOf(sent)).toMatchObject({
      'content-type': 'application/x-amz-json-1.1',
      'x-amz-target': 'TrentService.Decrypt',
      authorization: expect.stringMatching(
        /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/20130524\/us-east-1\/kms\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-target, Signature=[0-9a-f]{64}$/,
      ),
    });
  });

  it('names the service error it was refused with', async () => {
    const r = recorder(() =>
      Response.json(
        { __type: 'com.amazonaws.kms#InvalidCiphertextException', message: 'bad blob' },
        { status: 400 },
      ),
    );
    const err = await kmsDecrypt('eA==', {}, { ...EXAMPLE, fetch: r.fetchImpl }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KmsError);
    expect(err).toMatchObject({
      type: 'InvalidCiphertextException',
      message: 'InvalidCiphertextException: bad blob',
    });
  });

  it("opens what the SDK's own KMS client sealed, at the local stack's KMS", async () => {
    const standins = await startAwsStandins({
      kmsKeyMaterial: randomBytes(32),
      stateMachines: [],
      log: () => {},
    });
    try {
      const kms = new KMSClient({ endpoint: standins.endpoint, region: 'us-east-1' });
      const sealed = await kms.send(
        new EncryptCommand({
          KeyId: 'alias/herald',
          Plaintext: Buffer.from('sk-local'),
          EncryptionContext: { herald: 'ai-openai-key' },
        }),
      );
      const ciphertext = Buffer.from(sealed.CiphertextBlob ?? []).toString('base64');
      process.env.AWS_ENDPOINT_URL_KMS = standins.endpoint;
      const plain = await kmsDecrypt(ciphertext, { herald: 'ai-openai-key' });
      expect(Buffer.from(plain).toString()).toBe('sk-local');
      // Another context does not open it.
      await expect(kmsDecrypt(ciphertext, { herald: 'other' })).rejects.toBeInstanceOf(KmsError);
    } finally {
      delete process.env.AWS_ENDPOINT_URL_KMS;
      await standins.stop();
    }
  });
});
