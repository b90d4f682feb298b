import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  CopyObjectCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, ValidationError } from '#core/errors';
import type { MediaAssetRecord } from '#core/media';
import { deleteMedia } from '#usecases/delete-media';
import { getMedia } from '#usecases/get-media';
import { importMedia, SAFETY_DELAY_SECONDS } from '#usecases/import-media';
import { failImport, finishImport } from '#usecases/media-import-worker';
import { fixedId, mediaAsset, mediaItem, ORG_ID, PNG_2x3 } from '../support/fixtures.ts';

// importMedia, its worker and its dead-letter consumer, getMedia and deleteMedia against mocked
// DynamoDB, S3 and SQS, fetching from a loopback server: the order that makes a crash safe (the
// message before the record), a refusal leaving nothing, the worker's idempotency.

const ddb = mockClient(DynamoDBDocumentClient);
const s3 = mockClient(S3Client);
const sqs = mockClient(SQSClient);
const gate = { admitted: vi.fn(async () => undefined) };
const NOW = new Date('2030-01-01T00:00:00.000Z');
const MED = fixedId('media', 1);

let origin = '';
let server: http.Server;
/** What the loopback server answers, by path. */
const routes: Record<string, (res: http.ServerResponse) => void> = {
  '/a.png': (res) => res.end(Buffer.from(PNG_2x3)),
  '/page': (res) => res.end('<html><body>hi</body></html>'),
  // A PNG signature with a broken header: sniffed as PNG, refused by the probe.
  '/broken.png': (res) => res.end(Buffer.concat([Buffer.from(PNG_2x3.subarray(0, 8)), Buffer.alloc(40, 0)])),
};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const route = routes[req.url ?? ''];
    if (!route) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200);
    route(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The upload bucket's objects, as the mocked S3 stored them. */
const objects = new Map<string, Uint8Array>();
const putObject = (input: { Key: string; Body: Uint8Array }) => {
  order.push(`PutObject ${input.Key}`);
  objects.set(input.Key, new Uint8Array(input.Body));
  return {};
};
/** Every mocked call in the order it was made, as `<Command> <detail>`. */
const order: string[] = [];

beforeEach(() => {
  vi.stubEnv('MEDIA_IMPORT_QUEUE_URL', 'https://sqs.us-east-1.amazonaws.com/000000000000/herald-mediaImport');
  ddb.reset();
  s3.reset();
  sqs.reset();
  order.length = 0;
  gate.admitted.mockClear();
  sqs.on(SendMessageCommand).callsFake((input: { DelaySeconds?: number }) => {
    order.push(`SendMessage ${input.DelaySeconds}`);
    return {};
  });
  ddb.on(PutCommand).callsFake(() => {
    order.push('PutItem');
    return {};
  });
  ddb.on(DeleteCommand).callsFake((input: { ConditionExpression?: string }) => {
    order.push(`DeleteItem ${input.ConditionExpression ?? ''}`);
    return {};
  });
  objects.clear();
  s3.on(PutObjectCommand).callsFake(putObject);
  s3.on(DeleteObjectCommand).callsFake((input: { Bucket: string; Key: string }) => {
    order.push(`DeleteObject ${input.Bucket}/${input.Key}`);
    return {};
  });
  s3.on(CopyObjectCommand).resolves({});
  // Reads answer what was put (the probe reads the stored upload's first bytes).
  s3.on(GetObjectCommand).callsFake(async (input: { Key: string; Range?: string }) => {
    const bytes = objects.get(input.Key) ?? new Uint8Array();
    const [from, to] = (input.Range?.replace('bytes=', '').split('-') ?? []).map(Number);
    const slice = from === undefined ? bytes : bytes.subarray(from, (to ?? bytes.length - 1) + 1);
    return { Body: { transformToByteArray: async () => slice } as never };
  });
});

describe('importMedia', () => {
  it('sends the safety message before storing the record, then answers the ready asset (201)', async () => {
    ddb.on(UpdateCommand).callsFake((input: { ExpressionAttributeValues: Record<string, unknown> }) => ({
      Attributes: { status: 'ready', width: input.ExpressionAttributeValues[':w'] },
    }));
    const answer = await importMedia(ORG_ID, { url: `${origin}/a.png` }, NOW, gate);
    expect(answer.status).toBe(201);
    expect(gate.admitted).toHaveBeenCalled();
    expect(order.slice(0, 2)).toEqual([`SendMessage ${SAFETY_DELAY_SECONDS}`, 'PutItem']);
    const stored = ddb.commandCalls(PutCommand)[0]?.args[0].input.Item as MediaAssetRecord;
    expect(stored).toMatchObject({
      status: 'pending',
      content_type: 'image/png',
      filename: 'a.png',
      source_url: `${origin}/a.png`,
    });
    expect(order).toContain(`PutObject ${stored.upload_key}`);
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(1);
  });

  it('refuses an HTML page before anything is sent or stored', async () => {
    const err = await importMedia(ORG_ID, { url: `${origin}/page` }, NOW, gate).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).errors).toEqual([
      expect.objectContaining({ pointer: '/url', code: 'unsupported_media_type' }),
    ]);
    expect(order).toEqual([]);
  });

  it('refused by the probe after the record was stored: removes the objects and the record, 400', async () => {
    const err = await importMedia(ORG_ID, { url: `${origin}/broken.png` }, NOW, gate).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).errors).toEqual([
      expect.objectContaining({ pointer: '/url', code: 'content_mismatch' }),
    ]);
    const stored = ddb.commandCalls(PutCommand)[0]?.args[0].input.Item as MediaAssetRecord;
    expect(order).toContain(`DeleteObject herald-test-uploads/${stored.upload_key}`);
    expect(order).toContain(`DeleteObject herald-test-media/${stored.object_key}`);
    // Only while still pending: a background import that finished it is left alone.
    expect(order.at(-1)).toBe('DeleteItem #s = :s');
    expect(ddb.commandCalls(DeleteCommand)[0]?.args[0].input.ExpressionAttributeValues).toEqual({
      ':s': 'pending',
    });
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(0);
  });
});

