import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import {
  fromItem,
  ifConditionHolds,
  isConditionFailure,
  queryPage,
  setClause,
  TABLE_NAME,
  transactIf,
} from '#adapters/table';
import { type EndpointState, MAX_ENDPOINTS_PER_ORG, type WebhookEndpointRecord } from '#core/webhooks';
import { ddb } from '#shared/clients';

// Webhook endpoints. Configuration changes (PATCH) and the delivery workers' failure bookkeeping
// touch different attributes with single UpdateItems, so a busy endpoint never makes a PATCH fail
// with a version conflict.

export class EndpointLimitError extends Error {
  override readonly name = 'EndpointLimitError';
}

/** Every endpoint of the organization (at most MAX_ENDPOINTS_PER_ORG: one Query), newest first. */
export async function listEndpoints(orgId: string): Promise<WebhookEndpointRecord[]> {
  return (await queryEndpoints(orgId, { limit: MAX_ENDPOINTS_PER_ORG })).items;
}

/** A page of the organization's endpoints, newest first, after the endpoint `afterId`. */
export function queryEndpoints(
  orgId: string,
  opts: { limit: number; afterId?: string | undefined },
): Promise<{ items: WebhookEndpointRecord[]; hasMore: boolean }> {
  const k = keys.webhookEndpointsOfOrg(orgId);
  return queryPage<WebhookEndpointRecord>(
    {
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': k.pk, ':sk': k.skPrefix },
      ConsistentRead: true,
    },
    opts.limit,
    opts.afterId ? keys.webhookEndpoint(orgId, opts.afterId) : undefined,
  );
}

export async function getEndpoint(orgId: string, id: string): Promise<WebhookEndpointRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.webhookEndpoint(orgId, id), ConsistentRead: true }),
  );
  return res.Item ? fromItem<WebhookEndpointRecord>(res.Item) : null;
}

/** The endpoint and the org's endpoint count in one transaction; EndpointLimitError past the cap. */
export async function createEndpoint(rec: WebhookEndpointRecord): Promise<void> {
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: TABLE_NAME,
              Key: keys.webhookCount(rec.org_id),
              UpdateExpression: 'ADD endpoints :one',
              ConditionExpression: 'attribute_not_exists(endpoints) OR endpoints < :max',
              ExpressionAttributeValues: { ':one': 1, ':max': MAX_ENDPOINTS_PER_ORG },
            },
          },
          {
            Put: {
              TableName: TABLE_NAME,
              Item: { ...keys.webhookEndpoint(rec.org_id, rec.id), ...rec },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new EndpointLimitError('endpoint limit reached');
    throw err;
  }
}

async function conditional(cmd: UpdateCommand): Promise<WebhookEndpointRecord | null> {
  return ifConditionHolds(async () => {
    const res = await ddb.send(cmd);
    return res.Attributes ? fromItem<WebhookEndpointRecord>(res.Attributes) : null;
  });
}

/** What a PATCH may change: top-level attributes of the endpoint. */
export type EndpointConfig = Partial<
  Pick<WebhookEndpointRecord, 'url' | 'event_types' | 'description' | 'enabled' | 'state' | 'failure'>
> & { updated_at: string };

/**
 * Applies a PATCH if the endpoint still exists in the state it was read in (the ladder and the
 * delivery workers change `state` concurrently), and at `expectedVersion` when one is given (a
 * console form's); null otherwise (the caller re-reads).
 */
