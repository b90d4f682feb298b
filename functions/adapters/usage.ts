import { randomBytes } from 'node:crypto';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { batchGet, conditionFailureItem, fromItem, isConditionFailure, TABLE_NAME } from '#adapters/table';
import type { Org } from '#core/accounts';
import { ddb } from '#shared/clients';

// The request gate: one item per organization and calendar month (`ORG#<org>` / `USAGE#<YYYY-MM>`)
// carries the month's meters (api_requests, posts_per_month) and, under each API key's id, that
// key's burst window `{w: minute, n: count}` (and `t`, below) or its revocation `{r: revoked_at}`.
// Admitting requests is ONE conditional UpdateItem on that item: the condition refuses a revoked
// key, a spent burst and an exhausted month at once, so limits hold exactly across every Lambda
// container and a refused request writes nothing. A post-writing request that has decided its post
// counts asks the same write to count it in posts_per_month too (`GateRequest.posts`), refused at
// that allowance; such an admission is a write of its own (never part of a group commit below).
//
// DynamoDB cannot reset a counter conditionally inside one expression, so the write comes in two
// forms: "same window" (add to the key's count) and "new window" (replace the key's window with
// {w, n}). Each container remembers the last window it counted a key in and picks the form from
// that; a wrong guess fails its condition, and the item returned with the failure
// (ReturnValuesOnConditionCheckFailure) says which form is right. That happens at most once per
// key, minute and container.
//
// Group commit: a container's admissions of the same key, minute and limits that arrive while its
// write for them is in flight wait for it, and then go as ONE write counting all of them (ADD :n,
// the conditions checked for n). An idle container (one Lambda invocation at a time) writes at
// once, a batch of one; a container serving many requests at once (the local stack) writes once
// per batch instead of once per request. A batch the item has room for is admitted whole; one it
// has no room for is refused whole from the item the failure returns (no further write); one with
// some room is split, so exactly the room is admitted and the rest refused.
//
// A batch's write (n > 1) carries a fresh token in the key's window (`t`, 8 characters) and its
// condition refuses that token: when the SDK retries a write whose first attempt was applied but
// whose answer was lost, the retry fails its condition and the item it returns shows the token, so
// the batch is counted once. A lone request's write carries none (the gate item's size is what each
// write is billed by); a lost answer to it can count that one request twice, as before batching.