describe('a request that stops after storing the record', () => {
  it('leaves the safety message, whose worker run finishes the import', async () => {
    // The request's upload fails the way a crash would stop it: after the record, before ready.
    s3.on(PutObjectCommand).rejectsOnce(new Error('connection reset')).callsFake(putObject);
    const err = await importMedia(ORG_ID, { url: `${origin}/a.png` }, NOW, gate).catch((e: unknown) => e);
    expect((err as Error).message).toBe('connection reset');
    const stored = ddb.commandCalls(PutCommand)[0]?.args[0].input.Item as MediaAssetRecord;
    const sent = sqs.commandCalls(SendMessageCommand).map((c) => c.args[0].input);
    expect(sent).toEqual([expect.objectContaining({ DelaySeconds: SAFETY_DELAY_SECONDS })]);
    expect(ddb.commandCalls(DeleteCommand)).toHaveLength(0); // not a refusal: the record stays pending

    // The message, 20 s later: the worker finds the pending asset and imports it.
    ddb.on(GetCommand).resolves({ Item: mediaItem(stored) });
    ddb.on(UpdateCommand).resolves({ Attributes: mediaItem({ ...stored, status: 'ready' }) });
    const message = JSON.parse(sent[0]?.MessageBody ?? '{}');
    expect(message).toEqual({ org_id: ORG_ID, media_id: stored.id });
    expect(await finishImport(message, NOW)).toBe('ready');
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(1);
  });
});

describe('the mediaImport worker', () => {
  const imported = (over: Partial<MediaAssetRecord> = {}) =>
    mediaAsset({ source_url: `${origin}/a.png`, ...over });

  it('does nothing for an asset that is gone, ready or failed (duplicate messages)', async () => {
    for (const item of [
      undefined,
      mediaItem(imported({ status: 'ready' })),
      mediaItem(imported({ status: 'failed' })),
    ]) {
      ddb.reset();
      ddb.on(GetCommand).resolves({ Item: item });
      expect(await finishImport({ org_id: ORG_ID, media_id: MED }, NOW)).toBe('skipped');
      expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
    }
    expect(s3.calls()).toHaveLength(0);
  });

  it('leaves an asset another run holds (its lease) without fetching', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(imported()) });
    ddb
      .on(UpdateCommand)
      .rejects(Object.assign(new Error('held'), { name: 'ConditionalCheckFailedException' }));
    expect(await finishImport({ org_id: ORG_ID, media_id: MED }, NOW)).toBe('skipped');
    expect(s3.calls()).toHaveLength(0);
  });

  it('marks a refused import failed with the reason and removes its objects', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(imported({ source_url: `${origin}/page` })) });
    ddb.on(UpdateCommand).resolves({});
    expect(await finishImport({ org_id: ORG_ID, media_id: MED }, NOW)).toBe('failed');
    const updates = ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(updates[0]?.UpdateExpression).toBe('SET import_lease_until = :until');
    expect(updates[1]?.ExpressionAttributeValues).toMatchObject({
      ':failed': 'failed',
      ':error': expect.stringMatching(/web page/),
    });
    expect(order.filter((c) => c.startsWith('DeleteObject'))).toHaveLength(2);
  });

  it('imports a pending asset it holds', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(imported()) });
    ddb.on(UpdateCommand).resolves({ Attributes: mediaItem(imported({ status: 'ready' })) });
    expect(await finishImport({ org_id: ORG_ID, media_id: MED }, NOW)).toBe('ready');
    expect(s3.commandCalls(CopyObjectCommand)).toHaveLength(1);
  });

  it('the dead-letter consumer ends a pending import failed, and leaves a ready one', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(imported()) });
    ddb.on(UpdateCommand).resolves({});
    expect(await failImport({ org_id: ORG_ID, media_id: MED }, NOW)).toBe(true);
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues).toMatchObject({
      ':failed': 'failed',
    });
    ddb.reset();
    ddb.on(GetCommand).resolves({ Item: mediaItem(imported({ status: 'ready' })) });
    expect(await failImport({ org_id: ORG_ID, media_id: MED }, NOW)).toBe(false);
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });
});

