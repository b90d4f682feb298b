import { beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS } from '../../functions/core/constants.ts';
import { api, cliOk, type Workspace, workspace } from './helpers.ts';
import { inboxItem, seedInbox } from './inbox-table.ts';

// createGeneration on the local stack, with no model configured: the rule-based engine
// (docs/ai.md). Every suggestion must pass createPost's checks for its channel; credits are
// reserved, settled to the answer's usage, refunded on failure, and never pass the allowance.

type Suggestion = { channel_id?: string; body?: string; thread?: Array<{ body: string }>; alt?: string };
type Generation = {
  id: string;
  task: string;
  suggestions: Suggestion[];
  model: string;
  usage: { credits: number; input_tokens: number; output_tokens: number };
};
type Check = { valid: boolean; errors: Array<{ pointer: string; code: string }> };

const SCOPES = 'posts:read,posts:write,analytics:read,ai:generate';
const LONG = Array.from(
  { length: 60 },
  (_, i) =>
    `Sentence ${i + 1} of the spring release notes explains faster uploads, a new calendar view and https://example.com/notes/${i}.`,
).join(' ');

let ws: Workspace;
let key: string;

async function mintKey(w: Workspace, scopes = SCOPES): Promise<string> {
  return (await cliOk('key', 'mint', '--org', w.orgId, '--by', w.ownerId, '--scopes', scopes)).key as string;
}

const generate = (body: unknown, k = key, headers: Record<string, string> = {}) =>
  api<Generation>('POST', '/v1/ai/generations', { key: k, body, headers });

async function aiCredits(k = key): Promise<{ used: number; limit: number }> {
  const res = await api<{ meters: Array<{ key: string; used: number; limit: number }> }>('GET', '/v1/usage', {
    key: k,
  });
  expect(res.status).toBe(200);
  const m = res.body.meters.find((x) => x.key === 'ai_credits');
  expect(m).toBeDefined();
  return m as { used: number; limit: number };
}

/** The text rules createPost applies to the suggestion pass (media a platform needs is not text). */
async function expectPostable(s: Suggestion) {
  const variant = {
    channel_id: s.channel_id,
    body: s.body,
    ...(s.thread?.length ? { thread: s.thread } : {}),
  };
  const res = await api<Check>('POST', '/v1/posts/validate', { key, body: { variants: [variant] } });
  expect(res.status, res.text).toBe(200);
  const textErrors = res.body.errors.filter(
    (e) => e.pointer.startsWith('/variants/0/body') || e.pointer.startsWith('/variants/0/thread'),
  );
  expect(textErrors, `${s.channel_id}: ${JSON.stringify(res.body.errors)}`).toEqual([]);
}

beforeAll(async () => {
  ws = await workspace([...PLATFORMS], 'team');
  key = await mintKey(ws);
}, 180_000);

