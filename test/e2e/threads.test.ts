import { beforeAll, describe, expect, it } from 'vitest';
import { FAKE_APPS } from '../fakes/oauth.ts';
import {
  api,
  baseUrl,
  cliOk,
  dangerous,
  failPlatform,
  fakeState,
  type Workspace,
  waitForPost,
  workspace,
} from './helpers.ts';

// Threads and first comments over HTTP against the local stack and the platforms' contract fakes:
// a post's root, its follow-up items and its first comment reach X, Bluesky, Threads and Mastodon
// as replies, each under the part before it; each part's outcome is on the delivery; a thread that
// fails part-way resumes where it stopped when published again, no part posted twice; and the
// inputs the platforms cannot take are refused at createPost.

type Json = Record<string, unknown>;
type Part = { stage: string; external_id: string | null; url: string | null; error: string | null };
type Delivery = Part & {
  channel_id: string;
  attempts: number;
  thread: Array<Part & { index: number }>;
  first_comment: Part | null;
};
type Post = { id: string; status: string; type: string; deliveries: Delivery[]; variants: Json[] };

const REPLY_PLATFORMS = ['x', 'bluesky', 'threads', 'mastodon'] as const;
const LANDING = 'http://127.0.0.1:9/connected';
const settled = (p: Post) => p.status === 'published' || p.status === 'failed';

/**
 * A Threads channel connected through the consent flow: its grant (threads_manage_replies, which
 * replies need) is recorded at the callback. Pasted credentials carry no grant to record.
 */
async function connectThreads(ws: Workspace): Promise<string> {
  const created = await api<{ id: string; authorize_url: string }>('POST', '/v1/channel-connections', {
    key: ws.key,
    body: { platform: 'threads', redirect_uri: LANDING },
  });
  expect(created.status, created.text).toBe(201);
  const atPlatform = await fetch(created.body.authorize_url, { redirect: 'manual' });
  expect(atPlatform.status).toBe(302);
  const back = new URL(String(atPlatform.headers.get('location')));
  expect(back.origin).toBe(baseUrl());
  expect((await fetch(back, { redirect: 'manual' })).status).toBe(303);
  const done = await api<{ status: string; channel: { id: string } | null }>(
    'GET',
    `/v1/channel-connections/${created.body.id}`,
    { key: ws.key },
  );
  expect(done.body.status, done.text).toBe('connected');
  return String(done.body.channel?.id);
}

let ws: Workspace;
beforeAll(async () => {
  const app = FAKE_APPS.threads;
  await cliOk(
    'platform-app',
    'set',
    '--platform',
    'threads',
    '--client-id',
    app.clientId,
    '--client-secret',
    app.clientSecret,
  );
  ws = await workspace(['x', 'bluesky', 'mastodon', 'linkedin', 'tiktok']);
  ws.channels.threads = await connectThreads(ws);
  await dangerous(ws, true);
}, 90_000);

/** The fake's posts carrying `marker`, in the order the platform received them. */
async function postsWith(platform: string, marker: string): Promise<Json[]> {
  const state = await fakeState(platform);
  return (state.posts ?? []).filter((p) => JSON.stringify(p.text ?? p.record ?? p).includes(marker));
}

/** For each fake post: its own id and the id of the post it replies to (null for a root). */
function replyChain(
  platform: string,
  posts: Json[],
): Array<{ id: string; parent: string | null; root: string | null }> {
  return posts.map((p) => {
    switch (platform) {
      case 'x':
        return { id: String(p.id), parent: (p.in_reply_to as string | null) ?? null, root: null };
      case 'bluesky': {
        const reply = (p.record as { reply?: { root: { uri: string }; parent: { uri: string } } }).reply;
        return { id: String(p.uri), parent: reply?.parent.uri ?? null, root: reply?.root.uri ?? null };
      }
      case 'threads':
        return {
          id: String(p.id),
          parent: (p.repliedTo as string) ?? null,
          root: (p.rootPost as string) ?? null,
        };
      default:
        return { id: String(p.id), parent: (p.in_reply_to_id as string | null) ?? null, root: null };
    }
  });
}

