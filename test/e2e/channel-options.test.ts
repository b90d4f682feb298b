import { beforeAll, describe, expect, it } from 'vitest';
import { api, failPlatform, fakeState, mcpClient, mint, type Workspace, workspace } from './helpers.ts';

// Reading one channel and what it accepts, over HTTP against the local stack and the platforms'
// contract fakes: getChannel (and its 404 across organizations), getChannelOptions per platform
// with the choices read live (Pinterest boards, YouTube categories, TikTok's creator_info, LinkedIn
// organizations), the 5-minute cache, and a platform that fails.

type Json = Record<string, unknown>;
interface Options {
  platform: string;
  capabilities: Json & { formats: string[]; missing: Json };
  options: Record<string, Json>;
  choices: Record<string, Array<{ value: string; label: string }>>;
  limits: Json;
  notes: Array<{ code: string; option?: string; capability?: string; scope?: string; message: string }>;
  choices_read_at: string | null;
}

let ws: Workspace;
let other: Workspace;

beforeAll(async () => {
  ws = await workspace(['pinterest', 'youtube', 'tiktok', 'linkedin', 'x']);
  other = await workspace([]);
}, 120_000);

const options = (key: string, id: string) => api<Options>('GET', `/v1/channels/${id}/options`, { key });
/** How many times the platform's fake answered this path (e2e files share the fakes: a path only this file asks). */
const served = async (platform: string, path: string) =>
  (await fakeState(platform)).requests.filter((r) => r.path === path).length;

describe('getChannel', () => {
  it('answers the channel as listChannels shows it, with its capabilities', async () => {
    const one = await api<Json>('GET', `/v1/channels/${ws.channels.x}`, { key: ws.key });
    expect(one.status).toBe(200);
    const list = await api<{ data: Json[] }>('GET', '/v1/channels', { key: ws.key });
    expect(list.body.data.find((c) => c.id === ws.channels.x)).toEqual(one.body);
    expect(one.body).toMatchObject({
      id: ws.channels.x,
      platform: 'x',
      status: 'live',
      capabilities: {
        thread: true,
        first_comment: true,
        unpublish: true,
        edit_after_publish: false,
        formats: [],
      },
    });
  });

  it("is a 404 for another organization's channel, and for an id that is not one", async () => {
    for (const path of [`/v1/channels/${ws.channels.x}`, `/v1/channels/${ws.channels.x}/options`]) {
      const res = await api<Json>('GET', path, { key: other.key });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('resource_not_found');
    }
    expect((await api('GET', '/v1/channels/ch_nope', { key: ws.key })).status).toBe(404);
    expect((await api('GET', '/v1/channels/ch_nope/options', { key: ws.key })).status).toBe(404);
  });

  it('needs channels:read', async () => {
    const key = await mint(ws, 'posts:read');
    for (const path of [`/v1/channels/${ws.channels.x}`, `/v1/channels/${ws.channels.x}/options`]) {
      const res = await api<Json>('GET', path, { key });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('insufficient_scope');
    }
  });
});

