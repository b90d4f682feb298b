import { DynamoDBDocumentClient, GetCommand, PutCommand, type PutCommandInput } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryMessage } from '#core/messages';
import type { DeliveryRecord, PostRecord } from '#core/posts';
import { deadLetter } from '#usecases/delivery-dead-letters';
import { captureLines, emfOf, emfProblems } from '../support/emf.ts';
import {
  channel,
  channelItem,
  fixedId,
  ORG_ID,
  post,
  postItem,
  serveItems,
  variant,
} from '../support/fixtures.ts';

// The DLQ consumer: a delivery message that crashed the worker again and again fails its delivery
// (system), so the failure shows on getPost and the post's status follows.

// Above SILENT, as the outcome lines are read.
vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
});

const ddb = mockClient(DynamoDBDocumentClient);
/** The JSON lines the code under test writes (read by the outcome-line tests; kept out of the output). */
const lines = captureLines();

const NOW = new Date('2030-06-10T09:30:00.000Z');
const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);
const MSG: DeliveryMessage = { org_id: ORG_ID, post_id: fixedId('post', 1), channel_id: CH1, round: 1 };

function delivery(channelId: string, patch: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    channel_id: channelId,
    stage: 'queued',
    external_id: null,
    url: null,
    error: null,
    error_category: null,
    attempts: 0,
    updated_at: '2030-06-10T09:00:00.000Z',
    round: 1,
    ...patch,
  };
}

function publishing(d1: Partial<DeliveryRecord>, d2: Partial<DeliveryRecord> = {}): PostRecord {
  return post({
    status: 'publishing',
    round: 1,
    version: 4,
    watch_at: '2030-06-10T09:35:00.000Z',
    variants: [variant(CH1, 1), variant(CH2, 2)],
    deliveries: { [CH1]: delivery(CH1, d1), [CH2]: delivery(CH2, d2) },
  });
}

const written = () => ddb.commandCalls(PutCommand).map((c) => c.args[0].input);
const writtenPost = (input: PutCommandInput | undefined) =>
  input?.Item as PostRecord & Record<string, unknown>;

beforeEach(() => {
  ddb.reset();
  ddb.on(PutCommand).resolves({});
});

