import { describe, expect, it } from 'vitest';
import { FitRequest } from '#core/fit-contract';
import {
  type FitPlan,
  fitPlan,
  fittedErrors,
  padTarget,
  renditionKeyOf,
  renditionKeysOf,
} from '#core/media-fit';
import { checkMediaFacts } from '#core/media-limits';

// Which probed facts media_fit `auto` mends, per platform, and how (core/media-fit.ts).

const image = (over: Partial<Parameters<typeof fitPlan>[1]> = {}) => ({
  kind: 'image' as const,
  content_type: 'image/jpeg',
  size_bytes: 500_000,
  width: 1200,
  height: 1200,
  duration_sec: null,
  ...over,
});
const video = (over: Partial<Parameters<typeof fitPlan>[1]> = {}) => ({
  kind: 'video' as const,
  content_type: 'video/mp4',
  size_bytes: 20_000_000,
  width: 1920,
  height: 1080,
  duration_sec: 30,
  ...over,
});

const plan = (answer: ReturnType<typeof fitPlan>): FitPlan => {
  if (!answer || 'error' in answer) throw new Error(`no plan: ${JSON.stringify(answer)}`);
  return answer;
};

describe('fitPlan: images', () => {
  it('re-encodes a Bluesky image over 1,000,000 bytes as JPEG within the limit', () => {
    const p = plan(fitPlan('bluesky', image({ size_bytes: 1_500_000, content_type: 'image/png' })));
    expect(p.rendition).toBe('bluesky-image-1000000');
    expect(p.ops).toEqual([{ op: 'jpeg', maxBytes: 1_000_000 }]);
    expect(p).toMatchObject({ contentType: 'image/jpeg', ext: 'jpg', kind: 'image' });
    expect(p.summary).toContain('image/png as JPEG');
  });

  it('leaves alone what the platform takes as it is', () => {
    expect(fitPlan('bluesky', image({ size_bytes: 1_000_000 }))).toBeNull();
    expect(fitPlan('instagram', image({ width: 1080, height: 1350 }))).toBeNull();
    expect(fitPlan('x', image({ content_type: 'image/webp' }))).toBeNull();
  });

  it('turns a WebP into a JPEG for Instagram (JPEG only)', () => {
    const p = plan(fitPlan('instagram', image({ content_type: 'image/webp' })));
    expect(p.ops).toEqual([{ op: 'jpeg', maxBytes: 8 * 1024 * 1024 }]);
    expect(p.rendition).toBe('instagram-image-8388608');
  });

  it('pads an Instagram image outside 4:5–1.91:1 into range (bars, never a crop)', () => {
    const wide = plan(fitPlan('instagram', image({ width: 3000, height: 1000 })));
    expect(wide.ops[0]).toEqual({ op: 'pad', width: 3000, height: 1572 });
    expect(3000 / 1572).toBeLessThanOrEqual(1.91);
    expect(wide.rendition).toBe('instagram-image-8388608-pad0.8-1.91');
    const tall = plan(fitPlan('instagram', image({ width: 1000, height: 3000 })));
    expect(tall.ops[0]).toEqual({ op: 'pad', width: 2400, height: 3000 });
    // The padded shape passes the same check createPost makes.
    expect(checkMediaFacts('instagram', image({ width: 2400, height: 3000 }), '/m')).toEqual([]);
    expect(checkMediaFacts('instagram', image({ width: 3000, height: 1572 }), '/m')).toEqual([]);
  });

  it('refuses an image without measured sides (nothing to fit)', () => {
    const answer = fitPlan('bluesky', image({ size_bytes: 2_000_000, width: null }), { pointer: '/p' });
    expect(answer).toMatchObject({ error: { pointer: '/p', code: 'unsupported_format' } });
  });

  it('has no plan for audio or documents', () => {
    expect(fitPlan('bluesky', { ...image(), kind: 'audio' })).toBeNull();
    expect(fitPlan('linkedin', { ...image(), kind: 'document', content_type: 'application/pdf' })).toBeNull();
  });
});

