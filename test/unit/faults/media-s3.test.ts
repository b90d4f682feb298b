import { beforeEach, describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { MediaAssetRecord } from '#core/media';
import { handler } from '#handlers/complete-media-upload';
import { s3 } from '#shared/s3';
import {
  apiEvent,
  apiKey,
  apiKeyItem,
  fixedId,
  type Item,
  jsonHeaders,
  jsonOf,
  lambdaContext,
  mediaAsset,
  mediaItem,
  ORG_ID,
  org,
  orgItem,
  PNG_2x3,
  problemOf,
} from '../support/fixtures.ts';
import { FakeS3 } from './support/s3.ts';
import { iso, refillRetryQuota, useWorld } from './support/world.ts';

// Fault injection, part 5: S3 unavailable while completeMediaUpload probes and promotes an upload,
// through the real handler (auth, admission, problem+json) and the production S3 client with its
// retries. While S3 fails: a 5xx problem for the client, the asset still `pending` exactly as it
// was, nothing in the media bucket. After S3 recovers, the same call completes it.

const world = useWorld({ platforms: false });
const { table } = world;
const bucket = new FakeS3();
bucket.install(s3);
const KEY = apiKey({ scopes: ['posts:write'] });
const UPLOADS = process.env.HERALD_UPLOAD_BUCKET as string;
const MEDIA = process.env.HERALD_MEDIA_BUCKET as string;
const MED = fixedId('media', 1);

const UPLOAD_KEY = `uploads/${ORG_ID}/${MED}/photo.png`;
const OBJECT_KEY = `orgs/${ORG_ID}/media/${MED}/photo.png`;

let pending: Item;

beforeEach(async () => {
  bucket.reset();
  await refillRetryQuota(s3);
  pending = mediaItem(
    mediaAsset({
      id: MED,
      filename: 'photo.png',
      size_bytes: PNG_2x3.length,
      expires_at: iso(15 * 60_000),
      created_at: iso(),
      updated_at: iso(),
    }),
  );
  table.seed(apiKeyItem(KEY), orgItem(org()), pending);
  bucket.put(UPLOADS, UPLOAD_KEY, PNG_2x3, 'image/png');
});

const complete = () =>
  handler(
    apiEvent('completeMediaUpload', { pathParameters: { id: MED }, headers: jsonHeaders(KEY), body: '{}' }),
    lambdaContext('completeMediaUpload'),
  );

const asset = () => table.get(keys.media(ORG_ID, MED));

/** The asset untouched, nothing promoted, the upload still there to retry from. */
function expectUntouched() {
  expect(asset()).toEqual(pending);
  expect(bucket.has(MEDIA, OBJECT_KEY)).toBe(false);
  expect(bucket.has(UPLOADS, UPLOAD_KEY)).toBe(true);
}

function expectReady(res: Awaited<ReturnType<typeof complete>>) {
  expect(res.statusCode).toBe(200);
  expect(jsonOf<MediaAssetRecord>(res)).toMatchObject({ id: MED, status: 'ready', width: 2, height: 3 });
  expect(asset()).toMatchObject({ status: 'ready', width: 2, height: 3, size_bytes: PNG_2x3.length });
  expect(bucket.has(MEDIA, OBJECT_KEY)).toBe(true);
  expect(bucket.has(UPLOADS, UPLOAD_KEY)).toBe(false);
}

function expectServerProblem(res: Awaited<ReturnType<typeof complete>>) {
  expect(res.statusCode).toBe(500);
  expect(res.headers['content-type']).toBe('application/problem+json');
  expect(problemOf(res)).toMatchObject({ code: 'internal_error', status: 500 });
  expect(res.body).not.toMatch(/S3|ServiceUnavailable|SlowDown|bucket/i);
}

describe('completeMediaUpload while S3 is unavailable', () => {
  it.each([
    ['GetObject (the ranged read of the head)', 'GetObject', 'ServiceUnavailable'],
    ['GetObject answering SlowDown', 'GetObject', 'SlowDown'],
    ['HeadObject', 'HeadObject', 'ServiceUnavailable'],
  ] as const)(
    '%s failing on every SDK attempt: a 5xx problem, the asset stays pending; the retry completes it',
    async (_what, op, code) => {
      // Arrange
      bucket.unavailable(op, Number.POSITIVE_INFINITY, code);

      // Act 1
      const failed = await complete();

      // Assert 1: the SDK tried 3 times; nothing changed.
      expectServerProblem(failed);
      expect(bucket.callsOf(op).map((c) => [c.attempt, c.status])).toEqual([
        [1, 503],
        [2, 503],
        [3, 503],
      ]);
      expectUntouched();

      // Act 2: S3 is back; the client retries.
      bucket.heal();
      const retried = await complete();

      // Assert 2
      expectReady(retried);
    },
  );

  it('a single 503 on GetObject: retried by the SDK inside the request, 200 at once', async () => {
    bucket.unavailable('GetObject', 1);

    const res = await complete();

    expectReady(res);
    expect(bucket.callsOf('GetObject').map((c) => [c.attempt, c.status])).toEqual([
      [1, 503],
      [2, 206],
    ]);
  });

  it('the promotion (CopyObject) failing: a 5xx problem, still pending, nothing in the media bucket; the retry completes it', async () => {
    bucket.unavailable('CopyObject');

    const failed = await complete();
    expectServerProblem(failed);
    expectUntouched();

    bucket.heal();
    expectReady(await complete());
    expect(bucket.callsOf('CopyObject').filter((c) => c.status === 200)).toHaveLength(1);
  });

  it('the upload cleanup (DeleteObject) failing after the asset was made ready: 200, and a retry answers the same', async () => {
    // The asset is consistent (ready, promoted); only the clean-up of the upload failed, which the
    // bucket's lifecycle rule finishes: the client gets its ready asset, not a 500.
    bucket.unavailable('DeleteObject');

    const first = await complete();
    expect(first.statusCode).toBe(200);
    expect(jsonOf<MediaAssetRecord>(first)).toMatchObject({ status: 'ready', width: 2, height: 3 });
    expect(asset()).toMatchObject({ status: 'ready', width: 2, height: 3 });
    expect(bucket.has(MEDIA, OBJECT_KEY)).toBe(true);

    bucket.heal();
    const retried = await complete();

    expect(retried.statusCode).toBe(200);
    expect(jsonOf<MediaAssetRecord>(retried)).toMatchObject({ status: 'ready', width: 2, height: 3 });
    expect(bucket.callsOf('CopyObject')).toHaveLength(1);
    expect(bucket.callsOf('GetObject').filter((c) => c.status < 300)).toHaveLength(1);
  });
});
