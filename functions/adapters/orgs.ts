import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, TABLE_NAME } from '#adapters/table';
import { userPuts } from '#adapters/users';
import type { Org, OrgSettings, Plan, User } from '#core/accounts';
import type { Limits } from '#core/plans';
import { ddb } from '#shared/clients';

// Organizations: the org item, created with its first owner.

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
