import { beforeAll, describe, expect, it } from 'vitest';
import { api, dangerous, fakeState, type Workspace, waitForPost, workspace } from './helpers.ts';

// Polls over HTTP against the local stack and the platforms' contract fakes: a variant's
// `options.poll` reaches X, Mastodon and Threads in each platform's own shape, and the fake holds
// the poll as the platform keeps it (X's Poll object, Mastodon's Poll entity, Threads'
// poll_attachment); on a thread only the root carries it.

type Json = Record<string, unknown>;
type Delivery = {
  stage: string;
  external_id: string | null;
  error: string | null;
  thread: Array<{ stage: string; external_id: string | null }>;
};
type Post = { id: string; status: string; type: string; deliveries: Delivery[]; variants: Json[] };

const settled = (p: Post) => p.status === 'published' || p.status === 'failed';

let ws: Workspace;
beforeAll(async () => {
  ws = await workspace(['x', 'mastodon', 'threads']);
  // publish_now is a dangerous operation for API keys.
  await dangerous(ws, true);
}, 60_000);

/** The fake's posts carrying `marker` (files run side by side share the fakes). */
async function postsWith(platform: string, marker: string): Promise<Json[]> {
  const state = await fakeState(platform);
  return (state.posts ?? []).filter((p) => String(p.text ?? '').includes(marker));
}

async function publishPoll(platform: string, marker: string, extra: Json = {}) {
  const choices = ['Tabs', 'Spaces', 'Both'];
  const res = await api<Post>('POST', '/v1/posts', {
    key: ws.key,
    body: {
      variants: [
        {
          channel_id: ws.channels[platform],
          body: `${marker} which one?`,
          options: { poll: { choices, ...(platform === 'threads' ? {} : { duration_minutes: 60 }) } },
          ...extra,
        },
      ],
      publish_now: true,
    },
  });
  expect(res.status, res.text).toBe(201);
  expect(res.body.variants[0]?.options).toMatchObject({ poll: { choices } });
  const post = await waitForPost<Post>(ws.key, res.body.id, settled, 60_000);
  expect(post.status, JSON.stringify(post.deliveries)).toBe('published');
  return post;
}

describe('a poll per platform, as the platform stores it', () => {
  it('x: the tweet holds a Poll of three options for 60 minutes', async () => {
    const marker = `poll-x-${Date.now()}`;
    const post = await publishPoll('x', marker);
    const [tweet] = await postsWith('x', marker);
    expect(tweet?.id).toBe(post.deliveries[0]?.external_id);
    expect(tweet?.media).toEqual([]);
    expect(tweet?.poll).toMatchObject({
      options: [
        { position: 1, label: 'Tabs', votes: 0 },
        { position: 2, label: 'Spaces', votes: 0 },
        { position: 3, label: 'Both', votes: 0 },
      ],
      duration_minutes: 60,
      voting_status: 'open',
    });
    // What Herald sent: TweetCreateRequest.poll, which the fake checked against X's OpenAPI excerpt.
    const sent = (await fakeState('x')).requests.find(
      (r) => r.method === 'POST' && r.path === '/2/tweets' && JSON.stringify(r.json).includes(marker),
    );
    expect((sent?.json as Json | undefined)?.poll).toEqual({
      options: ['Tabs', 'Spaces', 'Both'],
      duration_minutes: 60,
    });
  }, 90_000);

  it('mastodon: the status holds a Poll expiring in an hour', async () => {
    const marker = `poll-mastodon-${Date.now()}`;
    const before = Date.now();
    const post = await publishPoll('mastodon', marker);
    const [status] = await postsWith('mastodon', marker);
    expect(status?.id).toBe(post.deliveries[0]?.external_id);
    const poll = status?.poll as { options: unknown; expires_at: string; multiple: boolean };
    expect(poll.options).toEqual([
      { title: 'Tabs', votes_count: 0 },
      { title: 'Spaces', votes_count: 0 },
      { title: 'Both', votes_count: 0 },
    ]);
    expect(poll.multiple).toBe(false);
    const lasts = Date.parse(poll.expires_at) - before;
    expect(lasts).toBeGreaterThan(3_590_000);
    expect(lasts).toBeLessThan(3_600_000 + 60_000);
  }, 90_000);

  it('threads: the text post holds a poll_attachment of option_a…option_c, open 24 hours', async () => {
    const marker = `poll-threads-${Date.now()}`;
    const post = await publishPoll('threads', marker);
    const [published] = await postsWith('threads', marker);
    expect(published?.id).toBe(post.deliveries[0]?.external_id);
    expect(published?.mediaType).toBe('TEXT_POST');
    expect(published?.poll).toMatchObject({
      option_a: 'Tabs',
      option_b: 'Spaces',
      option_c: 'Both',
      total_votes: 0,
    });
    expect(published?.poll).not.toHaveProperty('option_d');
  }, 90_000);
});

describe('a poll on a thread', () => {
  it('x: only the root carries the poll; the follow-ups are plain replies', async () => {
    const marker = `poll-thread-${Date.now()}`;
    const post = await publishPoll('x', marker, {
      thread: [{ body: `${marker} 2/3` }, { body: `${marker} 3/3` }],
    });
    expect(post.type).toBe('thread');
    const tweets = await postsWith('x', marker);
    expect(tweets).toHaveLength(3);
    expect(tweets.map((t) => t.poll !== null)).toEqual([true, false, false]);
    expect(tweets.map((t) => t.in_reply_to)).toEqual([null, tweets[0]?.id, tweets[1]?.id]);
  }, 90_000);
});
