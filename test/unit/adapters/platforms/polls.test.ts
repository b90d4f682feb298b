import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { connector as mastodon } from '#adapters/platforms/mastodon/index';
import { containerPolling } from '#adapters/platforms/meta/publish';
import { connector as threads } from '#adapters/platforms/threads/index';
import type { PublishContext, PublishedRef } from '#adapters/platforms/types';
import { connector as x } from '#adapters/platforms/x/index';
import { createFake as createMastodon, type FakeMastodon } from '../../../fakes/mastodon.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { createFake as createThreads, type ThreadsFake } from '../../../fakes/threads.ts';
import { createFake as createX, type FakeX } from '../../../fakes/x.ts';
import { cdn, failure, mediaInput, publishContext } from './context.ts';

// Polls on X, Mastodon and Threads: each connector sends the root's `options.poll` in the platform's
// documented shape (X's TweetCreateRequest.poll, Mastodon's poll[options][]/poll[expires_in],
// Threads' poll_attachment), never on a thread item, never with media; the contract fakes keep the
// poll as the platform stores it and refuse what the platform refuses.

const cdnFake = cdn();
const fakes = new FakePlatforms([createX(), createMastodon(), createThreads(), cdnFake]);
let fx: FakeX;
let fm: FakeMastodon;
let ft: ThreadsFake;
const savedPolling = { ...containerPolling };

beforeAll(async () => {
  await fakes.start();
  fx = fakes.fake<FakeX>('x');
  fm = fakes.fake<FakeMastodon>('mastodon');
  ft = fakes.fake<ThreadsFake>('threads');
  process.env.HERALD_PLATFORM_X_URL = fakes.url('x');
  process.env.HERALD_PLATFORM_THREADS_URL = fakes.url('threads');
  Object.assign(containerPolling, { firstDelayMs: 5, maxDelayMs: 20, budgetMs: 2000 });
});
afterAll(async () => {
  Object.assign(containerPolling, savedPolling);
  delete process.env.HERALD_PLATFORM_X_URL;
  delete process.env.HERALD_PLATFORM_THREADS_URL;
  await fakes.stop();
});
beforeEach(() => fakes.reset());

const poll = (choices: string[], duration_minutes?: number) => ({
  poll: { choices, ...(duration_minutes === undefined ? {} : { duration_minutes }) },
});
const calls = (platform: string, method: string, path: RegExp) =>
  fakes.requests(platform).filter((r) => r.method === method && path.test(r.path));
const png = () => mediaInput(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]), 'image', 'image/png');
/** A thread item's context: a reply to the root already published. */
const threadItem = (root: PublishedRef): Partial<PublishContext> => ({
  part: { kind: 'thread', index: 0 },
  replyTo: { root, parent: root },
  text: 'The follow-up',
});

// X's OpenAPI document (the excerpt the fake reads): what POST /2/tweets takes.
const excerpt = JSON.parse(
  readFileSync(new URL('../../../fakes/schemas/x-openapi-2.167-inbox.json', import.meta.url), 'utf8'),
) as {
  paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: object }> } }>>;
};
const tweetBody = excerpt.paths['/2/tweets']?.post?.requestBody.content['application/json']?.schema;
const validTweet = new Ajv({ strict: false, allErrors: true }).compile(tweetBody ?? false);

