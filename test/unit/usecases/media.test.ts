import { Readable } from 'node:stream';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { handler as probeHandler } from '#handlers/probe-media';
import { completeMediaUpload } from '#usecases/complete-media-upload';
import { createMediaUpload } from '#usecases/create-media-upload';
import { listMedia } from '#usecases/list-media';
import { lambdaContext } from '../../../bin/local/front-door.ts';
import { fixedId, mediaAsset, mediaItem, ORG_ID, PNG_2x3 } from '../support/fixtures.ts';

// The media use cases against mocked DynamoDB and S3 (the ffmpeg tools mocked too): tickets, the
// 404/409/400 cases, the ready no-op and the lost race of concurrent completes.

const tools = vi.hoisted(() => ({
  ffprobe: vi.fn(),
  posterFrame: vi.fn(),
}));
vi.mock('#adapters/media-tools', async (orig) => ({
  ...(await orig<typeof import('#adapters/media-tools')>()),
  ffprobe: tools.ffprobe,
  posterFrame: tools.posterFrame,
}));

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const lambda = mockClient(LambdaClient);
/** What completeMediaUpload asked the probe function (the payloads of its invocations). */
const probeRequests = () =>
  lambda
    .commandCalls(InvokeCommand)
    .map((c) => JSON.parse(Buffer.from(c.args[0].input.Payload as Uint8Array).toString()));
/** The probe function's real handler answers (with the tools mocked), as Lambda would run it. */
function runProbeFunction() {
  lambda
    .on(InvokeCommand, { FunctionName: 'probeMedia' })
    .callsFake(async (input: { Payload: Uint8Array }) => {
      const answer = await probeHandler(
        JSON.parse(Buffer.from(input.Payload).toString()),
        lambdaContext('probeMedia', 'unit', 27_000),
      );
      return { StatusCode: 200, Payload: new Uint8Array(Buffer.from(JSON.stringify(answer))) };
    });
}
const gate = { admitted: vi.fn(async () => undefined) };
const NOW = new Date('2030-01-01T00:00:00.000Z');
const MED = fixedId('media', 1);

/** An S3 body: a stream (downloads) that also answers transformToByteArray (ranged reads). */
const body = (bytes: Uint8Array) =>
  Object.assign(Readable.from([Buffer.from(bytes)]), { transformToByteArray: async () => bytes }) as never;

beforeEach(() => {
  ddb.reset();
  s3.reset();
  lambda.reset();
  runProbeFunction();
  gate.admitted.mockClear();
  tools.ffprobe.mockReset();
  tools.posterFrame.mockReset();
});
afterEach(() => vi.restoreAllMocks());

describe('createMediaUpload', () => {
  it('creates a pending asset and a presigned PUT bound to key, type and length, 15 minutes', async () => {
    ddb.on(PutCommand).resolves({});
    const t = await createMediaUpload(
      ORG_ID,
      { filename: 'My Photo.PNG', content_type: 'image/png', size_bytes: 1234 },
      NOW,
      gate,
    );
    expect(t.method).toBe('PUT');
    expect(t.expires_at).toBe('2030-01-01T00:15:00.000Z');
    const url = new URL(t.upload_url);
    expect(url.pathname).toContain(`/uploads/${ORG_ID}/${t.asset_id}/My-Photo.PNG`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('900');
    expect(url.searchParams.get('X-Amz-SignedHeaders')).toBe('content-length;content-type;host');
    const put = ddb.commandCalls(PutCommand)[0]?.args[0].input;
    expect(put?.Item).toMatchObject({
      status: 'pending',
      kind: 'image',
      size_bytes: 1234,
      url: `https://media.example/orgs/${ORG_ID}/media/${t.asset_id}/My-Photo.PNG`,
    });
    expect(put?.ConditionExpression).toBe('attribute_not_exists(pk)');
    expect(gate.admitted).toHaveBeenCalled();
  });

  it.each([
    [{ filename: 'a.tiff', content_type: 'image/tiff' }, '/content_type'],
    [{ filename: 'a.gif', content_type: 'image/png' }, '/filename'],
    [{ filename: 'noext', content_type: 'image/png' }, '/filename'],
    [{ filename: 'a.png', content_type: 'image/png', size_bytes: 20 * 1024 * 1024 + 1 }, '/size_bytes'],
    [{ filename: 'a.mp3', content_type: 'audio/mpeg', size_bytes: 201 * 1024 * 1024 }, '/size_bytes'],
  ])('refuses %o at %s without writing', async (input, pointer) => {
    await expect(createMediaUpload(ORG_ID, input, NOW, gate)).rejects.toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ pointer })],
    });
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });
});