describe('getMedia and deleteMedia', () => {
  it('reads the asset under the caller organization only', async () => {
    ddb.on(GetCommand).resolves({});
    await expect(getMedia('org_other', MED)).rejects.toMatchObject({ code: 'resource_not_found' });
    expect(ddb.commandCalls(GetCommand)[0]?.args[0].input.Key).toEqual({
      pk: 'ORG#org_other',
      sk: `MEDIA#${MED}`,
    });
    await expect(getMedia(ORG_ID, 'not-an-id')).rejects.toMatchObject({ code: 'resource_not_found' });
  });

  it('refuses 409 while a scheduled post attaches the asset (also in a thread item), deleting nothing', async () => {
    const asset = mediaAsset({ status: 'ready' });
    ddb.on(GetCommand).resolves({ Item: mediaItem(asset) });
    ddb.on(QueryCommand).callsFake((input: { ExpressionAttributeValues: Record<string, string> }) => ({
      Items: input.ExpressionAttributeValues[':p']?.endsWith('#scheduled')
        ? [
            {
              id: 'post_other',
              variants: [{ media: [{ url: 'https://media.example/orgs/x/media/med_01HX/a.png' }] }],
            },
            { id: 'post_1', variants: [{ media: [], thread: [{ media: [{ url: asset.url }] }] }] },
          ]
        : [],
    }));
    const err = await deleteMedia(ORG_ID, MED, gate).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'resource_conflict', message: expect.stringContaining('post_1') });
    expect((err as Error).message).not.toContain('post_other');
    const statuses = ddb
      .commandCalls(QueryCommand)
      .map((c) => c.args[0].input.ExpressionAttributeValues?.[':p']);
    expect(statuses.sort()).toEqual([
      `ORG#${ORG_ID}#POSTS#needs_approval`,
      `ORG#${ORG_ID}#POSTS#publishing`,
      `ORG#${ORG_ID}#POSTS#scheduled`,
    ]);
    expect(s3.calls()).toHaveLength(0);
    expect(ddb.commandCalls(DeleteCommand)).toHaveLength(0);
  });

  it('deletes the objects first, then the record in the state it was read', async () => {
    const asset = mediaAsset({
      status: 'ready',
      kind: 'video',
      content_type: 'video/mp4',
      filename: 'a.mp4',
    });
    ddb.on(GetCommand).resolves({ Item: mediaItem(asset) });
    ddb.on(QueryCommand).resolves({ Items: [] });
    await deleteMedia(ORG_ID, MED, gate);
    expect(order).toEqual([
      `DeleteObject herald-test-uploads/${asset.upload_key}`,
      `DeleteObject herald-test-media/${asset.object_key}`,
      `DeleteObject herald-test-media/orgs/${ORG_ID}/media/${MED}/_poster.jpg`,
      'DeleteItem #s = :s',
    ]);
    expect(ddb.commandCalls(DeleteCommand)[0]?.args[0].input.ExpressionAttributeValues).toEqual({
      ':s': 'ready',
    });
  });

  it('refuses a pending import (the worker may be storing it)', async () => {
    ddb.on(GetCommand).resolves({ Item: mediaItem(mediaAsset({ source_url: 'https://x.example/a.png' })) });
    await expect(deleteMedia(ORG_ID, MED, gate)).rejects.toMatchObject({ code: 'resource_conflict' });
    expect(s3.calls()).toHaveLength(0);
  });
});
