import { describe, expect, it } from 'vitest';
import { ApiError } from '#core/errors';
import { checkIfMatch, etagOf, parseIfMatch } from '#core/etag';
import { checkMediaFacts, MEDIA_LIMITS } from '#core/media-limits';
import { DISPATCH_MARGIN_MS, decideUpdate, editFieldErrors } from '#core/post-edits';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { fixedId, post, variant } from '../support/fixtures.ts';

const NOW = new Date('2030-01-01T00:00:00.000Z');
const A = fixedId('channel', 1);
const B = fixedId('channel', 2);
let n = 100;
const opts = (approvalRequired = false) => ({
  approvalRequired,
  now: NOW,
  newVariantId: () => fixedId('variant', n++),
});

function delivery(channel: string, over: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    channel_id: channel,
    stage: 'failed',
    external_id: null,
    url: null,
    error: 'boom',
    error_category: 'platform_rejected',
    attempts: 1,
    updated_at: NOW.toISOString(),
    round: 1,
    ...over,
  };
}

const changed = (d: ReturnType<typeof decideUpdate>): PostRecord => {
  if (!('change' in d)) throw new Error('expected a change');
  return d.change;
};

function conflictOf(run: () => unknown): ApiError {
  try {
    run();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('decideUpdate', () => {
  const scheduled = post({
    status: 'scheduled',
    scheduled_at: '2030-01-02T00:00:00.000Z',
    variants: [variant(A, 1), variant(B, 2)],
    counted_period: '2030-01',
  });

  it('replaces title, body and variants, keeping the schedule and each channel’s variant id', () => {
    const next = changed(
      decideUpdate(
        scheduled,
        {
          title: 'T',
          variants: [
            { channel_id: B, body: 'new B' },
            { channel_id: A, body: 'new A' },
          ],
        },
        opts(),
      ),
    );
    expect(next).toMatchObject({
      status: 'scheduled',
      scheduled_at: scheduled.scheduled_at,
      title: 'T',
      body: null,
    });
    expect(next.variants.map((v) => [v.channel_id, v.id, v.body])).toEqual([
      [B, fixedId('variant', 2), 'new B'],
      [A, fixedId('variant', 1), 'new A'],
    ]);
    expect(next.updated_at).toBe(NOW.toISOString());
    expect(next.counted_period).toBe('2030-01');
  });

  it('is unchanged for the same content (nothing to write)', () => {
    const same = decideUpdate(
      scheduled,
      {
        variants: [
          { channel_id: A, body: 'Hello' },
          { channel_id: B, body: 'Hello' },
        ],
      },
      opts(),
    );
    expect(same).toEqual({ unchanged: scheduled });
  });

  it.each(['publishing', 'published'] as const)('refuses a %s post with 409', (status) => {
    const err = conflictOf(() => decideUpdate(post({ status }), { variants: [] }, opts()));
    expect(err.code).toBe('resource_conflict');
  });

  it('sends a changed scheduled post to needs_approval (mode schedule) when approval is required', () => {
    const next = changed(decideUpdate(scheduled, { variants: [{ channel_id: A, body: 'x' }] }, opts(true)));
    expect(next).toMatchObject({ status: 'needs_approval', approval: { mode: 'schedule' }, decision: null });
    const waiting = post({ status: 'needs_approval', approval: { mode: 'publish' } });
    expect(
      changed(decideUpdate(waiting, { variants: [{ channel_id: A, body: 'x' }] }, opts(true))),
    ).toMatchObject({
      status: 'needs_approval',
      approval: { mode: 'publish' },
    });
    // A draft, or a failed post, keeps its status.
    expect(
      changed(decideUpdate(post(), { variants: [{ channel_id: A, body: 'x' }] }, opts(true))).status,
    ).toBe('draft');
    // The same content: no reset.
    expect(decideUpdate(scheduled, { variants: scheduled.variants }, opts(true))).toEqual({
      unchanged: scheduled,
    });
  });

  it('on a failed post, keeps a published channel’s variant as it is (409 naming it) and lets the others change', () => {
    const failed = post({
      status: 'failed',
      variants: [variant(A, 1), variant(B, 2)],
      deliveries: {
        [A]: delivery(A, { stage: 'published', external_id: 'at://1', error: null }),
        [B]: delivery(B, { checkpoint: { container: 'old' } }),
      },
    });
    const err = conflictOf(() =>
      decideUpdate(
        failed,
        {
          variants: [
            { channel_id: A, body: 'edited' },
            { channel_id: B, body: 'Hello' },
          ],
        },
        opts(),
      ),
    );
    expect(err.code).toBe('resource_conflict');
    expect(err.message).toContain(A);
    expect(
      conflictOf(() => decideUpdate(failed, { variants: [{ channel_id: B, body: 'x' }] }, opts())).message,
    ).toContain(A);
    const next = changed(
      decideUpdate(
        failed,
        {
          variants: [
            { channel_id: A, body: 'Hello' },
            { channel_id: B, body: 'fixed' },
          ],
        },
        opts(),
      ),
    );
    expect(next.status).toBe('failed');
    expect(next.deliveries[A]).toEqual(failed.deliveries[A]);
    // The old content's upload state is forgotten.
    expect(next.deliveries[B]?.checkpoint).toBeNull();
  });

  it('refuses to change a variant whose last attempt may have reached the platform', () => {
    const failed = post({
      status: 'failed',
      deliveries: { [A]: delivery(A, { unresolved_since: NOW.toISOString() }) },
    });
    expect(
      conflictOf(() => decideUpdate(failed, { variants: [{ channel_id: A, body: 'x' }] }, opts())).code,
    ).toBe('resource_conflict');
  });

  it('refuses to add a channel to a scheduled post due within the dispatch margin, not to change its text', () => {
    const due = post({
      status: 'scheduled',
      scheduled_at: new Date(NOW.getTime() + DISPATCH_MARGIN_MS - 1).toISOString(),
    });
    expect(
      conflictOf(() =>
        decideUpdate(
          due,
          {
            variants: [
              { channel_id: A, body: 'x' },
              { channel_id: B, body: 'y' },
            ],
          },
          opts(),
        ),
      ).code,
    ).toBe('resource_conflict');
    expect(
      changed(decideUpdate(due, { variants: [{ channel_id: A, body: 'x' }] }, opts())).variants[0]?.body,
    ).toBe('x');
  });

  it('drops the delivery of a channel no longer in the variants, and types a post with a thread', () => {
    const failed = post({
      status: 'failed',
      variants: [variant(A, 1), variant(B, 2)],
      deliveries: { [A]: delivery(A), [B]: delivery(B) },
    });
    const next = changed(
      decideUpdate(
        failed,
        { variants: [{ channel_id: A, body: 'root', thread: [{ body: 'reply', media: [] }] }] },
        opts(),
      ),
    );
    expect(Object.keys(next.deliveries)).toEqual([A]);
    expect(next.type).toBe('thread');
  });

  it('needs variants past draft', () => {
    expect(editFieldErrors(post(), { variants: [] })).toEqual([]);
    expect(editFieldErrors(scheduled, { variants: [] })).toEqual([
      expect.objectContaining({ pointer: '/variants', code: 'too_few_items' }),
    ]);
  });
});

describe('ETags', () => {
  it('quotes the version and parses If-Match lists, `*`, and weak tags (which never match)', () => {
    expect(etagOf(7)).toBe('"7"');
    expect(parseIfMatch(undefined)).toBeUndefined();
    expect(parseIfMatch('*')).toEqual({ any: true });
    expect(parseIfMatch('"3", "7"')).toEqual({ versions: [3, 7] });
    expect(parseIfMatch('W/"7"')).toEqual({ versions: [] });
    expect(parseIfMatch('"abc"')).toEqual({ versions: [] });
    expect(() => parseIfMatch('7')).toThrow(ApiError);
  });

  it('answers 412 precondition_failed with the current ETag on a mismatch', () => {
    expect(() => checkIfMatch(undefined, 4)).not.toThrow();
    expect(() => checkIfMatch({ any: true }, 4)).not.toThrow();
    expect(() => checkIfMatch({ versions: [4] }, 4)).not.toThrow();
    const err = conflictOf(() => checkIfMatch({ versions: [3] }, 4));
    expect(err.status).toBe(412);
    expect(err.code).toBe('precondition_failed');
    expect(err.headers).toEqual({ etag: '"4"' });
  });
});

describe('checkMediaFacts', () => {
  const image = (over: Partial<Parameters<typeof checkMediaFacts>[1]> = {}) => ({
    kind: 'image' as const,
    content_type: 'image/jpeg',
    size_bytes: 100_000,
    width: 1080,
    height: 1080,
    duration_sec: null,
    ...over,
  });

  it('takes Bluesky images up to 1,000,000 bytes exactly', () => {
    expect(MEDIA_LIMITS.bluesky.image.maxBytes).toBe(1_000_000);
    expect(checkMediaFacts('bluesky', image({ size_bytes: 1_000_000 }), '/p')).toEqual([]);
    expect(checkMediaFacts('bluesky', image({ size_bytes: 1_000_001 }), '/p')).toEqual([
      expect.objectContaining({ pointer: '/p', code: 'media_too_large' }),
    ]);
  });

  it('bounds Instagram images to 4:5 … 1.91:1 (Instagram’s own 1080×566 inside) and JPEG', () => {
    expect(checkMediaFacts('instagram', image({ width: 1080, height: 1350 }), '/p')).toEqual([]);
    expect(checkMediaFacts('instagram', image({ width: 1080, height: 566 }), '/p')).toEqual([]);
    expect(
      checkMediaFacts('instagram', image({ width: 1080, height: 1920 }), '/p').map((e) => e.code),
    ).toEqual(['unsupported_aspect_ratio']);
    expect(
      checkMediaFacts('instagram', image({ content_type: 'image/png' }), '/p').map((e) => e.code),
    ).toEqual(['unsupported_format']);
  });

  it('checks video duration, stricter in an Instagram carousel, and skips facts the probe did not give', () => {
    const video = (sec: number | null) => ({
      ...image({ content_type: 'video/mp4', duration_sec: sec }),
      kind: 'video' as const,
    });
    expect(checkMediaFacts('x', video(141), '/p').map((e) => e.code)).toEqual(['media_too_long']);
    expect(checkMediaFacts('x', video(140), '/p')).toEqual([]);
    expect(checkMediaFacts('instagram', video(90), '/p')).toEqual([]);
    expect(checkMediaFacts('instagram', video(90), '/p', { carousel: true }).map((e) => e.code)).toEqual([
      'media_too_long',
    ]);
    expect(checkMediaFacts('instagram', video(2), '/p').map((e) => e.code)).toEqual(['media_too_short']);
    expect(checkMediaFacts('instagram', video(null), '/p')).toEqual([]);
  });

  it('cites a source for every platform and kind', () => {
    for (const limits of Object.values(MEDIA_LIMITS)) {
      expect(limits.image.source.length).toBeGreaterThan(10);
      expect(limits.video.source.length).toBeGreaterThan(10);
    }
  });
});