describe('completeMediaUpload', () => {
  it('404 for an unknown id or another organization', async () => {
    ddb.on(GetCommand).resolves({});
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      code: 'resource_not_found',
    });
    await expect(completeMediaUpload(ORG_ID, 'nope', NOW, gate)).rejects.toMatchObject({
      code: 'resource_not_found',
    });
  });

  it('a ready asset is returned as it is, nothing probed', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(mediaAsset({ status: 'ready', size_bytes: 33 })) });
    const a = await completeMediaUpload(ORG_ID, MED, NOW, gate);
    expect(a).toMatchObject({ id: MED, status: 'ready', size_bytes: 33 });
    expect(s3.calls()).toHaveLength(0);
  });

  it('409 after the ticket expired, and before the bytes arrived', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(mediaAsset()) });
    await expect(
      completeMediaUpload(ORG_ID, MED, new Date('2030-01-01T00:15:00.001Z'), gate),
    ).rejects.toMatchObject({ code: 'resource_conflict' });
    s3.on(HeadObjectCommand).rejects(Object.assign(new Error('NotFound'), { name: 'NotFound' }));
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      code: 'resource_conflict',
    });
  });

  it('400 content_mismatch when the bytes are not the claimed type; nothing written', async () => {
    ddb
      .on(GetCommand)
      .resolves({ Item: mediaItem(mediaAsset({ content_type: 'image/jpeg', filename: 'a.jpg' })) });
    s3.on(HeadObjectCommand).resolves({ ContentLength: PNG_2x3.length });
    s3.on(GetObjectCommand).resolves({ Body: body(PNG_2x3) });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      code: 'validation_failed',
      errors: [expect.objectContaining({ pointer: '/content_type', code: 'content_mismatch' })],
    });
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(0);
  });

  it('an image: ranged read, dimensions, copy to the media bucket, conditional ready, upload removed', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(mediaAsset()) });
    s3.on(HeadObjectCommand).resolves({ ContentLength: PNG_2x3.length });
    s3.on(GetObjectCommand).resolves({ Body: body(PNG_2x3) });
    ddb.on(UpdateCommand).callsFake((input) => ({
      Attributes: { ...mediaItem(mediaAsset()), ...valuesOf(input), status: 'ready' },
    }));
    const a = await completeMediaUpload(ORG_ID, MED, NOW, gate);
    expect(a).toMatchObject({
      status: 'ready',
      width: 2,
      height: 3,
      size_bytes: PNG_2x3.length,
      poster_url: null,
    });
    expect(s3.commandCalls(GetObjectCommand)[0]?.args[0].input.Range).toBe(`bytes=0-${PNG_2x3.length - 1}`);
    expect(s3.commandCalls(CopyObjectCommand)[0]?.args[0].input).toMatchObject({
      Bucket: 'herald-test-media',
      Key: `orgs/${ORG_ID}/media/${MED}/a.png`,
      CopySource: `herald-test-uploads/uploads/${ORG_ID}/${MED}/a.png`,
    });
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input.ConditionExpression).toBe('#s = :pending');
    expect(s3.commandCalls(DeleteObjectCommand)).toHaveLength(1);
    expect(tools.ffprobe).not.toHaveBeenCalled();
  });

  it('a video: ffprobe metadata and a poster stored next to it', async () => {
    const mp4Head = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12)]);
    const video = mediaAsset({ kind: 'video', content_type: 'video/mp4', filename: 'v.mp4' });
    ddb.on(GetCommand).resolves({ Item: mediaItem(video) });
    s3.on(HeadObjectCommand).resolves({ ContentLength: mp4Head.length });
    s3.on(GetObjectCommand).callsFake(() => ({ Body: body(mp4Head) }));
    tools.ffprobe.mockResolvedValue({
      durationSec: 2.5,
      width: 320,
      height: 240,
      hasVideo: true,
      hasAudio: true,
    });
    tools.posterFrame.mockImplementation(async (_in: string, out: string) => {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(out, Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
      return out;
    });
    ddb.on(UpdateCommand).callsFake((input) => ({
      Attributes: { ...mediaItem(video), ...valuesOf(input), status: 'ready' },
    }));
    const a = await completeMediaUpload(ORG_ID, MED, NOW, gate);
    expect(a).toMatchObject({
      status: 'ready',
      width: 320,
      height: 240,
      duration_sec: 2.5,
      poster_url: `https://media.example/orgs/${ORG_ID}/media/${MED}/_poster.jpg`,
    });
    expect(s3.commandCalls(PutObjectCommand)[0]?.args[0].input).toMatchObject({
      Key: `orgs/${ORG_ID}/media/${MED}/_poster.jpg`,
      ContentType: 'image/jpeg',
    });
  });

  it('asks the probe function for the upload and the poster key only, and trusts no other answer', async () => {
    const mp4Head = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12)]);
    const video = mediaAsset({ kind: 'video', content_type: 'video/mp4', filename: 'v.mp4' });
    ddb.on(GetCommand).resolves({ Item: mediaItem(video) });
    s3.on(HeadObjectCommand).resolves({ ContentLength: mp4Head.length });
    s3.on(GetObjectCommand).callsFake(() => ({ Body: body(mp4Head) }));
    const answer = (payload: unknown, extra: Record<string, unknown> = {}) =>
      lambda.on(InvokeCommand).resolves({
        StatusCode: 200,
        Payload: new Uint8Array(Buffer.from(JSON.stringify(payload))) as never,
        ...extra,
      });

    answer({ ok: true, width: 1, height: 1, duration_sec: 1, poster_key: 'orgs/x/media/y/_poster.jpg' });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toThrow(/poster key it was not given/);
    expect(probeRequests()[0]).toEqual({
      upload_key: video.upload_key,
      content_type: 'video/mp4',
      poster_key: `orgs/${ORG_ID}/media/${MED}/_poster.jpg`,
    });
    answer({ ok: true, width: 'wide' });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toThrow(/out of contract/);
    answer({ errorMessage: 'ffprobe timed out' }, { FunctionError: 'Unhandled' });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toThrow(/probeMedia failed: Unhandled/);
    answer({ ok: false, message: 'The file has no video stream.' });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      code: 'validation_failed',
    });
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(0);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('the probe function refuses a request outside its contract (another bucket prefix, a non-poster key)', async () => {
    const ctx = lambdaContext('probeMedia', 'unit', 27_000);
    const ok = { upload_key: `uploads/${ORG_ID}/${MED}/v.mp4`, content_type: 'video/mp4', poster_key: null };
    await expect(probeHandler({ ...ok, upload_key: 'queue-bodies/x/y/z' }, ctx)).rejects.toThrow(
      /invalid request: upload_key/,
    );
    await expect(
      probeHandler({ ...ok, poster_key: `orgs/${ORG_ID}/media/${MED}/v.mp4` }, ctx),
    ).rejects.toThrow(/invalid request: poster_key/);
    await expect(probeHandler({ ...ok, content_type: 'image/png' }, ctx)).rejects.toThrow(
      /invalid request: content_type/,
    );
    expect(s3.calls()).toHaveLength(0);
    expect(tools.ffprobe).not.toHaveBeenCalled();
  });

  it('an audio claim over a file with video is a mismatch', async () => {
    const mp4Head = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.alloc(12)]);
    ddb.on(GetCommand).resolves({
      Item: mediaItem(mediaAsset({ kind: 'audio', content_type: 'audio/mp4', filename: 'a.m4a' })),
    });
    s3.on(HeadObjectCommand).resolves({ ContentLength: mp4Head.length });
    s3.on(GetObjectCommand).callsFake(() => ({ Body: body(mp4Head) }));
    tools.ffprobe.mockResolvedValue({
      durationSec: 2,
      width: 320,
      height: 240,
      hasVideo: true,
      hasAudio: true,
    });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject({
      code: 'validation_failed',
    });
  });

  it('a concurrent complete that lost the conditional write answers the ready asset', async () => {
    ddb
      .on(GetCommand)
      .resolvesOnce({ Item: mediaItem(mediaAsset()) })
      .resolves({ Item: mediaItem(mediaAsset({ status: 'ready', width: 2, height: 3 })) });
    s3.on(HeadObjectCommand).resolves({ ContentLength: PNG_2x3.length });
    s3.on(GetObjectCommand).resolves({ Body: body(PNG_2x3) });
    ddb
      .on(UpdateCommand)
      .rejects(Object.assign(new Error('conditional'), { name: 'ConditionalCheckFailedException' }));
    const a = await completeMediaUpload(ORG_ID, MED, NOW, gate);
    expect(a).toMatchObject({ status: 'ready', width: 2 });
    expect(s3.commandCalls(DeleteObjectCommand)).toHaveLength(0);
  });
});