describe('createGeneration with the rules engine', () => {
  const ids = () => PLATFORMS.map((p) => ws.channels[p] as string);

  it('writes a variant per channel for all ten platforms, each within its platform text rules, and settles its credits', async () => {
    const before = await aiCredits();
    const res = await generate({ task: 'variants', prompt: LONG, channel_ids: ids(), tone: 'friendly' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.id).toMatch(/^gen_/);
    expect(res.body.model).toBe('rules');
    expect(res.body.suggestions.map((s) => s.channel_id)).toEqual(ids());
    for (const s of res.body.suggestions) await expectPostable(s);
    expect(res.body.usage.credits).toBeGreaterThan(0);
    const after = await aiCredits();
    expect(after.used - before.used).toBe(res.body.usage.credits);
    expect(after.limit).toBe(1_000);
  });

  it('rewrites a long text for all ten platforms within their rules', async () => {
    const res = await generate({ task: 'rewrite', text: LONG, channel_ids: ids() });
    expect(res.status, res.text).toBe(200);
    expect(res.body.suggestions).toHaveLength(10);
    for (const s of res.body.suggestions) await expectPostable(s);
  });

  it('splits a long text into a thread within the limits on the threading platforms', async () => {
    for (const p of ['x', 'bluesky', 'mastodon']) {
      const res = await generate({ task: 'thread', text: LONG, channel_id: ws.channels[p] });
      expect(res.status, res.text).toBe(200);
      const [s] = res.body.suggestions;
      expect(s?.thread?.length ?? 0).toBeGreaterThan(0);
      expect((s?.thread?.length ?? 0) + 1).toBeLessThanOrEqual(25);
      await expectPostable(s as Suggestion);
    }
  });

  it('refuses a thread for a channel connected without the reply permission threads need, before any credit', async () => {
    // The CLI connects Threads without threads_manage_replies: createPost would refuse its thread.
    const before = await aiCredits();
    const res = await generate({ task: 'thread', text: LONG, channel_id: ws.channels.threads });
    expect(res.status).toBe(400);
    const problem = res.body as unknown as { errors: Array<{ pointer: string; code: string }> };
    expect(problem.errors).toEqual([
      expect.objectContaining({ pointer: '/channel_id', code: 'thread_unsupported' }),
    ]);
    expect((await aiCredits()).used).toBe(before.used);
  });

  it('suggests replies to an inbox item, and answers 404 for another organization’s item', async () => {
    const other = await workspace(['bluesky'], 'team');
    const mine = inboxItem(ws.orgId, ws.channels.bluesky as string, { text: 'Love the new calendar!' });
    const theirs = inboxItem(other.orgId, other.channels.bluesky as string);
    await seedInbox([mine, theirs]);
    const res = await generate({ task: 'reply', inbox_item_id: mine.id });
    expect(res.status, res.text).toBe(200);
    expect(res.body.suggestions.length).toBeGreaterThan(0);
    for (const s of res.body.suggestions) expect(s.body).toContain('someone.bsky.social');
    const before = await aiCredits();
    const foreign = await generate({ task: 'reply', inbox_item_id: theirs.id });
    expect(foreign.status).toBe(404);
    expect((foreign.body as unknown as { code: string }).code).toBe('resource_not_found');
    expect((await aiCredits()).used).toBe(before.used);
  });

  it('refuses alt text for a media asset that is not a ready image: 400 at /media_id, no credits', async () => {
    const ticket = await api<{ id: string }>('POST', '/v1/media/uploads', {
      key,
      body: { filename: 'clip.mp4', content_type: 'video/mp4', size_bytes: 1000 },
    });
    expect(ticket.status, ticket.text).toBe(201);
    const before = await aiCredits();
    const res = await generate({ task: 'alt_text', media_id: ticket.body.id });
    expect(res.status).toBe(400);
    const problem = res.body as unknown as { code: string; errors: Array<{ pointer: string }> };
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors.map((e) => e.pointer)).toEqual(['/media_id']);
    expect((await aiCredits()).used).toBe(before.used);
  });

  it('replays an Idempotency-Key: the same answer, credits taken once', async () => {
    const body = { task: 'rewrite', text: 'Hello from Herald. We shipped.', channel_ids: [ws.channels.x] };
    const headers = { 'idempotency-key': `gen-${Date.now()}` };
    const before = await aiCredits();
    const first = await generate(body, key, headers);
    expect(first.status, first.text).toBe(200);
    const again = await generate(body, key, headers);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect(again.text).toBe(first.text);
    expect((await aiCredits()).used - before.used).toBe(first.body.usage.credits);
  });

  it('needs the ai:generate scope', async () => {
    const other = await mintKey(ws, 'posts:read,posts:write');
    const res = await generate({ task: 'rewrite', text: 'Hi.', channel_ids: [ws.channels.x] }, other);
    expect(res.status).toBe(403);
    expect((res.body as unknown as { code: string }).code).toBe('insufficient_scope');
  });

  it('is not on the free plan', async () => {
    const free = await workspace(['bluesky'], 'free');
    const k = await mintKey(free);
    const res = await generate({ task: 'rewrite', text: 'Hi.', channel_ids: [free.channels.bluesky] }, k);
    expect(res.status).toBe(403);
    expect((res.body as unknown as { code: string }).code).toBe('feature_not_enabled');
  });

  it('never passes the allowance under 20 parallel generations', async () => {
    const small = await workspace(['bluesky'], 'team');
    await cliOk('plan', 'set', '--org', small.orgId, '--plan', 'team', '--limits', 'ai_credits=12');
    const k = await mintKey(small);
    const body = { task: 'rewrite', text: LONG.slice(0, 2000), channel_ids: [small.channels.bluesky] };
    const results = await Promise.all(Array.from({ length: 20 }, () => generate(body, k)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(ok.length + refused.length).toBe(20);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect((r.body as unknown as { code: string }).code).toBe('quota_exhausted');
    const m = await aiCredits(k);
    expect(m.limit).toBe(12);
    expect(m.used).toBeLessThanOrEqual(12);
    expect(m.used).toBe(ok.reduce((n, r) => n + r.body.usage.credits, 0));
  });
});
