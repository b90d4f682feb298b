import { PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { conditionFailureItem, fromItem, isConditionFailure, TABLE_NAME } from '#adapters/table';
import {
  DELIVERY_LOG_DAYS,
  type DeliveryAttempt,
  type DeliveryStatus,
  type WebhookDeliveryRecord,
} from '#core/webhooks';
import { ddb } from '#shared/clients';

// Webhook delivery records: one item per (event, endpoint) with its attempts, claimed by one
// worker at a time; the delivery log lists an endpoint's deliveries by last attempt (GSI1).

const ttlIn = (days: number, from = Date.now()) => Math.floor(from / 1000) + days * 86_400;

export type Claim =
  | { claimed: true }
  | { claimed: false; current: (WebhookDeliveryRecord & { claim_until?: number }) | null };

/**
 * Claims attempt `n` of one event to one endpoint for `leaseMs`. Fails while another worker holds a
 * live claim on it, or when its outcome is already recorded (a duplicate or late message); a claim
 * whose worker died expires with its lease and can be taken again.
 */
export async function claimAttempt(
  c: { orgId: string; endpointId: string; eventId: string; eventType: string },
  n: number,
  token: string,
  now: number,
  leaseMs: number,
): Promise<Claim> {
  const condition =
    n === 1
      ? 'attribute_not_exists(pk) OR (done = :zero AND #status = :pending AND claim_until < :now)'
      : 'done = :prev AND #status = :pending AND (attribute_not_exists(claim_n) OR claim_n < :n OR claim_until < :now)';
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.webhookDelivery(c.orgId, c.endpointId, c.eventId),
        UpdateExpression: `SET claim_n = :n, claim_token = :token, claim_until = :until,
          entity = :entity, org_id = :org, endpoint_id = :whe, event_id = :evt, event_type = :type,
          #status = if_not_exists(#status, :pending), attempts = if_not_exists(attempts, :none),
          done = if_not_exists(done, :zero), updated_at = if_not_exists(updated_at, :iso), #ttl = :ttl`,
        ConditionExpression: condition,
        ExpressionAttributeNames: { '#status': 'status', '#ttl': 'ttl' },
        ExpressionAttributeValues: {
          ':n': n,
          ':token': token,
          ':until': now + leaseMs,
          ':now': now,
          ':entity': 'webhook_delivery',
          ':org': c.orgId,
          ':whe': c.endpointId,
          ':evt': c.eventId,
          ':type': c.eventType,
          ':pending': 'pending',
          ':none': [],
          ':zero': 0,
          ':iso': new Date(now).toISOString(),
          ':ttl': ttlIn(DELIVERY_LOG_DAYS, now),
          ...(n === 1 ? {} : { ':prev': n - 1 }),
        },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    return { claimed: true };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const item = conditionFailureItem(err);
    const current = item ? fromItem<WebhookDeliveryRecord & { claim_until?: number }>(item) : null;
    // Our own claim, applied by an earlier SDK attempt whose answer was lost.
    const mine = current as { claim_token?: string; claim_n?: number } | null;
    if (mine?.claim_token === token && mine.claim_n === n) return { claimed: true };
    return { claimed: false, current };
  }
}

/** Records the outcome of the claimed attempt `n`; false if the claim was lost meanwhile. */
export async function recordAttempt(
  c: { orgId: string; endpointId: string; eventId: string },
  n: number,
  token: string,
  attempt: DeliveryAttempt,
  status: DeliveryStatus,
  nextAttemptAt: string | null,
): Promise<boolean> {
  const log = keys.webhookDeliveryByTime(c.orgId, c.endpointId, attempt.attempted_at, c.eventId);
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.webhookDelivery(c.orgId, c.endpointId, c.eventId),
        UpdateExpression: `SET done = :n, attempts = list_append(attempts, :a), #status = :s,
          updated_at = :at, gsi1pk = :g1, gsi1sk = :g2${nextAttemptAt ? ', next_attempt_at = :next' : ''}
          REMOVE claim_n, claim_token, claim_until${nextAttemptAt ? '' : ', next_attempt_at'}`,
        ConditionExpression: 'claim_token = :token AND claim_n = :n',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':n': n,
          ':a': [attempt],
          ':s': status,
          ':at': attempt.attempted_at,
          ':g1': log.gsi1pk,
          ':g2': log.gsi1sk,
          ':token': token,
          ...(nextAttemptAt ? { ':next': nextAttemptAt } : {}),
        },
      }),
    );
    return true;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    // Our own record, applied by an earlier SDK attempt whose answer was lost?
    const last = (conditionFailureItem(err) as WebhookDeliveryRecord | undefined)?.attempts?.at(-1);
    return last?.attempt === n && last.attempted_at === attempt.attempted_at;
  }
}