export interface KeyWindow {
  /** The UTC minute (epoch minutes) the count belongs to. */
  w?: number;
  n?: number;
  /** The token of the last batch written in this window (an SDK retry recognises its own). */
  t?: string;
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

/** The most requests one write admits (a batch is also never larger than the burst limit). */
export const GATE_BATCH_MAX = 100;

const MONTH_OPEN = '(attribute_not_exists(api_requests) OR api_requests <= :monthRoom)';
const NOT_REVOKED = 'attribute_not_exists(#k.r)';
const POSTS_OPEN = '(attribute_not_exists(posts_per_month) OR posts_per_month < :posts)';

function gateWrite(req: GateRequest, form: 'same' | 'new', windowId: number, n: number, token: string) {
  const same = form === 'same';
  // A batch's write carries its token (see above); a lone request's does not, so the gate item of a
  // Lambda deployment (batches of one) stays as small as before: its write units grow with its size.
  const marked = n > 1;
  // A post's count rides only on a write of one admission (admitRequest never batches those).
  const post = req.posts
    ? { add: ', posts_per_month :one', cond: ` AND ${POSTS_OPEN}` }
    : { add: '', cond: '' };
  return new UpdateCommand({
    TableName: TABLE_NAME,
    Key: keys.usage(req.orgId, req.period),
    UpdateExpression:
      (same
        ? `${marked ? 'SET #k.t = :t ' : ''}ADD api_requests :n, #k.n :n`
        : 'SET #k = :fresh ADD api_requests :n') + post.add,
    // `#k.t <> :t` holds while the window has no token: only a retry of an applied write fails it.
    ConditionExpression:
      (same
        ? `#k.w = :w AND #k.n <= :burstRoom AND ${marked ? '#k.t <> :t AND ' : ''}${NOT_REVOKED} AND ${MONTH_OPEN}`
        : `(attribute_not_exists(#k) OR #k.w < :w) AND ${NOT_REVOKED} AND ${MONTH_OPEN}`) + post.cond,
    ExpressionAttributeNames: { '#k': req.keyId },
    ExpressionAttributeValues: {
      ':n': n,
      ':w': windowId,
      ':monthRoom': req.monthlyLimit - n,
      ...(same
        ? { ':burstRoom': req.burstLimit - n, ...(marked ? { ':t': token } : {}) }
        : { ':fresh': { w: windowId, n, ...(marked ? { t: token } : {}) } }),
      ...(req.posts ? { ':one': 1, ':posts': req.posts.limit } : {}),
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

/** The n admissions of one write, as if admitted one after the other: counts up to the item's. */
function admitted(keyCount: unknown, apiRequests: unknown, n: number): GateOutcome[] {
  const burst = Number(keyCount ?? n);
  const month = Number(apiRequests);
  return Array.from({ length: n }, (_, i) => ({
    outcome: 'admitted' as const,
    burstCount: burst - n + 1 + i,
    apiRequests: month - n + 1 + i,
  }));
}

/**
 * Admits `n` concurrent requests of `req` with one conditional write, or refuses all of them, or
 * splits them where the item has room for only some: exactly the room is admitted.
 */
async function admitBatch(
  req: GateRequest,
  n: number,
  known?: { form: 'same' | 'new'; windowId: number },
): Promise<GateOutcome[]> {
  let windowId = known?.windowId ?? req.windowId;
  let form: 'same' | 'new' = known?.form ?? (lastWindow.get(req.keyId) === windowId ? 'same' : 'new');
  const token = randomBytes(6).toString('base64url');
  const all = (outcome: GateOutcome) => Array.from({ length: n }, () => outcome);
  // Two attempts settle any guess; the rest absorb containers whose clocks straddle a minute.
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const res = await ddb.send(gateWrite(req, form, windowId, n, token));
      remember(req.keyId, windowId);
      const k = res.Attributes?.[req.keyId] as KeyWindow | undefined;
      return admitted(k?.n, res.Attributes?.api_requests, n);
    } catch (err) {
      if (THROTTLED.has((err as { name?: string }).name ?? '')) return all({ outcome: 'throttled' });
      if (!isConditionFailure(err)) throw err;
      const old = conditionFailureItem(err);
      const k = old?.[req.keyId] as KeyWindow | undefined;
      // An earlier attempt of this very batch's write was applied (the SDK retried after a lost answer).
      if (n > 1 && k?.t === token) {
        remember(req.keyId, k.w as number);
        return admitted(k.n, old?.api_requests, n);
      }
      if (k?.r) return all({ outcome: 'revoked' });
      // The key's window as the item holds it, when it is this minute (or, on a container whose
      // clock is behind, a later one: counting there is what the faster clocks do).
      const open = typeof k?.w === 'number' && k.w >= windowId ? k : undefined;
      const count = Number(open?.n ?? 0);
      const burstRoom = req.burstLimit - count;
      const monthRoom = req.monthlyLimit - Number(old?.api_requests ?? 0);
      if (open && burstRoom <= 0) return all({ outcome: 'burst' });
      if (monthRoom <= 0) return all({ outcome: 'quota', burstCount: count });
      if (req.posts && Number(old?.posts_per_month ?? 0) >= req.posts.limit)
        return all({ outcome: 'posts', burstCount: count });
      if (open) {
        form = 'same';
        windowId = open.w as number;
      } else form = 'new';
      const room = Math.min(burstRoom, monthRoom);
      if (room < n) {
        // Room for some: that many in one write, then the rest (refused, unless room came back).
        const first = await admitBatch(req, room, { form, windowId });
        return [...first, ...(await admitBatch(req, n - room))];
      }
    }
  }
  throw new Error('admission: the request gate kept changing under four attempts');
}

interface Waiter {
  resolve: (outcome: GateOutcome) => void;
  reject: (err: unknown) => void;
}

/** Per key, minute and limits: the admissions waiting for the write in flight to finish. */
const queues = new Map<string, Waiter[]>();

/** Writes batches for one queue until it is empty; one write in flight per queue. */
async function drain(id: string, req: GateRequest, queue: Waiter[]): Promise<void> {
  // A write admits all of its batch or none of it, so no batch is larger than either limit.
  const most = Math.max(1, Math.min(GATE_BATCH_MAX, req.burstLimit, req.monthlyLimit));
  while (queue.length) {
    const batch = queue.splice(0, most);
    try {
      const outcomes = await admitBatch(req, batch.length);
      for (const [i, w] of batch.entries()) w.resolve(outcomes[i] as GateOutcome);
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
  queues.delete(id);
}

/**
 * Admits one request of `keyId`: counts it in the key's burst window and the org's api_requests
 * with one conditional UpdateItem (shared with the same key's concurrent admissions), or says why
 * not (revoked key, spent burst, exhausted month; the burst outranks the month). A refused request
 * changes nothing, so it is never metered.
 */
export async function admitRequest(req: GateRequest): Promise<GateOutcome> {
  // Counting a post too: a write of its own (a batch admits all or none, and this one has two limits).
  if (req.posts) return (await admitBatch(req, 1))[0] as GateOutcome;
  const id = [req.orgId, req.period, req.keyId, req.windowId, req.burstLimit, req.monthlyLimit].join(' ');
  return new Promise((resolve, reject) => {
    const queue = queues.get(id);
    if (queue) return void queue.push({ resolve, reject });
    const fresh = [{ resolve, reject }];
    queues.set(id, fresh);
    void drain(id, req, fresh);
  });
}

/** Takes one request back out of the month's api_requests (an admitted request refused with 429). */
export async function uncountRequest(orgId: string, period: string): Promise<void> {
  await stepMeter(orgId, period, 'api_requests', -1, 'api_requests > :zero', { ':zero': 0 });
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
  ai_credits: number;
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
      ai_credits: Number(usage?.ai_credits ?? 0),
    },
  };
}

/**
 * Counts one post against posts_per_month on its own (a write whose request was admitted already,
 * or a person's act, which the gate does not meter): false, and nothing written, at `limit`.
 */
export function countPost(orgId: string, period: string, limit: number): Promise<boolean> {
  return stepMeter(orgId, period, 'posts_per_month', 1, POSTS_OPEN.replace(':posts', ':limit'), {
    ':limit': limit,
  });
}

/** Gives back a post count no post write used (usecases/support/post-writes.ts says when). */
export async function uncountPost(orgId: string, period: string): Promise<void> {
  await stepMeter(orgId, period, 'posts_per_month', -1, 'posts_per_month > :zero', { ':zero': 0 });
}

/**
 * One conditional step (+1 or −1) of a meter on the gate item, outside an admission: true when it
 * was applied, false when its condition refused it (nothing written).
 */
async function stepMeter(
  orgId: string,
  period: string,
  meter: 'api_requests' | 'posts_per_month',
  step: 1 | -1,
  condition: string,
  values: Record<string, number>,
): Promise<boolean> {
  const name = step > 0 ? ':one' : ':minus';
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.usage(orgId, period),
        UpdateExpression: `ADD ${meter} ${name}`,
        ConditionExpression: condition,
        ExpressionAttributeValues: { [name]: step, ...values },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** For tests: forget which windows this container has seen. */
export function clearGateGuesses(): void {
  lastWindow.clear();
}
