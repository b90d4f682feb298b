import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, conditionFailureItem, fromItem, isConditionFailure, TABLE_NAME } from '#adapters/table';
import type { Org } from '#core/accounts';
import { ddb } from '#shared/clients';

// The request gate: one item per organization and calendar month (`ORG#<org>` / `USAGE#<YYYY-MM>`)
// carries the month's meters (api_requests, posts_per_month) and, under each API key's id, that
// key's burst window `{w: minute, n: count}` and its revocation `{r: revoked_at}`. Admitting a
// request is ONE conditional UpdateItem on that item: the condition refuses a revoked key, a spent
// burst and an exhausted month at once, so limits hold exactly across every Lambda container and a
// refused request writes nothing. A post-writing request that has decided its post counts asks the
// same write to count it in posts_per_month too (`GateRequest.posts`), refused at that allowance.
//
// DynamoDB cannot reset a counter conditionally inside one expression, so the write comes in two
// forms: "same window" (add one to the key's count) and "new window" (replace the key's window
// with {w, n: 1}). Each container remembers the last window it counted a key in and picks the form
// from that; a wrong guess fails its condition, and the item returned with the failure
// (ReturnValuesOnConditionCheckFailure) says which form is right. That happens at most once per
// key, minute and container.

export interface KeyWindow {
  /** The UTC minute (epoch minutes) the count belongs to. */
  w?: number;
  n?: number;
  /** Set when the key was revoked; no request of the key is admitted after that. */
  r?: string;
}

export type GateOutcome =
  | { outcome: 'admitted'; burstCount: number; apiRequests: number }
  | { outcome: 'revoked' }
  | { outcome: 'burst' }
  | { outcome: 'quota'; burstCount: number }
  /** The request asked to count a post (`GateRequest.posts`) and posts_per_month is spent. */
  | { outcome: 'posts'; burstCount: number }
  /** DynamoDB refused the write for load (the item's write rate): the client should retry shortly. */
  | { outcome: 'throttled' };

export interface GateRequest {
  keyId: string;
  orgId: string;
  windowId: number;
  burstLimit: number;
  period: string;
  monthlyLimit: number;
  /**
   * Also count one post against posts_per_month in the same write, refused (outcome `posts`, nothing
   * written) at `limit`: the post-writing operations decide first, then pass their count here
   * instead of paying a write of their own. Such an admission is one conditional write of its own.
   */
  posts?: { limit: number } | undefined;
}

const GUESSES_MAX = 5_000;
/** keyId → the last window this container counted the key in (which form to try first). */
const lastWindow = new Map<string, number>();

function remember(keyId: string, windowId: number): void {
  if (lastWindow.size >= GUESSES_MAX) lastWindow.delete(lastWindow.keys().next().value as string);
  lastWindow.set(keyId, windowId);
}

const MONTH_OPEN = '(attribute_not_exists(api_requests) OR api_requests < :month)';
const NOT_REVOKED = 'attribute_not_exists(#k.r)';
const POSTS_OPEN = '(attribute_not_exists(posts_per_month) OR posts_per_month < :posts)';

function gateWrite(req: GateRequest, form: 'same' | 'new', windowId: number): UpdateCommand {
  const same = form === 'same';
  const post = req.posts
    ? { add: ', posts_per_month :one', cond: ` AND ${POSTS_OPEN}` }
    : { add: '', cond: '' };
  return new UpdateCommand({
    TableName: TABLE_NAME,
    Key: keys.usage(req.orgId, req.period),
    UpdateExpression:
      (same ? 'ADD api_requests :one, #k.n :one' : 'SET #k = :fresh ADD api_requests :one') + post.add,
    ConditionExpression:
      (same
        ? `#k.w = :w AND #k.n < :burst AND ${NOT_REVOKED} AND ${MONTH_OPEN}`
        : `(attribute_not_exists(#k) OR #k.w < :w) AND ${NOT_REVOKED} AND ${MONTH_OPEN}`) + post.cond,
    ExpressionAttributeNames: { '#k': req.keyId },
    ExpressionAttributeValues: {
      ':one': 1,
      ':w': windowId,
      ':month': req.monthlyLimit,
      ...(same ? { ':burst': req.burstLimit } : { ':fresh': { w: windowId, n: 1 } }),
      ...(req.posts ? { ':posts': req.posts.limit } : {}),
    },
    ReturnValues: 'UPDATED_NEW',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  });
}

const THROTTLED = new Set([
  'ThrottlingException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
]);

/**
 * Admits one request of `keyId`: counts it in the key's burst window and the org's api_requests
 * with one conditional UpdateItem, or says why not (revoked key, spent burst, exhausted month; the
 * burst outranks the month). A refused request changes nothing, so it is never metered.
 */
