import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import {
  DynamoDBDocumentClient,
  TransactWriteCommand,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import type { Org } from '#core/accounts';
import { PLANS } from '#core/plans';
import { AdminError, approvePost, setPlan } from '#usecases/cli/admin';
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

const cancelled = (...codes: string[]) =>
  new TransactionCanceledException({
    message: 'Transaction cancelled',
    $metadata: {},
    CancellationReasons: codes.map((Code) => ({ Code })),
  });

/** An AdminError `promise` rejects with. */
async function adminErrorOf(promise: Promise<unknown>): Promise<AdminError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof AdminError)) throw new Error(`expected an AdminError, got ${String(err)}`);
  return err;
}

const transactItems = () => ddb.commandCalls(TransactWriteCommand)[0]?.args[0].input.TransactItems ?? [];

beforeEach(() => {
  ddb.reset();
  ddb.on(TransactWriteCommand).resolves({});
});

describe('setPlan', () => {
  /** The org item DynamoDB answers after the update. */
  function updatesReturnNew(before: Org) {
    serveItems(ddb, [orgItem(before)]);
    ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => ({
      Attributes: {
        ...orgItem(before),
        plan: input.ExpressionAttributeValues?.[':p'],
        limits: input.ExpressionAttributeValues?.[':l'],
        updated_at: input.ExpressionAttributeValues?.[':u'],
      },
    }));
  }

  it('stores the plan and the overrides, and answers the effective limits', async () => {
    // Arrange
    updatesReturnNew(org());

    // Act
    const res = await setPlan({
      orgId: ORG_ID,
      plan: 'starter',
      limits: { burst: 10, posts_per_month: 1_000 },
    });

    // Assert
    const input = ddb.commandCalls(UpdateCommand)[0]?.args[0].input;
    expect(input).toMatchObject({
      Key: { pk: `ORG#${ORG_ID}`, sk: 'ORG' },
      UpdateExpression: 'SET #p = :p, #l = :l, #u = :u',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#p': 'plan', '#l': 'limits', '#u': 'updated_at' },
      ExpressionAttributeValues: { ':p': 'starter', ':l': { burst: 10, posts_per_month: 1_000 } },
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
    updatesReturnNew({ ...org(), limits: { burst: 1 } });
    const res = await setPlan({ orgId: ORG_ID, plan: 'agency' });
    expect(ddb.commandCalls(UpdateCommand)[0]?.args[0].input.ExpressionAttributeValues?.[':l']).toBeNull();
    expect(res.effective_limits).toEqual(PLANS.agency.limits);
  });

  it('answers not_found for an unknown org without updating', async () => {
    serveItems(ddb, []);
    expect((await adminErrorOf(setPlan({ orgId: ORG_ID, plan: 'team' }))).kind).toBe('not_found');
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
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

  it('counts the post it schedules against posts_per_month, as the last item', async () => {
    // Act
    const res = await approve();

    // Assert
    expect(res.status).toBe('scheduled');
    const items = transactItems();
    expect(items.at(1)?.Put?.Item).toMatchObject({ status: 'scheduled', counted_period: '2030-06' });
    expect(items.at(-1)?.Update).toMatchObject({
      Key: { pk: `ORG#${ORG_ID}`, sk: 'USAGE#2030-06' },
      UpdateExpression: 'ADD posts_per_month :one',
      ExpressionAttributeValues: { ':one': 1, ':limit': PLANS.free.limits.posts_per_month },
    });
  });

  it('answers a conflict when posts_per_month is spent', async () => {
    ddb.on(TransactWriteCommand).rejects(cancelled('None', 'None', 'ConditionalCheckFailed'));
    const err = await adminErrorOf(approve());
    expect(err.kind).toBe('conflict');
    expect(err.message).toMatch(/posts_per_month for 2030-06/);
  });
});
