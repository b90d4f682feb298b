import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ModelError } from '#adapters/ai/model-client';
import type { AuthContext } from '#core/accounts';
import { effectiveLimits } from '#core/plans';
import { ANSWERED_POST_CHARS, createGeneration } from '#usecases/create-generation';
import { rejectedApiError } from '../support/errors.ts';
import { channel, fixedId, inboxComment, mediaAsset, ORG_ID, org } from '../support/fixtures.ts';

// createGeneration (usecases/create-generation.ts) with the model, the credits and the read stubbed:
// what is reserved, settled and refunded, the one re-ask, and the problems.

const m = vi.hoisted(() => ({
  client: null as null | { model: string; acceptsImages: boolean; converse: ReturnType<typeof vi.fn> },
  reserve: vi.fn(async () => true),
  settle: vi.fn(async () => true),
  refund: vi.fn(async () => true),
  read: vi.fn(),
  readPost: vi.fn(async () => null as string | null),
  readMediaObject: vi.fn(async () => new Uint8Array([1, 2, 3])),
}));

vi.mock('#adapters/ai/model-client', async (original) => ({
  ...(await original<typeof import('#adapters/ai/model-client')>()),
  modelClient: () => m.client,
}));
vi.mock('#adapters/ai-credits', () => ({
  reserveCredits: m.reserve,
  settleCredits: m.settle,
  refundCredits: m.refund,
}));
vi.mock('#adapters/generation-reads', () => ({
  loadGenerationContext: m.read,
  readAnsweredPostText: m.readPost,
}));
vi.mock('#adapters/media-read', () => ({ readMediaObject: m.readMediaObject }));

const NOW = new Date('2030-06-10T12:00:00.000Z');
const LAMBDA = { getRemainingTimeInMillis: () => 50_000 };
const ADMITTED = async () => undefined;
const X = channel(1, 'x');
const AUTH: AuthContext = {
  orgId: ORG_ID,
  keyId: fixedId('key', 1),
  scopes: new Set(['ai:generate']),
  plan: 'team',
  limits: effectiveLimits('team'),
};
const REWRITE = { task: 'rewrite' as const, text: 'Hello from Herald. We shipped.', channel_ids: [X.id] };

const answer = (body: string, tokens = { inputTokens: 600, outputTokens: 900 }) => ({
  text: JSON.stringify({ suggestions: [{ channel_id: X.id, body }] }),
  ...tokens,
});

beforeEach(() => {
  vi.clearAllMocks();
  m.client = null;
  m.reserve.mockResolvedValue(true);
  m.read.mockResolvedValue({ org: org(), channels: new Map([[X.id, X]]), media: null, item: null });
});