describe('getChannelOptions', () => {
  it("pinterest: the account's boards for board_id", async () => {
    const res = await options(ws.key, ws.channels.pinterest ?? '');
    expect(res.status).toBe(200);
    expect(res.body.platform).toBe('pinterest');
    expect(res.body.choices.board_id).toEqual([
      { value: '549755885175', label: 'Herald' },
      { value: '549755885176', label: 'Ideas (secret)' },
    ]);
    expect(res.body.options.board_id).toMatchObject({
      type: 'string',
      required: false,
      pattern: '^[0-9]{1,32}$',
    });
    expect(res.body.capabilities).toMatchObject({
      thread: false,
      first_comment: false,
      unpublish: true,
      formats: [],
    });
    expect(res.body.choices_read_at).not.toBeNull();
  });

  it('youtube: assignable categories, its formats, and what to do about first comments', async () => {
    const res = await options(ws.key, ws.channels.youtube ?? '');
    expect(res.status).toBe(200);
    expect(res.body.choices.category_id).toContainEqual({ value: '22', label: 'People & Blogs' });
    expect(res.body.choices.category_id?.map((c) => c.value)).not.toContain('18');
    expect(res.body.options.format).toMatchObject({ type: 'string', values: ['video', 'short'] });
    expect(res.body.options.privacy_status?.values).toEqual(['public', 'unlisted', 'private']);
    expect(res.body.capabilities.formats).toEqual(['video', 'short']);
    expect(res.body.capabilities).toMatchObject({ poll: false, link_card: false });
    expect(res.body.capabilities).not.toHaveProperty('post_modes');
    expect(res.body.options.playlist_id).toMatchObject({ type: 'string', required: false });
    // Connected with pasted credentials: no recorded grant, so no comment scope.
    expect(res.body.capabilities).toMatchObject({
      first_comment: false,
      missing: { first_comment: 'https://www.googleapis.com/auth/youtube.force-ssl' },
    });
    expect(res.body.notes).toContainEqual(
      expect.objectContaining({ code: 'missing_grant', capability: 'first_comment' }),
    );
  });

  it("tiktok: the creator's privacy levels and limits", async () => {
    const res = await options(ws.key, ws.channels.tiktok ?? '');
    expect(res.status).toBe(200);
    expect(res.body.choices.privacy_level?.map((c) => c.value).sort()).toEqual(
      ['FOLLOWER_OF_CREATOR', 'MUTUAL_FOLLOW_FRIENDS', 'PUBLIC_TO_EVERYONE', 'SELF_ONLY'].sort(),
    );
    expect(res.body.limits).toMatchObject({
      max_video_post_duration_sec: 600,
      comment_disabled: false,
      duet_disabled: false,
      stitch_disabled: false,
    });
    expect(res.body.capabilities).toMatchObject({ first_comment: false, unpublish: false, poll: false });
    // The local stack's TikTok app is not marked audited: inbox mode only.
    expect(res.body.capabilities.post_modes).toEqual(['inbox']);
    expect(res.body.options.post_mode?.values).toEqual(['direct', 'inbox']);
  });

  it('linkedin: the organizations the member administers', async () => {
    const res = await options(ws.key, ws.channels.linkedin ?? '');
    expect(res.status).toBe(200);
    expect(res.body.choices.organization).toEqual([
      { value: 'urn:li:organization:2414183', label: 'Acme Corp' },
    ]);
    expect(res.body.options.visibility?.values).toEqual(['PUBLIC', 'CONNECTIONS', 'LOGGED_IN']);
    expect(res.body.capabilities).toMatchObject({
      formats: ['post', 'document'],
      poll: true,
      link_card: true,
    });
  });

  it('x: options, no choices to read', async () => {
    const res = await options(ws.key, ws.channels.x ?? '');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      platform: 'x',
      choices: {},
      limits: {},
      notes: [],
      choices_read_at: null,
    });
    expect(res.body.options.reply_settings?.values).toContain('mentionedUsers');
    expect(res.body.capabilities).toMatchObject({ formats: [], poll: true, link_card: false });
    expect(res.body.options.poll).toMatchObject({
      type: 'object',
      properties: { choices: { type: 'array', required: true, max_items: 4 } },
    });
  });

  it('answers a second call from the cache, without asking the platform', async () => {
    const first = await options(ws.key, ws.channels.youtube ?? '');
    const before = await served('youtube', '/youtube/v3/videoCategories');
    const again = await options(ws.key, ws.channels.youtube ?? '');
    expect(again.status).toBe(200);
    expect(await served('youtube', '/youtube/v3/videoCategories')).toBe(before);
    expect(again.body.choices).toEqual(first.body.choices);
    expect(again.body.choices_read_at).toBe(first.body.choices_read_at);
  });

  it('a platform that fails: 200 with empty choices and a note per list, not cached', async () => {
    const mine = await workspace(['youtube']);
    await failPlatform('youtube', {
      status: 503,
      pathPattern: 'videoCategories',
      body: {
        error: {
          code: 503,
          message: 'The service is currently unavailable.',
          errors: [{ reason: 'backendError' }],
        },
      },
    });
    const failed = await options(mine.key, mine.channels.youtube ?? '');
    expect(failed.status).toBe(200);
    expect(failed.body.choices).toEqual({});
    expect(failed.body.choices_read_at).toBeNull();
    expect(failed.body.notes).toContainEqual(
      expect.objectContaining({ code: 'choices_unavailable', option: 'category_id' }),
    );
    // Options and capabilities do not depend on the platform.
    expect(failed.body.options.category_id).toBeDefined();
    const later = await options(mine.key, mine.channels.youtube ?? '');
    expect(later.body.choices.category_id?.length).toBeGreaterThan(5);
  });

  it('as MCP tools: get_channel and get_channel_options', async () => {
    const client = await mcpClient(ws.key);
    try {
      const got = await client.callTool({
        name: 'get_channel_options',
        arguments: { id: ws.channels.pinterest },
      });
      expect(got.isError ?? false).toBe(false);
      const body = got.structuredContent as Options;
      expect(body.choices.board_id?.[0]?.value).toBe('549755885175');
      const one = await client.callTool({ name: 'get_channel', arguments: { id: ws.channels.x } });
      expect((one.structuredContent as Json).id).toBe(ws.channels.x);
    } finally {
      await client.close();
    }
  });
});