describe('X: TweetCreateRequest.poll', () => {
  const context = (over: Partial<PublishContext> = {}) =>
    publishContext({
      channel: { id: 'ch_x', handle: '@acme', platform: 'x' },
      credentials: { access_token: 'token', account_id: '1500000000000000001' },
      ...over,
    });
  const send = (body: unknown) =>
    fetch(`${fakes.url('x')}/2/tweets`, {
      method: 'POST',
      headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('the excerpt holds the document’s poll: 2–4 options of 1–25 characters, 5–10080 minutes, required', () => {
    expect((tweetBody as { properties: Record<string, unknown> }).properties.poll).toEqual({
      type: 'object',
      required: ['options', 'duration_minutes'],
      properties: {
        duration_minutes: { type: 'integer', minimum: 5, maximum: 10080 },
        options: {
          type: 'array',
          minItems: 2,
          maxItems: 4,
          items: { type: 'string', minLength: 1, maxLength: 25 },
        },
        reply_settings: {
          type: 'string',
          enum: ['following', 'mentionedUsers', 'subscribers', 'verified'],
        },
      },
      additionalProperties: false,
    });
  });

  it('sends the root’s poll as {options, duration_minutes}, a body the OpenAPI document validates', async () => {
    const { ctx } = context({
      options: { ...poll(['Tabs', 'Spaces', 'Both'], 60), reply_settings: 'following' },
    });
    const result = await x.publish(ctx);
    const [post] = calls('x', 'POST', /^\/2\/tweets$/);
    expect(post?.json).toEqual({
      text: 'Hello from Herald',
      poll: { options: ['Tabs', 'Spaces', 'Both'], duration_minutes: 60 },
      reply_settings: 'following',
    });
    expect(validTweet(post?.json), JSON.stringify(validTweet.errors)).toBe(true);
    const tweet = fx.posts[0];
    expect(result.externalId).toBe(tweet?.id);
    expect(tweet?.poll).toMatchObject({
      options: [
        { position: 1, label: 'Tabs', votes: 0 },
        { position: 2, label: 'Spaces', votes: 0 },
        { position: 3, label: 'Both', votes: 0 },
      ],
      duration_minutes: 60,
      voting_status: 'open',
    });
    expect(Date.parse(tweet?.poll?.end_datetime ?? '') - Date.parse(tweet?.created_at ?? '')).toBe(3_600_000);
  });

  it('an absent duration is 1440 minutes', async () => {
    await x.publish(context({ options: poll(['Yes', 'No']) }).ctx);
    expect(calls('x', 'POST', /^\/2\/tweets$/)[0]?.json).toMatchObject({
      poll: { options: ['Yes', 'No'], duration_minutes: 1440 },
    });
    expect(fx.posts[0]?.poll?.duration_minutes).toBe(1440);
  });

  it('a thread item carries no poll (the variant’s poll is the root’s)', async () => {
    const root = await x.publish(context({ options: poll(['Yes', 'No']) }).ctx);
    await x.publish(context({ options: poll(['Yes', 'No']), ...threadItem({ ...root }) }).ctx);
    const [, reply] = calls('x', 'POST', /^\/2\/tweets$/);
    expect(reply?.json).toEqual({ text: 'The follow-up', reply: { in_reply_to_tweet_id: root.externalId } });
    expect(fx.posts.map((t) => t.poll === null)).toEqual([false, true]);
  });

  it('a poll with media is refused before anything is uploaded or posted', async () => {
    const err = await failure(x.publish(context({ options: poll(['Yes', 'No']), media: [png()] }).ctx));
    expect(err.category).toBe('user_content');
    expect(err.retryable).toBe(false);
    expect(fakes.requests('x')).toEqual([]);
  });

  it('the fake refuses what the document refuses: one option, 26 characters, 4 minutes, no duration', async () => {
    for (const [body, message] of [
      [
        { text: 'q', poll: { options: ['Only'], duration_minutes: 60 } },
        '$.poll.options: there must be a minimum of 2 items in the array',
      ],
      [
        { text: 'q', poll: { options: ['a', 'b', 'c', 'd', 'e'], duration_minutes: 60 } },
        '$.poll.options: there must be a maximum of 4 items in the array',
      ],
      [
        { text: 'q', poll: { options: ['a', 'x'.repeat(26)], duration_minutes: 60 } },
        '$.poll.options[1]: may only be 25 characters long',
      ],
      [
        { text: 'q', poll: { options: ['a', 'b'], duration_minutes: 4 } },
        '$.poll.duration_minutes: must have a minimum value of 5',
      ],
      [
        { text: 'q', poll: { options: ['a', 'b'], duration_minutes: 10081 } },
        '$.poll.duration_minutes: must have a maximum value of 10080',
      ],
      [
        { text: 'q', poll: { options: ['a', 'b'] } },
        '$.poll.duration_minutes: is missing but it is required',
      ],
      [
        { text: 'q', poll: { options: ['a', 'b'], duration_minutes: 60, question: 'no' } },
        '$.poll.question: is not defined in the schema and the schema does not allow additional properties',
      ],
    ] as const) {
      expect(validTweet(body)).toBe(false);
      const res = await send(body);
      expect(res.status).toBe(400);
      const problem = (await res.json()) as { type: string; errors: Array<{ message: string }> };
      expect(problem.type).toBe('https://api.twitter.com/2/problems/invalid-request');
      expect(problem.errors[0]?.message).toBe(message);
    }
    expect(fx.posts).toEqual([]);
  });

  it('the fake refuses a poll beside media (mutually exclusive in the document)', async () => {
    const up = await fetch(`${fakes.url('x')}/2/media/upload`, {
      method: 'POST',
      headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
      body: JSON.stringify({
        media: Buffer.from([0x89, 0x50, 0x4e, 0x47, 1]).toString('base64'),
        media_category: 'tweet_image',
      }),
    });
    const id = ((await up.json()) as { data: { id: string } }).data.id;
    const body = {
      text: 'q',
      media: { media_ids: [id] },
      poll: { options: ['a', 'b'], duration_minutes: 60 },
    };
    // The schema alone lets both through: the document says so in words.
    expect(validTweet(body)).toBe(true);
    const res = await send(body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: Array<{ message: string }> }).errors[0]?.message).toMatch(
      /mutually exclusive/,
    );
    expect(fx.posts).toEqual([]);
  });
});

