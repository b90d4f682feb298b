import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import type { PostRecord } from '#core/posts';
import {
  CHANNEL_FILTER_PAGES,
  getPostDetails,
  listApprovals,
  listPostsOf,
  POSTS_PAGE,
  publishNow,
  remove,
  reschedule,
} from '#usecases/post-acts';
import {
  channel,
  channelItem,
  fixedId,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  variant,
} from '../support/fixtures.ts';
import { ADMIN, actErrorOf, itemsOf, MEMBER, NOW, OWNER, person, usePeopleTable } from '../support/people.ts';

// The console's posts through the API's own use cases: the list by status and channel (the channel
// filter reads a bounded number of the API's pages: no index holds posts by channel), a post's
// details, and a person's acts — refused to members, to a page that showed an older version, and
// (publish now, delete) while Dangerous AI operations is off — unmetered and audited.

const table = usePeopleTable();
const SECRET = 'unit-cursor-secret';
const CH1 = channel(1, 'bluesky');
const CH2 = channel(2, 'mastodon');

const numbered = (n: number, extra: Partial<PostRecord> = {}) =>
  post({ id: fixedId('post', n), variants: [variant(CH1.id)], ...extra });
const stored = (id: string) => table.get(keys.post(ORG_ID, id)) as unknown as PostRecord | undefined;
const withSettings = (s: Parameters<typeof org>[0]) => orgItem({ ...org(s), owner_count: 1 });
// Its own entries; a refused act's act_refused is tested with the audit log (settings-and-audit).
const audit = () => itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused');

describe('listPostsOf', () => {
  it('lists newest first by status, a page at a time with the API cursor, for every member', async () => {
    const drafts = Array.from({ length: POSTS_PAGE + 2 }, (_, i) => numbered(i + 1));
    table.seed(channelItem(CH1), ...drafts.map(postItem), postItem(numbered(90, { status: 'scheduled' })));

    const first = await listPostsOf({
      orgId: ORG_ID,
      actor: person(MEMBER),
      status: 'draft',
      cursorSecret: SECRET,
    });
    const second = await listPostsOf({
      orgId: ORG_ID,
      actor: person(MEMBER),
      status: 'draft',
      cursor: first.next ?? '',
      cursorSecret: SECRET,
    });

    expect(first.posts).toHaveLength(POSTS_PAGE);
    expect(first.posts[0]?.id).toBe(fixedId('post', POSTS_PAGE + 2));
    expect(second.posts.map((p) => p.id)).toEqual([fixedId('post', 2), fixedId('post', 1)]);
    expect(second.next).toBeNull();
    expect(first.channels.map((c) => c.id)).toEqual([CH1.id]);
  });

  it("filters by channel within the API's pages, reading at most CHANNEL_FILTER_PAGES of them", async () => {
    // 120 posts on CH1, then (older) one on CH2: beyond the pages one console page reads.
    const many = Array.from({ length: 120 }, (_, i) => numbered(i + 10));
    const onCh2 = numbered(2, { variants: [variant(CH2.id)] });
    table.seed(channelItem(CH1), channelItem(CH2), postItem(onCh2), ...many.map(postItem));
    const queries = () => table.callsOf('Query', () => true).length;
    const before = queries();

    const page = await listPostsOf({
      orgId: ORG_ID,
      actor: person(MEMBER),
      channelId: CH2.id,
      cursorSecret: SECRET,
    });

    expect(page.posts).toEqual([]);
    expect(page.next).not.toBeNull();
    // The channels' query and their inbox states' (listChannels), and the API's pages.
    expect(queries() - before).toBe(2 + CHANNEL_FILTER_PAGES);
    const next = await listPostsOf({
      orgId: ORG_ID,
      actor: person(MEMBER),
      channelId: CH2.id,
      cursor: page.next ?? '',
      cursorSecret: SECRET,
    });
    expect(next.posts.map((p) => p.id)).toEqual([onCh2.id]);
  });

  it('refuses a forged cursor as invalid', async () => {
    const err = await actErrorOf(
      listPostsOf({ orgId: ORG_ID, actor: person(MEMBER), cursor: 'forged.cursor', cursorSecret: SECRET }),
    );
    expect(err.kind).toBe('invalid');
  });

  it('lists only the posts waiting for approval on the approvals page', async () => {
    table.seed(
      postItem(numbered(1, { status: 'needs_approval', approval: { mode: 'publish' } })),
      postItem(numbered(2, { status: 'draft' })),
    );
    const list = await listApprovals({
      orgId: ORG_ID,
      actor: person(MEMBER),
      cursorSecret: SECRET,
      now: NOW,
    });
    expect(list.posts.map((p) => p.id)).toEqual([fixedId('post', 1)]);
  });
});

