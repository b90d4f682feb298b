import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Org } from '#core/accounts';
import { ddb } from '#shared/clients';
import { keys } from './keys.ts';
import { batchGet, fromItem, isConditionFailure, TABLE_NAME } from './table.ts';

// The counters behind the burst limit and the monthly meters: DynamoDB atomic counters with a
// condition, so limits hold exactly across every Lambda container, with no per-container counting.

export interface Consumed {
  /** Burst counter after this request (when it was admitted by the burst limit). */
  burstCount: number | null;
  /** api_requests after this request (when it was counted). */
  apiRequests: number | null;
}

const WINDOW_TTL_SECONDS = 120;

/**
 * One request against the key's burst window and the org's api_requests, as two conditional
 * counters written in parallel (one round trip). A request the burst limit refuses is taken back
 * out of api_requests, so it is never counted (DECISIONS §4).
 */
export async function consumeRequest(args: {
  keyId: string;
  orgId: string;
  windowId: number;
  windowEndsAt: number;
  burstLimit: number;
  period: string;
  monthlyLimit: number;
}): Promise<Consumed> {
  const [burst, monthly] = await Promise.allSettled([
    ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.burstWindow(args.keyId, args.windowId),
        UpdateExpression: 'ADD #n :one SET #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
        ExpressionAttributeNames: { '#n': 'count', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':one': 1,
          ':limit': args.burstLimit,
          ':ttl': args.windowEndsAt + WINDOW_TTL_SECONDS,
        },
        ReturnValues: 'UPDATED_NEW',
      }),
    ),
    ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.usage(args.orgId, args.period),
        UpdateExpression: 'ADD api_requests :one',
        ConditionExpression: 'attribute_not_exists(api_requests) OR api_requests < :limit',
        ExpressionAttributeValues: { ':one': 1, ':limit': args.monthlyLimit },
        ReturnValues: 'UPDATED_NEW',
      }),
    ),
  ]);
  for (const r of [burst, monthly])
    if (r.status === 'rejected' && !isConditionFailure(r.reason)) throw r.reason;
  const burstCount = burst.status === 'fulfilled' ? Number(burst.value.Attributes?.count) : null;
  let apiRequests = monthly.status === 'fulfilled' ? Number(monthly.value.Attributes?.api_requests) : null;
  if (burstCount === null && apiRequests !== null) {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.usage(args.orgId, args.period),
        UpdateExpression: 'ADD api_requests :minus',
        ExpressionAttributeValues: { ':minus': -1 },
      }),
    );
    apiRequests = null;
  }
  return { burstCount, apiRequests };
}

export interface UsageCounters {
  api_requests: number;
  posts_per_month: number;
}

/** The org (plan, limits, channel count) and its meters for `period`, in one round trip. */
export async function getOrgUsage(
  orgId: string,
  period: string,
): Promise<{ org: Org | null; counters: UsageCounters }> {
  const [org, usage] = await batchGet([keys.org(orgId), keys.usage(orgId, period)]);
  return {
    org: org ? fromItem<Org>(org) : null,
    counters: {
      api_requests: Number(usage?.api_requests ?? 0),
      posts_per_month: Number(usage?.posts_per_month ?? 0),
    },
  };
}

/** The transaction item that counts one post against posts_per_month, refused at the limit. */
export function countPostItem(orgId: string, period: string, limit: number) {
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: keys.usage(orgId, period),
      UpdateExpression: 'ADD posts_per_month :one',
      ConditionExpression: 'attribute_not_exists(posts_per_month) OR posts_per_month < :limit',
      ExpressionAttributeValues: { ':one': 1, ':limit': limit },
    },
  };
}