describe('createGeneration', () => {
  it('with no model: the rules engine, credits reserved then settled to its usage', async () => {
    const res = await createGeneration(AUTH, REWRITE, NOW, LAMBDA, ADMITTED);
    expect(res.model).toBe('rules');
    expect(res.id).toMatch(/^gen_/);
    expect(res.suggestions).toEqual([{ channel_id: X.id, body: REWRITE.text }]);
    const [, period, id, reserved, limit, dueAt] = m.reserve.mock.calls[0] as unknown as [
      string,
      string,
      string,
      number,
      number,
      string,
    ];
    expect([period, id, limit]).toEqual(['2030-06', res.id, 1_000]);
    // Due past the function's own end (its remaining time) and a margin.
    expect(Date.parse(dueAt)).toBeGreaterThan(NOW.getTime() + 50_000);
    expect(m.settle).toHaveBeenCalledWith(ORG_ID, '2030-06', res.id, reserved, res.usage.credits);
    expect(res.usage.credits).toBeLessThanOrEqual(reserved);
    expect(m.refund).not.toHaveBeenCalled();
  });

  it('asks the model once more when a suggestion is over its limit, and counts both calls', async () => {
    const converse = vi
      .fn()
      .mockResolvedValueOnce(answer('x'.repeat(400)))
      .mockResolvedValueOnce(answer('Short enough.', { inputTokens: 700, outputTokens: 100 }));
    m.client = { model: 'test-model', acceptsImages: false, converse };
    const res = await createGeneration(AUTH, REWRITE, NOW, LAMBDA, ADMITTED);
    expect(converse).toHaveBeenCalledTimes(2);
    expect(converse.mock.calls[1]?.[0].user).toMatch(/\d+/);
    expect(res.suggestions).toEqual([{ channel_id: X.id, body: 'Short enough.' }]);
    // Both calls' tokens are reported; the charge is theirs (3 credits), never above the reservation.
    const reserved = (m.reserve.mock.calls[0] as unknown as number[])[3] as number;
    expect(res.usage).toEqual({ credits: Math.min(3, reserved), input_tokens: 1300, output_tokens: 1000 });
    expect(m.settle).toHaveBeenCalledWith(ORG_ID, '2030-06', res.id, reserved, Math.min(3, reserved));
    expect(res.model).toBe('test-model');
  });

  it('refunds and answers 503 model_unavailable, saying how to enable access, when access is denied', async () => {
    m.client = {
      model: 'test-model',
      acceptsImages: false,
      converse: vi.fn().mockRejectedValue(new ModelError('access_denied', 'no access')),
    };
    const err = await rejectedApiError(createGeneration(AUTH, REWRITE, NOW, LAMBDA, ADMITTED));
    expect(err.code).toBe('model_unavailable');
    expect(err.message).toMatch(/model access/);
    expect(m.refund).toHaveBeenCalledTimes(1);
    expect(m.settle).not.toHaveBeenCalled();
  });

  it('refunds and answers 502 generation_failed on an answer Herald cannot read', async () => {
    m.client = {
      model: 'test-model',
      acceptsImages: false,
      converse: vi.fn().mockResolvedValue({ text: 'Sure! Here you go.', inputTokens: 10, outputTokens: 10 }),
    };
    const err = await rejectedApiError(createGeneration(AUTH, REWRITE, NOW, LAMBDA, ADMITTED));
    expect(err.code).toBe('generation_failed');
    expect(m.refund).toHaveBeenCalledTimes(1);
  });

  it('answers 429 quota_exhausted when the reservation is refused, with the credits in its detail', async () => {
    m.reserve.mockResolvedValue(false);
    const err = await rejectedApiError(createGeneration(AUTH, REWRITE, NOW, LAMBDA, ADMITTED));
    expect(err.code).toBe('quota_exhausted');
    expect(err.message).toMatch(/may need \d+ ai_credits/);
    expect(err.headers['retry-after']).toBeDefined();
  });

  it('reads the image only for a model that accepts images', async () => {
    const image = mediaAsset({ kind: 'image', status: 'ready', content_type: 'image/png' });
    m.read.mockResolvedValue({ org: org(), channels: new Map(), media: image, item: null });
    const converse = vi.fn().mockResolvedValue({
      text: JSON.stringify({ suggestions: [{ alt: 'A chart.' }] }),
      inputTokens: 1700,
      outputTokens: 20,
    });
    m.client = { model: 'vision', acceptsImages: true, converse };
    const res = await createGeneration(AUTH, { task: 'alt_text', media_id: image.id }, NOW, LAMBDA, ADMITTED);
    expect(res.suggestions).toEqual([{ alt: 'A chart.' }]);
    expect(m.readMediaObject).toHaveBeenCalledWith(image.object_key);
    expect(converse.mock.calls[0]?.[0].image).toEqual({ bytes: new Uint8Array([1, 2, 3]), format: 'png' });

    m.client = { model: 'text-only', acceptsImages: false, converse };
    m.readMediaObject.mockClear();
    const rules = await createGeneration(
      AUTH,
      { task: 'alt_text', media_id: image.id },
      NOW,
      LAMBDA,
      ADMITTED,
    );
    expect(rules.model).toBe('rules');
    expect(m.readMediaObject).not.toHaveBeenCalled();
  });

  it('refuses alt text for an asset that is not a ready image (400 at /media_id) before reserving', async () => {
    const video = mediaAsset({ kind: 'video', status: 'ready', content_type: 'video/mp4' });
    m.read.mockResolvedValue({ org: org(), channels: new Map(), media: video, item: null });
    const err = await rejectedApiError(
      createGeneration(AUTH, { task: 'alt_text', media_id: video.id }, NOW, LAMBDA, ADMITTED),
    );
    expect(err.code).toBe('validation_failed');
    expect(err.errors?.map((e) => e.pointer)).toEqual(['/media_id']);
    expect(m.reserve).not.toHaveBeenCalled();
  });

  it('gives a reply the head of the post the comment answers, as its channel published it', async () => {
    const postId = fixedId('post', 4);
    const item = inboxComment({ post_id: postId });
    m.read.mockResolvedValue({ org: org(), channels: new Map(), media: null, item });
    m.readPost.mockResolvedValue(`Our spring sale is on. ${'x'.repeat(5000)}`);
    const converse = vi.fn(async () => ({
      text: JSON.stringify({ suggestions: [{ body: 'Thank you!' }] }),
      inputTokens: 700,
      outputTokens: 20,
    }));
    m.client = { model: 'test-model', acceptsImages: false, converse };
    const res = await createGeneration(
      AUTH,
      { task: 'reply', inbox_item_id: item.id },
      NOW,
      LAMBDA,
      ADMITTED,
    );
    expect(res.suggestions).toEqual([{ body: 'Thank you!' }]);
    expect(m.readPost).toHaveBeenCalledWith(ORG_ID, postId, item.channel_id);
    const user = (converse.mock.calls[0] as unknown as [{ user: string }])[0].user;
    const post = (/<post>([\s\S]*)<\/post>/.exec(user)?.[1] ?? '').trim();
    expect(post.startsWith('Our spring sale is on.')).toBe(true);
    expect(post.length).toBeLessThanOrEqual(ANSWERED_POST_CHARS + 2);
    expect(post.length).toBeGreaterThan(ANSWERED_POST_CHARS - 10);
  });

  it('reads no post for a comment on a post Herald did not publish', async () => {
    m.read.mockResolvedValue({ org: org(), channels: new Map(), media: null, item: inboxComment() });
    await createGeneration(AUTH, { task: 'reply', inbox_item_id: inboxComment().id }, NOW, LAMBDA, ADMITTED);
    expect(m.readPost).not.toHaveBeenCalled();
  });

  it('answers 404 for an inbox item the read did not find (another organization’s)', async () => {
    const err = await rejectedApiError(
      createGeneration(AUTH, { task: 'reply', inbox_item_id: fixedId('inbox', 9) }, NOW, LAMBDA, ADMITTED),
    );
    expect(err.code).toBe('resource_not_found');
    expect(m.reserve).not.toHaveBeenCalled();
  });

  it('writes nothing for a request the gate refuses', async () => {
    const refusal = new Error('burst');
    const refused = () => Promise.reject(refusal);
    await expect(createGeneration(AUTH, REWRITE, NOW, LAMBDA, refused)).rejects.toBe(refusal);
    expect(m.reserve).not.toHaveBeenCalled();
  });

  it('is refused on a plan without ai', async () => {
    const err = await rejectedApiError(
      createGeneration({ ...AUTH, plan: 'free' }, REWRITE, NOW, LAMBDA, ADMITTED),
    );
    expect(err.code).toBe('feature_not_enabled');
    expect(m.read).not.toHaveBeenCalled();
  });
});