describe('fitPlan: videos', () => {
  it('re-encodes a MOV for Bluesky (MP4 only) as H.264/AAC MP4 within 100,000,000 bytes', () => {
    const p = plan(fitPlan('bluesky', video({ content_type: 'video/quicktime' })));
    expect(p.rendition).toBe('bluesky-video-100000000');
    expect(p.ops).toEqual([{ op: 'mp4', maxBytes: 100_000_000, durationSec: 30 }]);
    expect(p).toMatchObject({ contentType: 'video/mp4', ext: 'mp4' });
  });

  it('re-encodes a video over the size limit (LinkedIn 500 MB)', () => {
    const p = plan(fitPlan('linkedin', video({ size_bytes: 800 * 1024 * 1024, duration_sec: 600 })));
    expect(p.ops).toEqual([{ op: 'mp4', maxBytes: 500 * 1024 * 1024, durationSec: 600 }]);
  });

  it('pads a video outside X’s 1:3–3:1 and re-encodes it', () => {
    const p = plan(fitPlan('x', video({ width: 4000, height: 1000 })));
    expect(p.ops[0]).toEqual({ op: 'pad', width: 4000, height: 1334 });
    expect(p.ops[1]).toMatchObject({ op: 'mp4' });
  });

  it('never trims: a video longer than the platform takes is refused with media_too_long', () => {
    expect(fitPlan('bluesky', video({ duration_sec: 200 }), { pointer: '/v' })).toMatchObject({
      error: { pointer: '/v', code: 'media_too_long' },
    });
    // Instagram carousel videos: 60 s.
    expect(fitPlan('instagram', video({ duration_sec: 90 }), { carousel: true })).toMatchObject({
      error: { code: 'media_too_long' },
    });
  });

  it('refuses a budget too small for a watchable bitrate (media_too_large)', () => {
    // Bluesky 100 MB over 179 s is plenty; X 512 MB over 140 s too; a 1 GB file fits anyway.
    expect(fitPlan('bluesky', video({ size_bytes: 300_000_000, duration_sec: 179 }))).not.toHaveProperty(
      'error',
    );
    // Mastodon 99 MB over 2 hours: < 150 kbit/s.
    expect(fitPlan('mastodon', video({ size_bytes: 500_000_000, duration_sec: 7200 }))).toMatchObject({
      error: { code: 'media_too_large' },
    });
  });
});

describe('fittedErrors (createPost under media_fit auto)', () => {
  const errorsOf = (platform: Parameters<typeof fitPlan>[0], asset: ReturnType<typeof image>) =>
    fittedErrors(platform, asset, checkMediaFacts(platform, asset, '/variants/0/media/0'), {
      pointer: '/variants/0/media/0',
    });

  it('drops what a rendition mends', () => {
    const big = image({ size_bytes: 1_500_000 });
    expect(checkMediaFacts('bluesky', big, '/m').map((e) => e.code)).toEqual(['media_too_large']);
    expect(errorsOf('bluesky', big)).toEqual([]);
    expect(errorsOf('instagram', image({ content_type: 'image/webp', width: 3000, height: 1000 }))).toEqual(
      [],
    );
  });

  it('keeps what cannot be fitted, with the plan’s reason', () => {
    const long = video({ content_type: 'video/quicktime', duration_sec: 400 });
    const errors = fittedErrors('bluesky', long, checkMediaFacts('bluesky', long, '/m'), { pointer: '/m' });
    expect(errors.map((e) => e.code).sort()).toEqual(['media_too_long', 'unsupported_format']);
    expect(errors.find((e) => e.code === 'media_too_long')?.message).toContain('does not trim');
  });
});

describe('renditions', () => {
  it('sit beside the original, and the contract takes exactly that key', () => {
    const p = plan(fitPlan('bluesky', image({ size_bytes: 1_500_000 })));
    const source = 'orgs/org_1/media/med_1/photo.png';
    const target = renditionKeyOf(source, p);
    expect(target).toBe('orgs/org_1/media/med_1/_fit-bluesky-image-1000000.jpg');
    expect(
      FitRequest.safeParse({ source_key: source, target_key: target, kind: 'image', ops: p.ops }).success,
    ).toBe(true);
    // Elsewhere, the original's own key, or the wrong extension: refused.
    for (const bad of [
      'orgs/org_1/media/med_2/_fit-bluesky-image-1000000.jpg',
      source,
      'orgs/org_1/media/med_1/_fit-x.mp4',
      'orgs/org_1/media/med_1/_poster.jpg',
    ])
      expect(
        FitRequest.safeParse({ source_key: source, target_key: bad, kind: 'image', ops: p.ops }).success,
        bad,
      ).toBe(false);
  });

  it('padTarget keeps the picture and reaches the range', () => {
    expect(padTarget(1000, 1000, 0.8, 1.91)).toBeNull();
    expect(padTarget(1000, 2000, 0.8, 1.91)).toEqual({ width: 1600, height: 2000 });
  });
});

describe('renditionKeysOf (deleteMedia removes them with the asset)', () => {
  it('lists each platform’s rendition of a fittable asset and its marker, nothing for one taken as it is', () => {
    const big = {
      ...image({ size_bytes: 1_500_000, content_type: 'image/webp' }),
      object_key: 'orgs/o/media/m/a.webp',
    };
    const keys = renditionKeysOf(big);
    expect(keys).toContain('orgs/o/media/m/_fit-bluesky-image-1000000.jpg');
    expect(keys).toContain('orgs/o/media/m/_fit-bluesky-image-1000000.jpg.pending');
    // Instagram and Threads (no WebP), TikTok takes WebP, X takes 1.5 MB.
    expect(keys).toContain('orgs/o/media/m/_fit-instagram-image-8388608.jpg');
    expect(keys.some((k) => k.includes('_fit-x-'))).toBe(false);
    expect(renditionKeysOf({ ...image(), object_key: 'orgs/o/media/m/a.jpg' })).toEqual([]);
  });
});