describe('listMedia', () => {
  it('queries MEDIA# newest first and pages with a signed cursor', async () => {
    const items = [3, 2, 1].map((n) => mediaItem(mediaAsset({ id: fixedId('media', n) })));
    ddb.on(QueryCommand).resolves({ Items: items });
    const page = await listMedia(ORG_ID, { limit: 2 }, 'secret');
    expect(page.data.map((a) => a.id)).toEqual([fixedId('media', 3), fixedId('media', 2)]);
    expect(page.has_more).toBe(true);
    const input = ddb.commandCalls(QueryCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ ScanIndexForward: false, Limit: 3 });
    expect(input?.ExpressionAttributeValues).toMatchObject({ ':prefix': 'MEDIA#' });
    await listMedia(ORG_ID, { limit: 2, after: page.next_cursor ?? '' }, 'secret');
    expect(ddb.commandCalls(QueryCommand)[1]?.args[0].input.ExclusiveStartKey).toEqual(
      keys.media(ORG_ID, fixedId('media', 2)),
    );
    await expect(listMedia('org_other', { after: page.next_cursor ?? '' }, 'secret')).rejects.toMatchObject({
      code: 'invalid_request',
    });
  });
});

function valuesOf(input: { ExpressionAttributeValues?: Record<string, unknown> }) {
  const v = input.ExpressionAttributeValues ?? {};
  return {
    size_bytes: v[':size'],
    width: v[':w'],
    height: v[':h'],
    duration_sec: v[':d'],
    poster_url: v[':pu'],
    poster_key: v[':pk'],
  };
}