/** The endpoint stopped receiving (disabled, deleted, unsubscribed) before this attempt. */
export async function markSkipped(
  c: { orgId: string; endpointId: string; eventId: string },
  token: string,
  reason: string,
  now: string,
): Promise<void> {
  // In the log at the time it was skipped (an event skipped at its first attempt was never logged).
  const log = keys.webhookDeliveryByTime(c.orgId, c.endpointId, now, c.eventId);
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.webhookDelivery(c.orgId, c.endpointId, c.eventId),
        UpdateExpression:
          'SET #status = :skipped, skipped_reason = :r, updated_at = :now, gsi1pk = :g1, gsi1sk = :g2 REMOVE claim_n, claim_token, claim_until, next_attempt_at',
        ConditionExpression: 'claim_token = :token',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: {
          ':skipped': 'skipped',
          ':r': reason,
          ':now': now,
          ':token': token,
          ':g1': log.gsi1pk,
          ':g2': log.gsi1sk,
        },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** A test delivery goes straight into the log (no claim: it is never retried). */
export async function putTestDelivery(
  c: { orgId: string; endpointId: string; eventId: string; eventType: string },
  attempt: DeliveryAttempt,
  delivered: boolean,
): Promise<void> {
  const rec: WebhookDeliveryRecord = {
    entity: 'webhook_delivery',
    org_id: c.orgId,
    endpoint_id: c.endpointId,
    event_id: c.eventId,
    event_type: c.eventType,
    status: delivered ? 'delivered' : 'failed',
    attempts: [attempt],
    done: 1,
    updated_at: attempt.attempted_at,
  };
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: {
        ...keys.webhookDelivery(c.orgId, c.endpointId, c.eventId),
        ...keys.webhookDeliveryByTime(c.orgId, c.endpointId, attempt.attempted_at, c.eventId),
        ...rec,
        ttl: ttlIn(DELIVERY_LOG_DAYS),
      },
    }),
  );
}

/**
 * A page of an endpoint's delivery log, most recently attempted first, after the log position
 * `after` (the `<attempted at>#<event id>` of the last item of the previous page). Each item comes
 * with its log position, the cursor's key.
 */
export async function queryDeliveries(
  orgId: string,
  endpointId: string,
  opts: { limit: number; after?: string | undefined },
): Promise<{ items: Array<WebhookDeliveryRecord & { log_position: string }>; hasMore: boolean }> {
  const log = keys.webhookDeliveriesOf(orgId, endpointId);
  const start = opts.after ? deliveryLogStart(orgId, endpointId, opts.after) : undefined;
  const res = await ddb.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      ExpressionAttributeValues: { ':pk': log.gsi1pk },
      ScanIndexForward: false,
      Limit: opts.limit + 1,
      ExclusiveStartKey: start,
    }),
  );
  const items = res.Items ?? [];
  // toWebhookDelivery picks the public fields; claim bookkeeping never leaves the adapter's caller.
  return {
    items: items
      .slice(0, opts.limit)
      .map((i) => ({ ...fromItem<WebhookDeliveryRecord>(i), log_position: String(i.gsi1sk) })),
    hasMore: items.length > opts.limit,
  };
}

/** A log position is `<ISO time>#<event id>`; DynamoDB resumes a GSI query from the full key. */
export const DELIVERY_LOG_POSITION = /^\d{4}-\d{2}-\d{2}T[\d:.]+Z#(msg_[0-9A-HJKMNP-TV-Z]{26})$/;

function deliveryLogStart(orgId: string, endpointId: string, position: string) {
  const eventId = DELIVERY_LOG_POSITION.exec(position)?.[1] ?? '';
  return {
    ...keys.webhookDelivery(orgId, endpointId, eventId),
    gsi1pk: keys.webhookDeliveriesOf(orgId, endpointId).gsi1pk,
    gsi1sk: position,
  };
}