describe('Mastodon: poll[options][] and poll[expires_in]', () => {
  const context = (over: Partial<PublishContext> = {}) =>
    publishContext({
      channel: { id: 'ch_m', handle: '@acme@example.social', platform: 'mastodon' },
      credentials: { instance: fakes.url('mastodon'), access_token: 'token' },
      ...over,
    });

  it('sends the root’s poll with expires_in in seconds; the instance shows it as a Poll', async () => {
    const { ctx } = context({ options: poll(['Tea', 'Coffee'], 30) });
    const result = await mastodon.publish(ctx);
    expect(calls('mastodon', 'POST', /^\/api\/v1\/statuses$/)[0]?.json).toEqual({
      status: 'Hello from Herald',
      poll: { options: ['Tea', 'Coffee'], expires_in: 1800 },
    });
    const status = fm.posts[0];
    expect(status?.poll?.options).toEqual([
      { title: 'Tea', votes_count: 0 },
      { title: 'Coffee', votes_count: 0 },
    ]);
    const shown = await fetch(`${fakes.url('mastodon')}/api/v1/statuses/${result.externalId}`, {
      headers: { authorization: 'Bearer token' },
    });
    const body = (await shown.json()) as {
      poll: { expires_at: string; expired: boolean; options: unknown[] };
    };
    expect(body.poll).toMatchObject({ expired: false, multiple: false, options: status?.poll?.options });
    expect(Date.parse(body.poll.expires_at) - Date.now()).toBeGreaterThan(1790_000);
  });

  it('an absent duration is 1440 minutes (86400 s); a thread item carries none', async () => {
    const root = await mastodon.publish(context({ options: poll(['Yes', 'No']) }).ctx);
    await mastodon.publish(context({ options: poll(['Yes', 'No']), ...threadItem({ ...root }) }).ctx);
    const [first, reply] = calls('mastodon', 'POST', /^\/api\/v1\/statuses$/);
    expect(first?.json).toMatchObject({ poll: { options: ['Yes', 'No'], expires_in: 86_400 } });
    expect(reply?.json).toEqual({ status: 'The follow-up', in_reply_to_id: root.externalId });
  });

  it('a repeat inside the idempotency hour sends the same poll and gets the one status back', async () => {
    const { ctx } = context({ options: poll(['Yes', 'No']) });
    const first = await mastodon.publish(ctx);
    const again = await mastodon.reconcile(ctx);
    expect(again?.externalId).toBe(first.externalId);
    const [a, b] = calls('mastodon', 'POST', /^\/api\/v1\/statuses$/);
    expect(b?.json).toEqual(a?.json);
    expect(fm.posts).toHaveLength(1);
  });

  it('a poll with media is refused before any upload', async () => {
    const err = await failure(
      mastodon.publish(context({ options: poll(['Yes', 'No']), media: [png()] }).ctx),
    );
    expect(err.category).toBe('user_content');
    expect(calls('mastodon', 'POST', /^\/api\/v2\/media$/)).toEqual([]);
    expect(fm.posts).toEqual([]);
  });

  it('the instance refuses media_ids beside a poll, and one choice, as PostStatusService does', async () => {
    const form = new FormData();
    form.set('file', new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47])], { type: 'image/png' }), 'a.png');
    const up = await fetch(`${fakes.url('mastodon')}/api/v2/media`, {
      method: 'POST',
      headers: { authorization: 'Bearer token' },
      body: form,
    });
    const mediaId = ((await up.json()) as { id: string }).id;
    const post = (body: unknown) =>
      fetch(`${fakes.url('mastodon')}/api/v1/statuses`, {
        method: 'POST',
        headers: { authorization: 'Bearer token', 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const both = await post({
      status: 'q',
      media_ids: [mediaId],
      poll: { options: ['a', 'b'], expires_in: 600 },
    });
    expect(both.status).toBe(422);
    expect(await both.json()).toEqual({ error: 'Cannot attach more than 4 files' });
    const one = await post({ status: 'q', poll: { options: ['a'], expires_in: 600 } });
    expect(one.status).toBe(422);
    expect(await one.json()).toEqual({
      error: 'Validation failed: Poll options must have more than one item',
    });
    const soon = await post({ status: 'q', poll: { options: ['a', 'b'], expires_in: 60 } });
    expect(await soon.json()).toEqual({ error: 'Validation failed: Poll expires at is too soon' });
    const dup = await post({ status: 'q', poll: { options: ['a', 'a'], expires_in: 600 } });
    expect(await dup.json()).toEqual({ error: 'Validation failed: Poll options contain duplicate items' });
    expect(fm.posts).toEqual([]);
  });

  it('an instance with smaller limits states them and refuses beyond them: the delivery fails as user content', async () => {
    fm.pollLimits = { ...fm.pollLimits, max_options: 3, max_characters_per_option: 10 };
    const instance = await fetch(`${fakes.url('mastodon')}/api/v2/instance`);
    expect(
      ((await instance.json()) as { configuration: { polls: unknown } }).configuration.polls,
    ).toMatchObject({
      max_options: 3,
      max_characters_per_option: 10,
      min_expiration: 300,
      max_expiration: 2_629_746,
    });
    const err = await failure(mastodon.publish(context({ options: poll(['a', 'b', 'c', 'd']) }).ctx));
    expect(err.category).toBe('user_content');
    expect(err.message).toContain("Poll options can't contain more than 3 items");
    const long = await failure(mastodon.publish(context({ options: poll(['a', 'eleven char']) }).ctx));
    expect(long.message).toContain('Poll options cannot be longer than 10 characters each');
    expect(fm.posts).toEqual([]);
  });
});

