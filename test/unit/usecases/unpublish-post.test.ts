import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { BatchGetCommand, DynamoDBDocumentClient, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { Platform } from '#core/platforms';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { unpublishPost } from '#usecases/unpublish-post';
import { rejectedApiError } from '../support/errors.ts';
import {
  CREATED_AT,
  channel,
  channelItem,
  fixedId,
  type Item,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  serveItems,
  variant,
} from '../support/fixtures.ts';

// unpublishPost against a mocked table: the toggle, the per-channel refusal of platforms that
// cannot take posts down, the channel_ids checks, and a repeat that writes nothing.

const ddb = mockClient(DynamoDBDocumentClient);
const NOW = new Date('2030-06-01T12:00:00.000Z');
const X = channel(1, 'x');
const IG = channel(2, 'instagram');
const SKY = channel(3, 'bluesky');

const delivered = (ch: { id: string }, stage: DeliveryRecord['stage'] = 'published'): DeliveryRecord => ({
  channel_id: ch.id,
  stage,
  external_id: stage === 'published' || stage === 'removing' ? `ext-${ch.id}` : null,
  url: null,
  error: null,
  error_category: null,
  attempts: 1,
  updated_at: CREATED_AT,
  round: 1,
  rev: 'r1',
});

function published(stages: Array<[{ id: string }, DeliveryRecord['stage']]>, over: Partial<PostRecord> = {}) {
  return post({
    id: fixedId('post', 7),
    status: 'published',
    round: 1,
    variants: stages.map(([ch], i) => variant(ch.id, i + 1)),
    deliveries: Object.fromEntries(stages.map(([ch, stage]) => [ch.id, delivered(ch, stage)])),
    ...over,
  });
}

let gate: { admitted: ReturnType<typeof vi.fn<() => Promise<unknown>>> };
function given(p: PostRecord, dangerous = true, channels = [X, IG, SKY]) {
  const items: Item[] = [orgItem(org({ dangerous_ops: dangerous })), postItem(p)];
  serveItems(ddb, items);
  // The workspace's channels are one Query, beside the post's read.
  ddb.on(QueryCommand).resolves({ Items: channels.map(channelItem) });
}
const postWrites = () => ddb.commandCalls(UpdateCommand).map((c) => c.args[0].input);
/** The deliveries the one post write set (its whole `deliveries` attribute). */
const writtenDeliveries = () => {
  const input = postWrites()[0];
  const names = input?.ExpressionAttributeNames ?? {};
  const at = Object.entries(names).find(([, v]) => v === 'deliveries')?.[0];
  const valueKey = at
    ? /(:\w+)/.exec((input?.UpdateExpression ?? '').split(`${at} = `)[1] ?? '')?.[1]
    : undefined;
  return (valueKey ? input?.ExpressionAttributeValues?.[valueKey] : undefined) as Record<
    string,
    DeliveryRecord
  >;
};

beforeEach(() => {
  ddb.reset();
  ddb.on(UpdateCommand).resolves({});
  gate = { admitted: vi.fn<() => Promise<unknown>>(async () => undefined) };
});

describe('unpublishPost', () => {
  it('turns every published delivery removing in one conditional write; Instagram stays published with unpublish_unsupported', async () => {
    given(
      published([
        [X, 'published'],
        [IG, 'published'],
        [SKY, 'failed'],
      ]),
    );
    const res = await unpublishPost(ORG_ID, fixedId('post', 7), undefined, NOW, gate);
    expect(res.status).toBe('published');
    const by = Object.fromEntries(res.deliveries.map((d) => [d.channel_id, d]));
    expect(by[X.id]).toMatchObject({ stage: 'removing', error: null });
    expect(by[IG.id]).toMatchObject({ stage: 'published', error: 'unpublish_unsupported' });
    expect(by[SKY.id]).toMatchObject({ stage: 'failed' });
    expect(postWrites()).toHaveLength(1);
    expect(postWrites()[0]).toMatchObject({ ConditionExpression: 'version = :expected' });
    const written = writtenDeliveries();
    expect(written[X.id]?.stage).toBe('removing');
    expect(written[IG.id]).toMatchObject({ stage: 'published', error: 'unpublish_unsupported' });
    expect(gate.admitted).toHaveBeenCalledTimes(1);
  });

  it('a post on Instagram alone: answered per channel, nothing goes removing (nothing is sent)', async () => {
    given(published([[IG, 'published']]));
    const res = await unpublishPost(ORG_ID, fixedId('post', 7), undefined, NOW, gate);
    expect(res.deliveries).toEqual([
      expect.objectContaining({ stage: 'published', error: 'unpublish_unsupported' }),
    ]);
    expect(Object.values(writtenDeliveries()).map((d) => d.stage)).toEqual(['published']);
  });

  it('answers 403 dangerous_ops_disabled while the toggle is off, and writes nothing', async () => {
    given(published([[X, 'published']]), false);
    const err = await rejectedApiError(unpublishPost(ORG_ID, fixedId('post', 7), undefined, NOW, gate));
    expect(err).toMatchObject({ code: 'dangerous_ops_disabled', status: 403 });
    expect(postWrites()).toHaveLength(0);
  });

  it('answers 404 for a post of no such id (after the toggle)', async () => {
    given(published([[X, 'published']]));
    const err = await rejectedApiError(unpublishPost(ORG_ID, fixedId('post', 8), undefined, NOW, gate));
    expect(err.code).toBe('resource_not_found');
  });

  it('refuses channel_ids not in the post, not published, or twice: 400 with each pointer, nothing written', async () => {
    given(
      published([
        [X, 'published'],
        [SKY, 'failed'],
      ]),
    );
    const ids = [fixedId('channel', 9), SKY.id, X.id, X.id];
    const err = await rejectedApiError(unpublishPost(ORG_ID, fixedId('post', 7), ids, NOW, gate));
    expect(err.code).toBe('validation_failed');
    expect(err.errors?.map((e) => [e.pointer, e.code])).toEqual([
      ['/channel_ids/0', 'not_in_post'],
      ['/channel_ids/1', 'not_published'],
      ['/channel_ids/3', 'duplicate_channel'],
    ]);
    expect(postWrites()).toHaveLength(0);
  });

  it('removes only the channels named', async () => {
    given(
      published([
        [X, 'published'],
        [SKY, 'published'],
      ]),
    );
    const res = await unpublishPost(ORG_ID, fixedId('post', 7), [SKY.id], NOW, gate);
    const by = Object.fromEntries(res.deliveries.map((d) => [d.channel_id, d.stage]));
    expect(by).toEqual({ [X.id]: 'published', [SKY.id]: 'removing' });
  });

  it('a second request while the removals run changes nothing and writes nothing', async () => {
    given(
      published([
        [X, 'removing'],
        [SKY, 'removed'],
      ]),
    );
    const res = await unpublishPost(ORG_ID, fixedId('post', 7), undefined, NOW, gate);
    expect(res.deliveries.map((d) => d.stage)).toEqual(['removing', 'removed']);
    expect(postWrites()).toHaveLength(0);
    expect(gate.admitted).toHaveBeenCalledTimes(1);
  });

  it('answers 409 when nothing is published to remove, and for a publishing post', async () => {
    given(
      published(
        [
          [X, 'removed'],
          [SKY, 'failed'],
        ],
        { status: 'failed' },
      ),
    );
    expect(
      (await rejectedApiError(unpublishPost(ORG_ID, fixedId('post', 7), undefined, NOW, gate))).code,
    ).toBe('resource_conflict');
    ddb.reset();
    given(
      published(
        [
          [X, 'published'],
          [SKY, 'sending'],
        ],
        { status: 'publishing' },
      ),
    );
    expect(
      (await rejectedApiError(unpublishPost(ORG_ID, fixedId('post', 7), undefined, NOW, gate))).code,
    ).toBe('resource_conflict');
    expect(postWrites()).toHaveLength(0);
  });

  it('retries from a fresh read when the post changed under it', async () => {
    const p = published([[X, 'published']]);
    given(p);
    ddb
      .on(UpdateCommand)
      .rejectsOnce(
        Object.assign(
          new ConditionalCheckFailedException({
            message: 'The conditional request failed',
            $metadata: { attempts: 1 },
          }),
          { Item: marshall(postItem({ ...p, version: p.version + 1 })) },
        ),
      )
      .resolves({});
    const res = await unpublishPost(ORG_ID, p.id, undefined, NOW, gate);
    expect(res.deliveries[0]?.stage).toBe('removing');
    expect(ddb.commandCalls(BatchGetCommand).length).toBeGreaterThanOrEqual(2);
    expect(postWrites()).toHaveLength(2);
  });
});

// Keeps the platforms this file relies on honest: Instagram cannot remove, X and Bluesky can.
it('the capability table says so', async () => {
  const { CAPABILITIES } = await import('#core/platforms');
  const can = (p: Platform) => CAPABILITIES[p].unpublish;
  expect([can('x'), can('bluesky'), can('instagram'), can('tiktok')]).toEqual([true, true, false, false]);
});
