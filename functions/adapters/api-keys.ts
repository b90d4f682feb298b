import { GetCommand, PutCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, queryAll, TABLE_NAME } from '#adapters/table';
import { revokeAtGateItems } from '#adapters/usage';
import type { ApiKeyRecord } from '#core/accounts';
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

export async function putApiKey(hash: string, rec: ApiKeyRecord): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...keys.apiKey(hash), ...keys.apiKeyByOrg(rec.org_id, rec.id), entity: 'api_key', ...rec },
      ConditionExpression: 'attribute_not_exists(pk)',
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

/**
 * Revokes a key: its record gets `revoked_at` and, in the same transaction, the request gate of
 * each of `periods` (this month and the next) refuses it, so its very next request is refused on
 * every container whatever their caches hold. Null when the org has no such key.
 */
export async function revokeApiKey(
  orgId: string,
  keyId: string,
  now: string,
  periods: readonly string[],
): Promise<ApiKeyRecord | null> {
  const item = (await apiKeyItemsOfOrg(orgId)).find((i) => i.id === keyId);
  if (!item) return null;
  if (item.revoked_at) return fromItem<ApiKeyRecord>(item);
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: TABLE_NAME,
            Key: { pk: item.pk as string, sk: item.sk as string },
            UpdateExpression: 'SET revoked_at = :now',
            ConditionExpression: 'org_id = :org',
            ExpressionAttributeValues: { ':now': now, ':org': orgId },
          },
        },
        ...revokeAtGateItems(orgId, keyId, periods, now),
      ],
    }),
  );
  return fromItem<ApiKeyRecord>({ ...item, revoked_at: now });
}