export async function admitRequest(req: GateRequest): Promise<GateOutcome> {
  let windowId = req.windowId;
  let form: 'same' | 'new' = lastWindow.get(req.keyId) === windowId ? 'same' : 'new';
  // Two attempts settle any guess; the rest absorb containers whose clocks straddle a minute.
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const res = await ddb.send(gateWrite(req, form, windowId));
      remember(req.keyId, windowId);
      const k = res.Attributes?.[req.keyId] as KeyWindow | undefined;
      return {
        outcome: 'admitted',
        burstCount: Number(k?.n ?? 1),
        apiRequests: Number(res.Attributes?.api_requests),
      };
    } catch (err) {
      if (THROTTLED.has((err as { name?: string }).name ?? '')) return { outcome: 'throttled' };
      if (!isConditionFailure(err)) throw err;
      const old = conditionFailureItem(err);
      const k = old?.[req.keyId] as KeyWindow | undefined;
      if (k?.r) return { outcome: 'revoked' };
      // The key's window as the item holds it, when it is this minute (or, on a container whose
      // clock is behind, a later one: counting there is what the faster clocks do).
      const open = typeof k?.w === 'number' && k.w >= windowId ? k : undefined;
      const count = Number(open?.n ?? 0);
      if (open && count >= req.burstLimit) return { outcome: 'burst' };
      if (Number(old?.api_requests ?? 0) >= req.monthlyLimit) return { outcome: 'quota', burstCount: count };
      if (req.posts && Number(old?.posts_per_month ?? 0) >= req.posts.limit)
        return { outcome: 'posts', burstCount: count };
      if (open) {
        form = 'same';
        windowId = open.w as number;
      } else form = 'new';
    }
  }
  throw new Error('admission: the request gate kept changing under four attempts');
}

/** Takes one request back out of the month's api_requests (an admitted request refused with 429). */
export async function uncountRequest(orgId: string, period: string): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.usage(orgId, period),
        UpdateExpression: 'ADD api_requests :minus',
        ConditionExpression: 'api_requests > :zero',
        ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/**
 * The transaction items that revoke a key at the gate: its entry in this month's and next month's
 * gate items becomes `{r}`, which the admission condition refuses. Next month's too, so a container
 * whose cached key outlives the month boundary is refused there as well (caches last 30 s; from the
 * month after, a fresh read of the key record finds it revoked).
 */
export function revokeAtGateItems(orgId: string, keyId: string, periods: readonly string[], at: string) {
  return periods.map((period) => ({
    Update: {
      TableName: TABLE_NAME,
      Key: keys.usage(orgId, period),
      UpdateExpression: 'SET #k = :revoked',
      ExpressionAttributeNames: { '#k': keyId },
      ExpressionAttributeValues: { ':revoked': { r: at } },
    },
  }));
}

/**
 * The minute (epoch minutes) of each key's last admitted request, as the gate items of `periods`
 * hold it: each admission rewrites the key's window `{w, n}`, so `w` is when the key was last used,
 * known without a write of its own. One read of the months' gate items (a revoked key's window in
 * a month is replaced by its revocation, so its last use is known from earlier months only).
 */
export async function lastAdmittedMinutes(
  orgId: string,
  periods: readonly string[],
): Promise<Map<string, number>> {
  const items = await batchGet(periods.map((p) => keys.usage(orgId, p)));
  const out = new Map<string, number>();
  for (const item of items) {
    for (const [name, value] of Object.entries(item ?? {})) {
      const w = (value as KeyWindow | null)?.w;
      if (typeof value === 'object' && typeof w === 'number' && w > (out.get(name) ?? -1)) out.set(name, w);
    }
  }
  return out;
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

/**
 * Counts one post against posts_per_month on its own (a write whose request was admitted already,
 * or a person's act, which the gate does not meter): false, and nothing written, at `limit`.
 */
export async function countPost(orgId: string, period: string, limit: number): Promise<boolean> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.usage(orgId, period),
        UpdateExpression: 'ADD posts_per_month :one',
        ConditionExpression: POSTS_OPEN.replace(':posts', ':limit'),
        ExpressionAttributeValues: { ':one': 1, ':limit': limit },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Gives back a post count no post write used (usecases/support/post-writes.ts says when). */
export async function uncountPost(orgId: string, period: string): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.usage(orgId, period),
        UpdateExpression: 'ADD posts_per_month :minus',
        ConditionExpression: 'posts_per_month > :zero',
        ExpressionAttributeValues: { ':minus': -1, ':zero': 0 },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** For tests: forget which windows this container has seen. */
export function clearGateGuesses(): void {
  lastWindow.clear();
}
