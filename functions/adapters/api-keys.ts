import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { auditPut } from '#adapters/audit-log';
import { keys } from '#adapters/keys';
import { fromItem, isConditionFailure, queryAll, TABLE_NAME } from '#adapters/table';
import { revokeAtGateItems } from '#adapters/usage';
import type { ApiKeyRecord } from '#core/accounts';
import type { AuditEntry } from '#core/people';
import { ddb } from '#shared/clients';

// API keys: found by the SHA-256 of the presented key; listed per organization through GSI1.

export async function getApiKeyByHash(hash: string, consistent = false): Promise<ApiKeyRecord | null> {
  // Eventually consistent is enough for API requests: a key is read long after it was minted, and
  // a revocation is enforced by the request gate, not by this read.
  const res = await ddb.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: keys.apiKey(hash),
      ...(consistent ? { ConsistentRead: true } : {}),
    }),
  );
  return res.Item ? fromItem<ApiKeyRecord>(res.Item) : null;
}

/** Stores a new key (by its hash) and the audit entry of its minting, together. */
export async function putApiKey(hash: string, rec: ApiKeyRecord, audit: AuditEntry): Promise<void> {
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: TABLE_NAME,
            Item: {
              ...keys.apiKey(hash),
              ...keys.apiKeyByOrg(rec.org_id, rec.id),
              entity: 'api_key',
              ...rec,
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        auditPut(audit),
      ],
    }),
  );
}

function apiKeyItemsOfOrg(orgId: string) {
  return queryAll({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :p',
    ExpressionAttributeValues: { ':p': keys.apiKeysOfOrg(orgId).gsi1pk },
  });
}

export async function listApiKeys(orgId: string): Promise<ApiKeyRecord[]> {
  return (await apiKeyItemsOfOrg(orgId)).map((i) => fromItem<ApiKeyRecord>(i));
}

export type Revocation =
  | { outcome: 'revoked'; key: ApiKeyRecord }
  /** It was revoked before (`key.revoked_at` says when, when known): nothing was written. */
  | { outcome: 'already_revoked'; key: ApiKeyRecord };

/**
 * Revokes a key: its record gets `revoked_at` and, in the same transaction, the request gate of
 * each of `periods` (this month and the next) refuses it, so its very next request is refused on
 * every container whatever their caches hold; `audit` is recorded with it. The gate items are
 * conditioned on the key not being revoked there yet, so of two revocations at once one is
 * refused. Null when the org has no such key.
 */
export async function revokeApiKey(
  orgId: string,
  keyId: string,
  now: string,
  periods: readonly string[],
  audit?: AuditEntry,
  lastUsedAt: string | null = null,
): Promise<Revocation | null> {
  const item = (await apiKeyItemsOfOrg(orgId)).find((i) => i.id === keyId);
  if (!item) return null;
  if (item.revoked_at) return { outcome: 'already_revoked', key: fromItem<ApiKeyRecord>(item) };
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: TABLE_NAME,
              Key: { pk: item.pk as string, sk: item.sk as string },
              UpdateExpression: 'SET revoked_at = :now, last_used_at = :used',
              ConditionExpression: 'org_id = :org',
              ExpressionAttributeValues: { ':now': now, ':org': orgId, ':used': lastUsedAt },
            },
          },
          ...revokeAtGateItems(orgId, keyId, periods, now).map((u) => ({
            Update: { ...u.Update, ConditionExpression: 'attribute_not_exists(#k.r)' },
          })),
          ...(audit ? [auditPut(audit)] : []),
        ],
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    // Revoked by someone else a moment ago: the record says when (it is read again, consistently).
    const again = await ddb.send(
      new GetCommand({ TableName: TABLE_NAME, Key: { pk: item.pk, sk: item.sk }, ConsistentRead: true }),
    );
    return { outcome: 'already_revoked', key: fromItem<ApiKeyRecord>(again.Item ?? item) };
  }
  return {
    outcome: 'revoked',
    key: fromItem<ApiKeyRecord>({ ...item, revoked_at: now, last_used_at: lastUsedAt }),
  };
}
