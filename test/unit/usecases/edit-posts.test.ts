import { DynamoDBDocumentClient, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { PostRecord } from '#core/posts';
import type { Gate } from '#usecases/support/post-writes';
import { updatePost } from '#usecases/update-post';
import { validatePost } from '#usecases/validate-post';
import { rejectedApiError } from '../support/errors.ts';
import {
  channel,
  channelItem,
  fixedId,
  mediaAsset,
  mediaItem,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  serveItems,
  variant,
} from '../support/fixtures.ts';

// updatePost and validatePost over a mocked table: tenancy (another org's post is a 404), the
// If-Match check on the read (412, nothing written), the one conditional write on the version
// read, validatePost's warnings and its writing nothing.

const ddb = mockClient(DynamoDBDocumentClient);
const NOW = new Date('2030-06-01T12:00:00.000Z');
const CH1 = channel(1, 'bluesky');
const gate = (): Gate => ({ admitted: vi.fn(async () => ({})), postsPerMonth: 100 });
const SCHEDULED = post({
  id: fixedId('post', 9),
  status: 'scheduled',
  scheduled_at: '2030-06-03T12:00:00.000Z',
  variants: [variant(CH1.id)],
  version: 3,
  counted_period: '2030-06',
});
const writes = () =>
  ddb.commandCalls(UpdateCommand).filter((c) => String(c.args[0].input.Key?.sk).startsWith('POST#'));

function serve(p: PostRecord = SCHEDULED, settings = {}) {
  serveItems(ddb, [orgItem(org(settings)), channelItem(CH1), postItem(p)]);
  ddb.on(UpdateCommand).resolves({});
}

beforeEach(() => ddb.reset());

describe('updatePost', () => {
  const input = { variants: [{ channel_id: CH1.id, body: 'Fixed' }] };

  it('writes once, conditioned on the version read, and answers the next version', async () => {
    serve();
    const res = await updatePost(ORG_ID, SCHEDULED.id, input, NOW, gate(), { ifMatch: { versions: [3] } });
    expect(res.version).toBe(4);
    expect(res.post).toMatchObject({ status: 'scheduled', scheduled_at: SCHEDULED.scheduled_at });
    expect(writes()).toHaveLength(1);
    expect(writes()[0]?.args[0].input).toMatchObject({
      ConditionExpression: 'version = :expected',
      ExpressionAttributeValues: expect.objectContaining({ ':expected': 3 }),
    });
  });

  it('answers 412 on a stale If-Match, writing nothing', async () => {
    serve();
    const err = await rejectedApiError(
      updatePost(ORG_ID, SCHEDULED.id, input, NOW, gate(), { ifMatch: { versions: [2] } }),
    );
    expect(err.status).toBe(412);
    expect(err.headers).toEqual({ etag: '"3"' });
    expect(writes()).toHaveLength(0);
  });

  it("answers 404 for another organization's post, writing nothing", async () => {
    serve({ ...SCHEDULED, org_id: fixedId('org', 2) });
    const err = await rejectedApiError(updatePost(ORG_ID, SCHEDULED.id, input, NOW, gate()));
    expect(err.code).toBe('resource_not_found');
    expect(writes()).toHaveLength(0);
  });

  it('sends a changed scheduled post to needs_approval when approval is required', async () => {
    serve(SCHEDULED, { approval_required: true });
    const res = await updatePost(ORG_ID, SCHEDULED.id, input, NOW, gate());
    expect(res.post.status).toBe('needs_approval');
  });
});

describe('validatePost', () => {
  it('warns about a channel that needs reconnecting and writes nothing', async () => {
    const stale = { ...channel(2, 'mastodon'), status: 'reauth_required' as const };
    serveItems(ddb, [orgItem(org()), channelItem(stale)]);
    const admitted = vi.fn(async () => ({}));
    const res = await validatePost(
      ORG_ID,
      { variants: [{ channel_id: stale.id, body: 'hi' }], scheduled_at: '2030-06-02T12:00:00.000Z' },
      NOW,
      admitted,
    );
    expect(res).toEqual({
      valid: true,
      errors: [],
      warnings: [
        expect.objectContaining({ pointer: '/variants/0/channel_id', code: 'channel_reauth_required' }),
      ],
    });
    expect(admitted).toHaveBeenCalledOnce();
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it("reports a media item the platform would refuse, from the asset's probed facts", async () => {
    const asset = mediaAsset({ status: 'ready', size_bytes: 1_200_000, width: 1000, height: 1000 });
    serveItems(ddb, [orgItem(org()), channelItem(CH1), mediaItem(asset)]);
    const res = await validatePost(
      ORG_ID,
      {
        variants: [{ channel_id: CH1.id, body: 'big', media: [{ url: asset.url, type: 'image' }] }],
        draft: true,
      },
      NOW,
      async () => ({}),
    );
    expect(res.valid).toBe(false);
    expect(res.errors).toEqual([
      expect.objectContaining({ pointer: '/variants/0/media/0', code: 'media_too_large' }),
    ]);
  });
});