const thread = (marker: string, n: number) =>
  Array.from({ length: n }, (_, j) => ({ body: `${marker} ${j + 2}/5` }));

async function create(body: Json) {
  return api<Post>('POST', '/v1/posts', { key: ws.key, body });
}

describe('threads and first comments on the platforms whose comments are replies', () => {
  it.each(REPLY_PLATFORMS)(
    '%s: a 5-post thread, each a reply to the one before under the root, then the first comment under the last',
    async (platform) => {
      const marker = `thread-${platform}-${Date.now()}`;
      const res = await create({
        variants: [
          {
            channel_id: ws.channels[platform],
            body: `${marker} 1/5`,
            thread: thread(marker, 4),
            first_comment: { body: `${marker} links` },
          },
        ],
        publish_now: true,
      });
      expect(res.status, res.text).toBe(201);
      expect(res.body.type).toBe('thread');
      expect(res.body.variants[0]).toMatchObject({
        thread: thread(marker, 4).map((t) => ({ ...t, media: [] })),
      });

      const post = await waitForPost<Post>(ws.key, res.body.id, settled, 60_000);
      expect(post.status, JSON.stringify(post.deliveries)).toBe('published');
      const [d] = post.deliveries;
      expect(d?.stage).toBe('published');
      expect(d?.thread.map((p) => [p.index, p.stage, p.error])).toEqual([
        [0, 'published', null],
        [1, 'published', null],
        [2, 'published', null],
        [3, 'published', null],
      ]);
      expect(d?.first_comment).toMatchObject({ stage: 'published', error: null });

      // On the platform: six posts, each once, each answering the one before; the comment the last item.
      const chain = replyChain(platform, await postsWith(platform, marker));
      expect(chain).toHaveLength(6);
      const ids = [
        d?.external_id,
        ...(d?.thread ?? []).map((p) => p.external_id),
        d?.first_comment?.external_id,
      ];
      expect(chain.map((c) => c.id)).toEqual(ids);
      expect(chain[0]?.parent).toBeNull();
      chain.slice(1).forEach((c, k) => {
        expect(c.parent, `part ${k + 1}`).toBe(chain[k]?.id);
        if (c.root !== null) expect(c.root).toBe(chain[0]?.id);
      });
    },
    90_000,
  );

  it('a first comment alone goes under the post itself', async () => {
    const marker = `comment-${Date.now()}`;
    const res = await create({
      variants: [
        {
          channel_id: ws.channels.mastodon,
          body: `${marker} post`,
          first_comment: { body: `${marker} #tags` },
        },
      ],
      publish_now: true,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.type).toBe('single');
    const post = await waitForPost<Post>(ws.key, res.body.id, settled);
    expect(post.status).toBe('published');
    const chain = replyChain('mastodon', await postsWith('mastodon', marker));
    expect(chain.map((c) => c.parent)).toEqual([null, chain[0]?.id]);
    expect(post.deliveries[0]?.thread).toEqual([]);
  });
});

describe('a thread that fails part-way', () => {
  it('refused at item 3 (non-retryably): the post fails there; published again it resumes at item 3, no part twice', async () => {
    const marker = `resume-${Date.now()}`;
    // Item 3 of the thread is the second follow-up ("3/5"): the fake refuses it once, as a
    // validation failure (not retried).
    await failPlatform('mastodon', {
      status: 422,
      body: { error: 'Validation failed: refused once by the test' },
      pathPattern: '^/api/v1/statuses$',
      bodyIncludes: `${marker} 3/5`,
      times: 1,
    });
    const res = await create({
      variants: [
        {
          channel_id: ws.channels.mastodon,
          body: `${marker} 1/5`,
          thread: thread(marker, 4),
          first_comment: { body: `${marker} links` },
        },
      ],
      publish_now: true,
    });
    expect(res.status, res.text).toBe(201);
    const failed = await waitForPost<Post>(ws.key, res.body.id, settled, 60_000);
    expect(failed.status).toBe('failed');
    const [d] = failed.deliveries;
    expect(d).toMatchObject({ stage: 'failed', error_category: 'user_content' });
    expect(d?.external_id).toBeTruthy();
    expect(d?.thread.map((p) => p.stage)).toEqual(['published', 'failed', 'queued', 'queued']);
    expect(d?.thread[1]?.error).toMatch(/refused once by the test/);
    expect(d?.first_comment?.stage).toBe('queued');
    expect(await postsWith('mastodon', marker)).toHaveLength(2);

    const again = await api<Post>('POST', `/v1/posts/${res.body.id}/publish`, { key: ws.key });
    expect(again.status, again.text).toBeLessThan(300);
    const post = await waitForPost<Post>(ws.key, res.body.id, (p) => p.status === 'published', 60_000);
    const [after] = post.deliveries;
    // The root and item 2 kept their ids: they were not posted again.
    expect(after?.external_id).toBe(d?.external_id);
    expect(after?.thread[0]?.external_id).toBe(d?.thread[0]?.external_id);
    expect(after?.thread.map((p) => p.stage)).toEqual(['published', 'published', 'published', 'published']);
    expect(after?.first_comment?.stage).toBe('published');

    const chain = replyChain('mastodon', await postsWith('mastodon', marker));
    const texts = (await postsWith('mastodon', marker)).map((p) => p.text);
    expect(texts).toEqual([
      `${marker} 1/5`,
      `${marker} 2/5`,
      `${marker} 3/5`,
      `${marker} 4/5`,
      `${marker} 5/5`,
      `${marker} links`,
    ]);
    chain.slice(1).forEach((c, k) => {
      expect(c.parent).toBe(chain[k]?.id);
    });
  });
});

describe('inputs the platforms cannot take are refused at createPost, nothing created', () => {
  const refused = async (variant: Json) => {
    const before = (await api<{ data: Json[] }>('GET', '/v1/posts', { key: ws.key })).body.data.length;
    const res = await create({ variants: [variant], draft: true });
    expect(res.status, res.text).toBe(400);
    expect((res.body as unknown as Json).type).toMatch(/validation-failed$/);
    const after = (await api<{ data: Json[] }>('GET', '/v1/posts', { key: ws.key })).body.data.length;
    expect(after).toBe(before);
    return ((res.body as unknown as { errors: Array<{ pointer: string; code: string }> }).errors ?? []).map(
      (e) => [e.pointer, e.code],
    );
  };

  it('a thread on LinkedIn', async () => {
    expect(await refused({ channel_id: ws.channels.linkedin, body: 'a', thread: [{ body: 'b' }] })).toEqual([
      ['/variants/0/thread', 'thread_unsupported'],
    ]);
  });

  it('25 follow-up items', async () => {
    const items = Array.from({ length: 25 }, (_, j) => ({ body: `item ${j}` }));
    expect(await refused({ channel_id: ws.channels.x, body: 'a', thread: items })).toEqual([
      ['/variants/0/thread', 'too_many_items'],
    ]);
  });

  it("an item over the platform's limit", async () => {
    expect(
      await refused({
        channel_id: ws.channels.bluesky,
        body: 'a',
        thread: [{ body: 'ok' }, { body: 'x'.repeat(301) }],
      }),
    ).toEqual([['/variants/0/thread/1/body', 'text_too_long']]);
  });

  it('a first comment on TikTok', async () => {
    const errors = await refused({
      channel_id: ws.channels.tiktok,
      body: 'a',
      first_comment: { body: 'hi' },
    });
    expect(errors).toContainEqual(['/variants/0/first_comment', 'first_comment_unsupported']);
  });
});
