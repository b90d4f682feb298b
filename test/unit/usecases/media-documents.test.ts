import { Readable } from 'node:stream';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  CopyObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { imageDimensions } from '#core/media-probe';
import { ProbeResponse } from '#core/probe-contract';
import { handler as probeHandler } from '#handlers/probe-media';
import { completeMediaUpload } from '#usecases/complete-media-upload';
import { lambdaContext } from '../../../bin/local/front-door.ts';
import { makePdf } from '../../support/media-samples.ts';
import { fixedId, mediaAsset, mediaItem, ORG_ID } from '../support/fixtures.ts';

// completeMediaUpload of a PDF against mocked DynamoDB and S3, with the probe function's real
// handler and its real PDF reader (a child process): what it asks, stores and refuses.

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const lambda = mockClient(LambdaClient);
const gate = { admitted: vi.fn(async () => undefined) };
const NOW = new Date('2030-01-01T00:00:00.000Z');
const MED = fixedId('media', 1);
const doc = mediaAsset({ kind: 'document', content_type: 'application/pdf', filename: 'deck.pdf' });

const body = (bytes: Uint8Array) =>
  Object.assign(Readable.from([Buffer.from(bytes)]), { transformToByteArray: async () => bytes }) as never;

const probeRequests = () =>
  lambda
    .commandCalls(InvokeCommand)
    .map((c) => JSON.parse(Buffer.from(c.args[0].input.Payload as Uint8Array).toString()));

function uploaded(pdf: Uint8Array) {
  ddb.on(GetCommand).resolves({ Item: mediaItem(doc) });
  s3.on(HeadObjectCommand).resolves({ ContentLength: pdf.length });
  s3.on(GetObjectCommand).callsFake((input: { Range?: string }) => {
    const range = /bytes=(\d+)-(\d+)/.exec(input.Range ?? '');
    return { Body: body(range ? pdf.subarray(Number(range[1]), Number(range[2]) + 1) : pdf) };
  });
}

beforeEach(() => {
  ddb.reset();
  s3.reset();
  lambda.reset();
  lambda
    .on(InvokeCommand, { FunctionName: 'probeMedia' })
    .callsFake(async (input: { Payload: Uint8Array }) => {
      const answer = await probeHandler(
        JSON.parse(Buffer.from(input.Payload).toString()),
        lambdaContext('probeMedia', 'unit', 27_000),
      );
      return { StatusCode: 200, Payload: new Uint8Array(Buffer.from(JSON.stringify(answer))) };
    });
});

describe('completeMediaUpload: documents', () => {
  it('asks the probe for the PDF and its poster key, stores the first page and marks it ready with page_count', async () => {
    uploaded(makePdf(7));
    ddb.on(UpdateCommand).callsFake((input: { ExpressionAttributeValues: Record<string, unknown> }) => {
      const v = input.ExpressionAttributeValues;
      return {
        Attributes: {
          ...mediaItem(doc),
          status: 'ready',
          size_bytes: v[':size'],
          poster_url: v[':pu'],
          poster_key: v[':pk'],
          page_count: v[':pc'],
        },
      };
    });

    const asset = await completeMediaUpload(ORG_ID, MED, NOW, gate);

    expect(probeRequests()).toEqual([
      {
        upload_key: doc.upload_key,
        content_type: 'application/pdf',
        poster_key: `orgs/${ORG_ID}/media/${MED}/_poster.jpg`,
      },
    ]);
    const update = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(update?.ExpressionAttributeValues).toMatchObject({ ':pc': 7, ':w': null, ':h': null, ':d': null });
    const poster = s3.commandCalls(PutObjectCommand)[0]?.args[0].input;
    expect(poster).toMatchObject({
      Key: `orgs/${ORG_ID}/media/${MED}/_poster.jpg`,
      ContentType: 'image/jpeg',
    });
    expect(imageDimensions(poster?.Body as Uint8Array)).toEqual({ width: 1224, height: 1584 });
    expect(asset).toMatchObject({ kind: 'document', status: 'ready', page_count: 7 });
    expect(asset.poster_url).toBe(`https://media.example/orgs/${ORG_ID}/media/${MED}/_poster.jpg`);
  });

  it('refuses 301 pages with too_many_pages, and writes nothing', async () => {
    uploaded(makePdf(301));
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      code: 'validation_failed',
      errors: [
        {
          pointer: '/content_type',
          code: 'too_many_pages',
          message: "The PDF has 301 pages; documents are limited to 300 pages (LinkedIn's limit).",
        },
      ],
    });
    expect(s3.commandCalls(PutObjectCommand)).toHaveLength(0);
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('refuses an encrypted PDF and a PDF whose body is garbage as content_mismatch', async () => {
    uploaded(makePdf(2, { encrypt: { userPassword: 'u', ownerPassword: 'o' } }));
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      errors: [
        expect.objectContaining({ code: 'content_mismatch', message: expect.stringMatching(/encrypted/) }),
      ],
    });
    // The header, then nothing a reader can use.
    uploaded(Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(2000, 0x41)]));
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      errors: [expect.objectContaining({ code: 'content_mismatch' })],
    });
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('the contract bounds what the probe may claim: at most 300 pages, whole numbers', () => {
    const ok = { ok: true, width: null, height: null, duration_sec: null, poster_key: null };
    expect(ProbeResponse.safeParse({ ...ok, page_count: 300 }).success).toBe(true);
    expect(ProbeResponse.safeParse({ ...ok, page_count: 301 }).success).toBe(false);
    expect(ProbeResponse.safeParse({ ...ok, page_count: 2.5 }).success).toBe(false);
    expect(ProbeResponse.safeParse({ ok: false, message: 'x', code: 'too_many_pages' }).success).toBe(true);
    expect(ProbeResponse.safeParse({ ok: false, message: 'x', code: 'other' }).success).toBe(false);
  });
});