describe('getPostDetails', () => {
  it("answers another organization's post, and a malformed id, as not found", async () => {
    table.seed(postItem({ ...numbered(1), org_id: OTHER_ORG_ID }));
    for (const postId of [fixedId('post', 1), 'not-an-id'])
      expect(
        (await actErrorOf(getPostDetails({ orgId: ORG_ID, actor: person(MEMBER), postId, now: NOW }))).kind,
      ).toBe('not_found');
  });
});

describe('reschedule', () => {
  const P = numbered(5, { status: 'scheduled', scheduled_at: '2030-06-11T10:00:00.000Z', version: 2 });
  const shown = { version: 2, status: 'scheduled' };
  const act = (scheduledAt: string | null, actor = person(ADMIN), s = shown) =>
    reschedule({ orgId: ORG_ID, actor, postId: P.id, scheduledAt, shown: s, now: NOW });

  it('moves the post to the new time, unmetered, and audits it', async () => {
    table.seed(postItem(P));

    await act('2030-06-12T10:00:00.000Z');

    expect(stored(P.id)).toMatchObject({
      status: 'scheduled',
      scheduled_at: '2030-06-12T10:00:00.000Z',
      version: 3,
    });
    expect(table.get(keys.usage(ORG_ID, '2030-06'))?.api_requests).toBeUndefined();
    expect(audit()).toEqual([
      expect.objectContaining({
        action: 'post_rescheduled',
        target: P.id,
        actor: { kind: 'person', user_id: ADMIN.id, email: ADMIN.email },
        detail: { status: 'scheduled', scheduled_at: '2030-06-12T10:00:00.000Z' },
      }),
    ]);
  });

  it('refuses a time in the past or none as invalid, a member as forbidden; nothing changed', async () => {
    table.seed(postItem(P));
    expect(await actErrorOf(act('2030-06-10T09:00:00.000Z'))).toMatchObject({
      kind: 'invalid',
      message: 'Choose a time in the future.',
    });
    expect((await actErrorOf(act(null))).kind).toBe('invalid');
    expect((await actErrorOf(act(null, person(MEMBER)))).kind).toBe('forbidden');
    expect(stored(P.id)).toMatchObject({ scheduled_at: P.scheduled_at, version: 2 });
    expect(audit()).toEqual([]);
  });

  it('refuses a page that showed the post before it was published, saying so', async () => {
    table.seed(postItem({ ...P, status: 'published', version: 5, published_at: NOW.toISOString() }));
    expect(await actErrorOf(act('2030-06-12T10:00:00.000Z'))).toMatchObject({
      kind: 'conflict',
      message: 'This post was published meanwhile. Nothing was done.',
    });
  });
});

describe('publish now and delete', () => {
  const P = numbered(6, { status: 'draft', version: 1 });
  const shown = { version: 1, status: 'draft' };
  const args = (actor = person(OWNER)) => ({ orgId: ORG_ID, actor, postId: P.id, shown, now: NOW });

  it('are refused while Dangerous AI operations is off, as the API refuses them', async () => {
    table.seed(postItem(P));
    expect(await actErrorOf(publishNow(args()))).toMatchObject({
      kind: 'forbidden',
      message: expect.stringMatching(/Dangerous AI operations/),
    });
    expect((await actErrorOf(remove(args()))).kind).toBe('forbidden');
    expect(stored(P.id)).toMatchObject({ status: 'draft', version: 1 });
  });

  it('publish: the post starts publishing, counted against posts_per_month, audited', async () => {
    table.seed(postItem(P), withSettings({ dangerous_ops: true }));

    const res = await publishNow(args());

    expect(res).toEqual({ id: P.id, status: 'publishing' });
    expect(table.get(keys.usage(ORG_ID, '2030-06'))).toMatchObject({ posts_per_month: 1 });
    expect(table.get(keys.usage(ORG_ID, '2030-06'))?.api_requests).toBeUndefined();
    expect(audit().map((e) => [e.action, e.detail])).toEqual([['post_published', { status: 'publishing' }]]);
  });

  it('delete: the post is gone, audited with the status it had; a member is refused', async () => {
    table.seed(postItem(P), withSettings({ dangerous_ops: true }));
    expect((await actErrorOf(remove(args(person(MEMBER))))).kind).toBe('forbidden');

    await remove(args());

    expect(stored(P.id)).toBeUndefined();
    expect(audit().map((e) => [e.action, e.detail])).toEqual([['post_deleted', { status: 'draft' }]]);
  });

  it("answers a post that is gone (or another organization's) as not found", async () => {
    table.seed(withSettings({ dangerous_ops: true }), postItem({ ...P, org_id: OTHER_ORG_ID }));
    expect((await actErrorOf(remove(args()))).kind).toBe('not_found');
    expect(table.get(keys.post(OTHER_ORG_ID, P.id))).toBeDefined();
  });
});
