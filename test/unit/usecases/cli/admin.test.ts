import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { ActError } from '#core/people';
import { PLANS } from '#core/plans';
import { approvePost, setPlan } from '#usecases/cli/admin';
import {
  fixedId,
  type Item,
  ORG_ID,
  org,
  orgItem,
  post,
  postItem,
  serveItems,
} from '../../support/fixtures.ts';

// The admin CLI's plan-related use cases: the channel bound, plan changes with overrides, and
// posts_per_month at approval.

const ddb = mockClient(DynamoDBDocumentClient);

const OWNER = {
  id: fixedId('user', 1),
  org_id: ORG_ID,
  email: 'owner@acme.test',
  role: 'owner' as const,
  created_at: '2030-01-01T00:00:00.000Z',
};
const ownerItem: Item = { ...keys.user(ORG_ID, OWNER.id), entity: 'user', ...OWNER };

const updates = (skPrefix: string) =>
  ddb
    .commandCalls(UpdateCommand)
    .map((c) => c.args[0].input)
    .filter((i) => String(i.Key?.sk).startsWith(skPrefix));

/** An ActError `promise` rejects with. */
async function actErrorOf(promise: Promise<unknown>): Promise<ActError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ActError)) throw new Error(`expected an ActError, got ${String(err)}`);
  return err;
}

const transactItems = () => ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? [];

beforeEach(() => {
  ddb.reset();
  ddb.on(TransactWriteCommand).resolves({});
});

describe('setPlan', () => {
  it('stores the plan and the overrides with the plan_changed entry, and answers the effective limits', async () => {
    // Arrange
    serveItems(ddb, [orgItem(org())]);

    // Act
    const res = await setPlan({
      orgId: ORG_ID,
      plan: 'starter',
      limits: { burst: 10, posts_per_month: 1_000 },
    });

    // Assert: one transaction, the org's update and the operator's entry.
    const [update, audit] = transactItems();
    expect(update?.Update).toMatchObject({
      Key: { pk: `ORG#${ORG_ID}`, sk: 'ORG' },
      UpdateExpression: 'SET #p = :p, #l = :l, #u = :u',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#p': 'plan', '#l': 'limits', '#u': 'updated_at' },
      ExpressionAttributeValues: { ':p': 'starter', ':l': { burst: 10, posts_per_month: 1_000 } },
    });
    expect(audit?.Put?.Item).toMatchObject({
      pk: `ORG#${ORG_ID}`,
      sk: expect.stringMatching(/^AUDIT#aud_/),
      action: 'plan_changed',
      actor: { kind: 'operator', user_id: null, email: null },
      detail: { from: 'team', to: 'starter', limits: ['burst=10', 'posts_per_month=1000'] },
    });
    expect(res).toMatchObject({
      id: ORG_ID,
      plan: 'starter',
      limits: { burst: 10, posts_per_month: 1_000 },
      effective_limits: { api_requests: 10_000, burst: 10, posts_per_month: 1_000, channels: 10 },
    });
    expect(res).not.toHaveProperty('pk');
  });

  it("clears earlier overrides when none are given: the plan's own allowances", async () => {
    serveItems(ddb, [orgItem({ ...org(), limits: { burst: 1 } })]);
    const res = await setPlan({ orgId: ORG_ID, plan: 'agency' });
    expect(transactItems()[0]?.Update?.ExpressionAttributeValues?.[':l']).toBeNull();
    expect(res.effective_limits).toEqual(PLANS.agency.limits);
  });

  it('answers not_found for an unknown org without writing', async () => {
    serveItems(ddb, []);
    expect((await actErrorOf(setPlan({ orgId: ORG_ID, plan: 'team' }))).kind).toBe('not_found');
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });
});

describe('approvePost', () => {
  const NOW = new Date('2030-06-30T12:00:00.000Z');
  const WAITING = post({
    id: fixedId('post', 7),
    status: 'needs_approval',
    scheduled_at: '2030-07-02T00:00:00.000Z',
    approval: { mode: 'schedule' },
  });
  const approve = () => approvePost({ orgId: ORG_ID, by: OWNER.id, postId: WAITING.id });

  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
    serveItems(ddb, [orgItem({ ...org(), plan: 'free' }), ownerItem, postItem(WAITING)]);
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('counts the post it schedules against posts_per_month, before the post is written', async () => {
    // Act
    const res = await approve();

    // Assert
    expect(res.status).toBe('scheduled');
    expect(updates('USAGE#')).toEqual([
      expect.objectContaining({
        Key: { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' },
        UpdateExpression: 'ADD posts_per_month :one',
        ExpressionAttributeValues: { ':one': 1, ':limit': PLANS.free.limits.posts_per_month },
      }),
    ]);
    const [write] = updates('POST#');
    expect(Object.values(write?.ExpressionAttributeValues ?? {})).toEqual(
      expect.arrayContaining(['scheduled', '2030-06']),
    );
    expect(ddb.commandCalls(TransactWriteCommand)).toHaveLength(0);
  });

  it('records post_approved, on behalf of --by, after the approval', async () => {
    await approve();
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input.Item).toMatchObject({
      sk: expect.stringMatching(/^AUDIT#/),
      action: 'post_approved',
      target: WAITING.id,
      actor: { kind: 'operator', user_id: OWNER.id, email: OWNER.email },
      detail: { status: 'scheduled', scheduled_at: '2030-07-02T00:00:00.000Z' },
    });
  });

  it('approves as the operator without --by; --by must name an owner or admin', async () => {
    const res = await approvePost({ orgId: ORG_ID, postId: WAITING.id });
    expect(res.status).toBe('scheduled');
    expect(ddb.commandCalls(PutCommand)[0]?.args[0].input.Item?.actor).toEqual({
      kind: 'operator',
      user_id: null,
      email: null,
    });
    const member = { ...OWNER, id: fixedId('user', 3), role: 'member' as const };
    serveItems(ddb, [orgItem(org()), { ...keys.user(ORG_ID, member.id), ...member }, postItem(WAITING)]);
    ddb.resetHistory();
    const err = await actErrorOf(approvePost({ orgId: ORG_ID, by: member.id, postId: WAITING.id }));
    expect(err.kind).toBe('forbidden');
    // The post is untouched; the only update is the refusal's once-a-minute counter.
    expect(
      ddb.commandCalls(UpdateCommand).filter((c) => !String(c.args[0].input.Key?.pk).startsWith('ATTEMPTS#')),
    ).toHaveLength(0);
  });

  it('answers a conflict when posts_per_month is spent, writing nothing', async () => {
    ddb
      .on(UpdateCommand)
      .rejects(
        new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} }),
      );
    const err = await actErrorOf(approve());
    expect(err.kind).toBe('conflict');
    expect(err.message).toMatch(/posts_per_month for 2030-06/);
    expect(updates('POST#')).toEqual([]);
  });
});