export function updateEndpointConfig(
  orgId: string,
  id: string,
  config: EndpointConfig,
  expectedState: EndpointState,
  expectedVersion?: number,
): Promise<WebhookEndpointRecord | null> {
  const names: Record<string, string> = { '#state': 'state' };
  const values: Record<string, unknown> = { ':one': 1, ':expected': expectedState };
  if (expectedVersion !== undefined) {
    names['#version'] = 'version';
    values[':version'] = expectedVersion;
  }
  return conditional(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.webhookEndpoint(orgId, id),
      UpdateExpression: `SET ${setClause(config, names, values)} ADD version :one`,
      ConditionExpression: `attribute_exists(pk) AND #state = :expected${expectedVersion === undefined ? '' : ' AND #version = :version'}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    }),
  );
}

/**
 * Replaces the signing secrets if the current one is still the one read (a concurrent rotation
 * wins otherwise: null).
 */
export function rotateEndpointSecret(
  orgId: string,
  id: string,
  secret: WebhookEndpointRecord['secret'],
  expectedCurrent: string,
  updatedAt: string,
): Promise<WebhookEndpointRecord | null> {
  const names: Record<string, string> = { '#secret': 'secret', '#current': 'current' };
  const values: Record<string, unknown> = { ':one': 1, ':expected': expectedCurrent };
  return conditional(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.webhookEndpoint(orgId, id),
      UpdateExpression: `SET ${setClause({ secret, updated_at: updatedAt }, names, values)} ADD version :one`,
      ConditionExpression: 'attribute_exists(pk) AND #secret.#current = :expected',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    }),
  );
}

/** False when there was no such endpoint. Pending deliveries find it gone and stop. */
export async function deleteEndpoint(orgId: string, id: string): Promise<boolean> {
  return transactIf([
    {
      Delete: {
        TableName: TABLE_NAME,
        Key: keys.webhookEndpoint(orgId, id),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.webhookCount(orgId),
        UpdateExpression: 'ADD endpoints :minus',
        ExpressionAttributeValues: { ':minus': -1 },
      },
    },
  ]);
}

// ---- failure bookkeeping (delivery worker and ladder) -------------------------------------------

const DELIVERING = { ':active': 'active', ':warning': 'warning' };

/** A failure-bookkeeping update of an endpoint in a delivering state (or as `condition` says). */
function bookkeeping(
  orgId: string,
  id: string,
  update: string,
  values: Record<string, unknown>,
  condition = 'attribute_exists(pk) AND #state IN (:active, :warning)',
): Promise<WebhookEndpointRecord | null> {
  return conditional(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.webhookEndpoint(orgId, id),
      UpdateExpression: update,
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#state': 'state' },
      ExpressionAttributeValues: { ...values, ...DELIVERING },
      ReturnValues: 'ALL_NEW',
    }),
  );
}

/** One more failed attempt; starts the streak (failing_since) if none is running. */
export function recordEndpointFailure(
  orgId: string,
  id: string,
  f: { at: string; statusCode: number | null; error: string },
): Promise<WebhookEndpointRecord | null> {
  // No status code (a network error): the last one recorded no longer describes the failure.
  const [setCode, removeCode, codeValue] =
    f.statusCode === null
      ? ['', 'REMOVE failure.last_status_code', {}]
      : [', failure.last_status_code = :code', '', { ':code': f.statusCode }];
  return bookkeeping(
    orgId,
    id,
    `SET failure.consecutive_failures = failure.consecutive_failures + :one,
      failure.failing_since = if_not_exists(failure.failing_since, :at),
      failure.last_failure_at = :at, failure.last_error = :err${setCode}
      ${removeCode}`,
    { ':one': 1, ':at': f.at, ':err': f.error.slice(0, 500), ...codeValue },
  );
}

/** A success ends the streak: failure state cleared, warning back to active. */
export function recordEndpointSuccess(orgId: string, id: string): Promise<WebhookEndpointRecord | null> {
  return bookkeeping(orgId, id, 'SET failure = :fresh, #state = :active', {
    ':fresh': { consecutive_failures: 0 },
  });
}

/** 410 Gone: auto-disabled at once. */
export function disableGoneEndpoint(
  orgId: string,
  id: string,
  at: string,
): Promise<WebhookEndpointRecord | null> {
  return bookkeeping(
    orgId,
    id,
    `SET #state = :disabled, enabled = :false, failure.disabled_at = :at,
      failure.consecutive_failures = failure.consecutive_failures + :one,
      failure.failing_since = if_not_exists(failure.failing_since, :at), failure.last_failure_at = :at,
      failure.last_status_code = :gone, failure.last_error = :err`,
    {
      ':disabled': 'auto_disabled',
      ':false': false,
      ':at': at,
      ':one': 1,
      ':gone': 410,
      ':err': 'HTTP 410 Gone: endpoint disabled',
    },
  );
}

/** The failure ladder's rungs: a warning, then auto-disable. */
const RUNGS = {
  warn: {
    update: 'SET #state = :warning, failure.warned_at = :at',
    values: {},
    condition: 'failure.failing_since = :fs AND #state = :active',
  },
  disable: {
    update: 'SET #state = :disabled, enabled = :false, failure.disabled_at = :at',
    values: { ':disabled': 'auto_disabled', ':false': false },
    condition: 'failure.failing_since = :fs AND #state IN (:active, :warning)',
  },
} as const;

/** Climbs one rung of the ladder, only for the same unbroken streak (null otherwise). */
export function climbLadder(
  orgId: string,
  id: string,
  rung: keyof typeof RUNGS,
  failingSince: string,
  at: string,
): Promise<WebhookEndpointRecord | null> {
  const r = RUNGS[rung];
  return bookkeeping(orgId, id, r.update, { ':fs': failingSince, ':at': at, ...r.values }, r.condition);
}