describe('the largest upload: what a delivery can send', () => {
  const GiB = 1024 ** 3;
  const refusal = {
    code: 'validation_failed',
    status: 400,
    errors: [
      {
        pointer: '/size_bytes',
        code: 'too_large',
        message:
          'video/mp4 uploads are limited to 1 GiB (1073741824 bytes), the largest file a delivery sends.',
      },
    ],
  };

  it('createMediaUpload: a declared size over the limit is refused with the limit, nothing written', async () => {
    await expect(
      createMediaUpload(
        ORG_ID,
        { filename: 'big.mp4', content_type: 'video/mp4', size_bytes: GiB + 1 },
        NOW,
        gate,
      ),
    ).rejects.toMatchObject(refusal);
    expect(ddb.commandCalls(PutCommand)).toHaveLength(0);
  });

  it('completeMediaUpload: an uploaded object over the limit (no size declared) is refused the same way, nothing read', async () => {
    const asset = mediaAsset({ kind: 'video', content_type: 'video/mp4', filename: 'big.mp4' });
    ddb.on(GetCommand).resolves({ Item: mediaItem(asset) });
    s3.on(HeadObjectCommand).resolves({ ContentLength: GiB + 1, ContentType: 'video/mp4' });
    await expect(completeMediaUpload(ORG_ID, MED, NOW, gate)).rejects.toMatchObject(refusal);
    expect(s3.commandCalls(GetObjectCommand)).toHaveLength(0);
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(0);
  });

  it('exactly 1 GiB is accepted', async () => {
    ddb.on(PutCommand).resolves({});
    const t = await createMediaUpload(
      ORG_ID,
      { filename: 'big.mp4', content_type: 'video/mp4', size_bytes: GiB },
      NOW,
      gate,
    );
    expect(t.method).toBe('PUT');
  });
});
