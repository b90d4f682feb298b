import {
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import type { ApiKeyRecord, Org, OrgSettings, Plan, User } from '#core/accounts';
import type { Limits } from '#core/plans';
import { ddb } from '#shared/clients';
import { keys } from './keys.ts';
import { revokeAtGateItems } from './limits.ts';
import { fromItem, isConditionFailure, TABLE_NAME } from './table.ts';

// Organizations, users, API keys and channels.

export class AlreadyExistsError extends Error {}

export async function getOrg(orgId: string): Promise<Org | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.org(orgId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<Org>(res.Item) : null;
}

export async function createOrgWithOwner(org: Org, owner: User): Promise<void> {
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...keys.org(org.id), entity: 'org', ...org },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        ...userPuts(owner),
      ],
    }),
  );
}

function userPuts(user: User) {
  return [
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...keys.userEmail(user.org_id, user.email), entity: 'user_email', user_id: user.id },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...keys.user(user.org_id, user.id), entity: 'user', ...user },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
}

/** Adds a user; the org must exist and the email must be new in it. */
export async function addUser(user: User): Promise<void> {
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            ConditionCheck: {
              TableName: TABLE_NAME,
              Key: keys.org(user.org_id),
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          ...userPuts(user),
        ],
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new AlreadyExistsError('organization missing or email already used');
    throw err;
  }
}

export async function getUser(orgId: string, userId: string): Promise<User | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.user(orgId, userId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<User>(res.Item) : null;
}

export async function updateOrgSettings(
  orgId: string,
  patch: Partial<OrgSettings>,
  now: string,
): Promise<Org> {
  const names: Record<string, string> = { '#s': 'settings', '#u': 'updated_at' };
  const values: Record<string, unknown> = { ':u': now };
  const sets = ['#u = :u'];
  for (const [k, v] of Object.entries(patch)) {
    names[`#${k}`] = k;
    values[`:${k}`] = v;
    sets.push(`#s.#${k} = :${k}`);
  }
  const res = await ddb.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.org(orgId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    }),
  );
  return fromItem<Org>(res.Attributes ?? {});
}

/** Sets the plan; `limits` replaces the operator's overrides (none: the plan's own allowances). */
export async function setOrgPlan(
  orgId: string,
  plan: Plan,
  limits: Partial<Limits> | null,
  now: string,
): Promise<Org> {
  const res = await ddb.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.org(orgId),
      UpdateExpression: 'SET #p = :p, #l = :l, #u = :u',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#p': 'plan', '#l': 'limits', '#u': 'updated_at' },
      ExpressionAttributeValues: { ':p': plan, ':l': limits, ':u': now },
      ReturnValues: 'ALL_NEW',
    }),
  );
  return fromItem<Org>(res.Attributes ?? {});
}

// ---- API keys ------------------------------------------------------------------------------------

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

async function apiKeyItemsOfOrg(orgId: string) {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const res = await ddb.send(
      new QueryCommand({
        TableName: TABLE_NAME,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :p',
        ExpressionAttributeValues: { ':p': keys.apiKeysOfOrg(orgId).gsi1pk },
        ExclusiveStartKey: start,
      }),
    );
    items.push(...(res.Items ?? []));
    start = res.LastEvaluatedKey;
  } while (start);
  return items;
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

/** Emails of the organization's owners (who are warned about failing webhooks). */
export async function listOwnerEmails(orgId: string): Promise<string[]> {
  const res = await ddb.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      FilterExpression: '#role = :owner',
      ExpressionAttributeNames: { '#role': 'role' },
      ExpressionAttributeValues: { ':pk': keys.org(orgId).pk, ':sk': 'USER#', ':owner': 'owner' },
    }),
  );
  return (res.Items ?? []).map((u) => String(u.email)).filter((e) => e.includes('@'));
}