describe('deadLetter', () => {
  it('fails a delivery stuck mid-send as a system error and fails the post when it was the last', async () => {
    // Arrange: CH1 was being sent (a worker kept crashing); CH2 is published.
    const before = publishing(
      { stage: 'sending', attempts: 3, claim_id: 'crashed', lease_until: '2030-06-10T09:31:00.000Z' },
      { stage: 'published', attempts: 1, external_id: 'x-1' },
    );
    serveItems(ddb, [postItem(before)]);

    // Act
    const changed = await deadLetter(MSG, NOW);

    // Assert
    expect(changed).toBe(true);
    const [put] = written();
    expect(put?.ConditionExpression).toBe('version = :v');
    expect(put?.ExpressionAttributeValues).toEqual({ ':v': 4 });
    const after = writtenPost(put);
    expect(after.deliveries[CH1]).toMatchObject({
      stage: 'failed',
      error_category: 'system',
      error: expect.stringMatching(/dead-letter/),
      attempts: 3,
      updated_at: NOW.toISOString(),
    });
    expect(after.deliveries[CH1]?.claim_id).toBeUndefined();
    expect(after.deliveries[CH1]?.lease_until).toBeUndefined();
    expect(after.deliveries[CH2]).toEqual(before.deliveries[CH2]);
    expect(after).toMatchObject({
      status: 'failed',
      watch_at: null,
      version: 5,
      gsi1pk: `ORG#${ORG_ID}#POSTS#failed`,
    });
    expect(after.gsi2pk).toBeUndefined();
  });

  it('says the outcome is unknown when an earlier attempt may have reached the platform', async () => {
    serveItems(ddb, [
      postItem(
        publishing({
          stage: 'sending',
          attempts: 2,
          claim_id: 'crashed',
          lease_until: '2030-06-10T09:31:00.000Z',
          unresolved_since: '2030-06-10T09:00:00.000Z',
        }),
      ),
    ]);

    expect(await deadLetter(MSG, NOW)).toBe(true);

    expect(writtenPost(written()[0]).deliveries[CH1]?.error).toMatch(/^Outcome unknown: .*dead-letter/);
  });

  it('keeps the post publishing while another delivery is still pending', async () => {
    // Arrange
    serveItems(ddb, [postItem(publishing({ stage: 'queued' }, { stage: 'retrying', attempts: 1 }))]);

    // Act
    const changed = await deadLetter(MSG, NOW);

    // Assert
    expect(changed).toBe(true);
    const after = writtenPost(written()[0]);
    expect(after.deliveries[CH1]?.stage).toBe('failed');
    expect(after.status).toBe('publishing');
  });

  it.each([
    ['published', { stage: 'published', external_id: 'x-1', attempts: 1 }],
    ['failed', { stage: 'failed', error_category: 'user_content', attempts: 1 }],
  ] as const)('leaves a delivery that is already %s alone', async (_stage, final) => {
    // Arrange
    serveItems(ddb, [postItem(publishing(final))]);

    // Act / Assert
    expect(await deadLetter(MSG, NOW)).toBe(false);
    expect(written()).toHaveLength(0);
  });

  it('leaves alone a message of an earlier round (the post was republished)', async () => {
    // Arrange: the post is in round 2; the dead message is of round 1.
    const p = publishing({ round: 2 }, { round: 2 });
    serveItems(ddb, [postItem({ ...p, round: 2 })]);

    // Act / Assert
    expect(await deadLetter(MSG, NOW)).toBe(false);
    expect(written()).toHaveLength(0);
  });

  it('does nothing for a post that no longer exists', async () => {
    serveItems(ddb, []);
    expect(await deadLetter(MSG, NOW)).toBe(false);
    expect(ddb.commandCalls(GetCommand)).toHaveLength(1);
    expect(written()).toHaveLength(0);
  });

  describe('its outcome line', () => {
    const stuck = () =>
      postItem(
        publishing(
          { stage: 'sending', attempts: 3, claim_id: 'crashed', lease_until: '2030-06-10T09:31:00.000Z' },
          { stage: 'published', attempts: 1, external_id: 'x-1' },
        ),
      );

    it("counts the delivery it fails as DeliveryFailed (system) under the channel's platform, once", async () => {
      serveItems(ddb, [stuck(), channelItem({ ...channel(1, 'linkedin'), id: CH1 })]);

      expect(await deadLetter(MSG, NOW)).toBe(true);

      const [line, ...more] = lines.metrics();
      expect(more).toEqual([]);
      expect(emfProblems(line as Record<string, unknown>)).toEqual([]);
      expect(line).toMatchObject({
        level: 'WARN',
        message: 'delivery failed',
        outcome: 'failed',
        org_id: ORG_ID,
        post_id: MSG.post_id,
        channel_id: CH1,
        platform: 'linkedin',
        category: 'system',
        attempt: 3,
        DeliveryFailed: 1,
      });
      expect(emfOf(line as Record<string, unknown>).dimensions).toEqual([
        ['platform', 'category'],
        ['platform'],
        [],
      ]);
    });

    it('a channel that is gone (or unreadable) counts under platform unknown; a delivery left alone counts nothing', async () => {
      serveItems(ddb, [stuck()]);
      expect(await deadLetter(MSG, NOW)).toBe(true);
      expect(lines.metrics()).toHaveLength(1);
      expect(lines.metrics()[0]).toMatchObject({ platform: 'unknown', DeliveryFailed: 1 });

      ddb.reset();
      serveItems(ddb, [
        postItem(publishing({ stage: 'failed', error_category: 'user_content', attempts: 1 })),
      ]);
      expect(await deadLetter(MSG, NOW)).toBe(false);
      expect(lines.metrics()).toHaveLength(1);
    });
  });
});
