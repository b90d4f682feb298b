import { beforeEach, describe, expect, it, vi } from 'vitest';
import { PlatformError } from '#adapters/platforms/types';
import type { FitRequest, FitResponse } from '#core/fit-contract';
import type { MediaAssetRecord } from '#core/media';
import { mediaOf } from '#usecases/delivery-worker';
import { mediaAsset, ORG_ID } from '../support/fixtures.ts';

// The delivery worker's media under media_fit `auto`: the planned rendition stands in for the
// original (key, type, size, public url), made by the fit function it invokes; what cannot be made
// fails the delivery for good, what is still being made retries it later.

const assets = vi.hoisted(() => ({ list: [] as MediaAssetRecord[] }));
vi.mock('#adapters/media', () => ({ getAssets: async () => assets.list }));
const fit = vi.hoisted(() => ({
  invokeFit: vi.fn<(r: FitRequest, o?: { signal?: AbortSignal }) => Promise<FitResponse>>(),
}));
vi.mock('#adapters/fit-function', () => fit);

const big = mediaAsset({
  status: 'ready',
  filename: 'photo.png',
  content_type: 'image/png',
  size_bytes: 1_500_000,
  width: 1600,
  height: 1200,
  url: `https://media.example/orgs/${ORG_ID}/media/med_1/photo.png`,
  object_key: `orgs/${ORG_ID}/media/med_1/photo.png`,
});
const item = { type: 'image' as const, url: big.url, alt: 'a photo' };
const TARGET = `orgs/${ORG_ID}/media/med_1/_fit-bluesky-image-1000000.jpg`;

beforeEach(() => {
  assets.list = [big];
  fit.invokeFit.mockReset();
});

describe('mediaOf under media_fit auto', () => {
  it('hands the connector the rendition, and notes what was done once', async () => {
    fit.invokeFit.mockResolvedValue({
      ok: true,
      key: TARGET,
      content_type: 'image/jpeg',
      size_bytes: 812_345,
      made: true,
    });
    const note = vi.fn();
    const [m] = await mediaOf(ORG_ID, [item], { platform: 'bluesky', note });
    expect(fit.invokeFit).toHaveBeenCalledWith(
      {
        source_key: big.object_key,
        target_key: TARGET,
        kind: 'image',
        ops: [{ op: 'jpeg', maxBytes: 1_000_000 }],
      },
      expect.objectContaining({ signal: expect.any(AbortSignal) }),
    );
    expect(m).toMatchObject({
      contentType: 'image/jpeg',
      sizeBytes: 812_345,
      filename: 'photo.jpg',
      url: `https://media.example/${TARGET}`,
      alt: 'a photo',
    });
    expect(note).toHaveBeenCalledTimes(1);
    expect(note.mock.calls[0]?.[0]).toContain('re-encoded image/png as JPEG');
  });

  it('leaves media alone without media_fit, or when the platform takes it as it is', async () => {
    const [plain] = await mediaOf(ORG_ID, [item]);
    expect(plain).toMatchObject({ contentType: 'image/png', sizeBytes: 1_500_000, url: big.url });
    const [mastodon] = await mediaOf(ORG_ID, [item], { platform: 'mastodon', note: vi.fn() });
    expect(mastodon?.url).toBe(big.url);
    expect(fit.invokeFit).not.toHaveBeenCalled();
  });

  it('fails for good (media_error) when the media cannot be fitted', async () => {
    fit.invokeFit.mockResolvedValue({
      ok: false,
      message: 'The image could not be decoded, so it cannot be fitted.',
    });
    const err = await mediaOf(ORG_ID, [item], { platform: 'bluesky', note: vi.fn() }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ category: 'media_error', retryable: false });
    expect((err as Error).message).toContain('could not be decoded');
  });

  it('retries later, with a hint, while the rendition is being made (in progress, or slower than the wait)', async () => {
    fit.invokeFit.mockResolvedValueOnce({ ok: false, in_progress: true, message: 'being made' });
    fit.invokeFit.mockRejectedValueOnce(new DOMException('The operation timed out.', 'TimeoutError'));
    for (let i = 0; i < 2; i++) {
      const err = await mediaOf(ORG_ID, [item], { platform: 'bluesky', note: vi.fn() }).catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(PlatformError);
      expect(err).toMatchObject({ category: 'system', retryable: true, opts: { retryAfterSeconds: 180 } });
      expect((err as Error).message).toContain('still being fitted');
    }
  });
});