describe('Threads: poll_attachment on a TEXT container', () => {
  const context = (over: Partial<PublishContext> = {}) =>
    publishContext({
      channel: { id: 'ch_t', handle: 'herald_test', platform: 'threads' },
      credentials: { access_token: 'token', account_id: ft.userId },
      ...over,
    });
  const form = (r: { body: Buffer }) => new URLSearchParams(r.body.toString('utf8'));
  const containers = () => calls('threads', 'POST', /^\/v1\.0\/\d+\/threads$/);

  it('sends the root’s choices as option_a…option_c; the post shows them as poll_attachment', async () => {
    const result = await threads.publish(context({ options: poll(['Red', 'Green', 'Blue']) }).ctx);
    const params = form(containers()[0] as { body: Buffer });
    expect(params.get('media_type')).toBe('TEXT');
    expect(JSON.parse(params.get('poll_attachment') ?? 'null')).toEqual({
      option_a: 'Red',
      option_b: 'Green',
      option_c: 'Blue',
    });
    const res = await fetch(
      `${fakes.url('threads')}/v1.0/${result.externalId}?fields=id,poll_attachment{option_a,option_b,option_c,total_votes,expiration_timestamp}&access_token=token`,
    );
    const body = (await res.json()) as { poll_attachment: Record<string, unknown> };
    expect(body.poll_attachment).toMatchObject({
      option_a: 'Red',
      option_b: 'Green',
      option_c: 'Blue',
      option_a_votes_percentage: 0,
      total_votes: 0,
    });
    expect(body.poll_attachment).not.toHaveProperty('option_d');
    expect(ft.posts[0]?.mediaType).toBe('TEXT_POST');
  });

  it('a thread item carries no poll', async () => {
    const root = await threads.publish(context({ options: poll(['Yes', 'No']) }).ctx);
    await threads.publish(context({ options: poll(['Yes', 'No']), ...threadItem({ ...root }) }).ctx);
    const [, reply] = containers();
    expect(form(reply as { body: Buffer }).has('poll_attachment')).toBe(false);
    expect(ft.posts.map((p) => Boolean(p.poll))).toEqual([true, false]);
  });

  it('a poll with media is refused before any container is made', async () => {
    cdnFake.files.set('a.jpg', { bytes: Buffer.from([0xff, 0xd8, 0xff, 1]), type: 'image/jpeg' });
    const image = mediaInput(new Uint8Array([0xff, 0xd8, 0xff, 1]), 'image', 'image/jpeg', {
      url: `${fakes.url('cdn')}/a.jpg`,
    });
    const err = await failure(threads.publish(context({ options: poll(['Yes', 'No']), media: [image] }).ctx));
    expect(err.category).toBe('user_content');
    expect(containers()).toEqual([]);
  });

  it('the fake refuses a poll on media, one option, a gap and 26 characters (Graph code 100)', async () => {
    const create = (params: Record<string, string>) =>
      fetch(`${fakes.url('threads')}/v1.0/${ft.userId}/threads`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ access_token: 'token', ...params }),
      });
    for (const params of <Array<Record<string, string>>>[
      {
        media_type: 'IMAGE',
        image_url: `${fakes.url('cdn')}/a.jpg`,
        poll_attachment: '{"option_a":"a","option_b":"b"}',
      },
      { media_type: 'TEXT', text: 'q', poll_attachment: '{"option_a":"a"}' },
      { media_type: 'TEXT', text: 'q', poll_attachment: '{"option_a":"a","option_c":"c"}' },
      {
        media_type: 'TEXT',
        text: 'q',
        poll_attachment: JSON.stringify({ option_a: 'a', option_b: 'x'.repeat(26) }),
      },
      { media_type: 'TEXT', text: 'q', poll_attachment: '["a","b"]' },
    ]) {
      const res = await create(params);
      expect(res.status, JSON.stringify(params)).toBe(400);
      expect(((await res.json()) as { error: { code: number } }).error.code).toBe(100);
    }
    expect(ft.containers.size).toBe(0);
  });
});
