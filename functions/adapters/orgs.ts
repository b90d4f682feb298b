import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { auditPut } from '#adapters/audit-log';
import { enrollmentPut } from '#adapters/enrollments';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, TABLE_NAME, type TransactItem, transactIf } from '#adapters/table';
import { userOf, userPuts } from '#adapters/users';
import type { Org, OrgSettings, Plan, User } from '#core/accounts';
import type { AuditEntry, EnrollmentRecord } from '#core/people';
import type { Limits } from '#core/plans';
import { ddb } from '#shared/clients';

// Organizations: the org item, created with its first owner.

export async function getOrg(orgId: string): Promise<Org | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.org(orgId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<Org>(res.Item) : null;
}

/** The organization and one of its users, in one round trip (null where missing). */
export async function getOrgWithUser(
  orgId: string,
  userId: string,
): Promise<{ org: Org | null; user: User | null }> {
  const [org, user] = await batchGet([keys.org(orgId), keys.user(orgId, userId)]);
  return { org: org ? fromItem<Org>(org) : null, user: user ? userOf(user) : null };
}

/**
 * The org, its first owner (owner_count 1), the owner's enrollment link and the audit entry, all or
 * nothing.
 */
export async function createOrgWithOwner(
  org: Org,
  owner: User,
  also: { enrollment: { tokenHash: string; record: EnrollmentRecord }; audit: AuditEntry },
): Promise<void> {
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: {
            TableName: TABLE_NAME,
            Item: { ...keys.org(org.id), entity: 'org', ...org, owner_count: 1 },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        ...userPuts(owner),
        enrollmentPut(also.enrollment.tokenHash, also.enrollment.record),
        auditPut(also.audit),
      ],
    }),
  );
}

/**
 * Sets the settings in `patch` (the others stay), moves their version on and records `audit`;
 * with `version`, only while the settings are still at it. False when refused: the org is gone,
 * or its settings changed since `version` was read.
 */
export async function updateOrgSettings(
  orgId: string,
  patch: Partial<OrgSettings>,
  version: number | null,
  now: string,
  audit: AuditEntry,
): Promise<boolean> {
  const names: Record<string, string> = { '#s': 'settings', '#u': 'updated_at', '#v': 'settings_version' };
  const values: Record<string, unknown> = { ':u': now, ':one': 1, ':zero': 0 };
  const sets = ['#u = :u', '#v = if_not_exists(#v, :zero) + :one'];
  let condition = 'attribute_exists(pk)';
  if (version !== null) {
    values[':was'] = version;
    condition += version === 0 ? ' AND (attribute_not_exists(#v) OR #v = :was)' : ' AND #v = :was';
  }
  for (const [k, v] of Object.entries(patch)) {
    names[`#${k}`] = k;
    values[`:${k}`] = v;
    sets.push(`#s.#${k} = :${k}`);
  }
  return transactIf([
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.org(orgId),
        UpdateExpression: `SET ${sets.join(', ')}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      },
    },
    auditPut(audit),
  ]);
}

/**
 * Sets the plan; `limits` replaces the operator's overrides (none: the plan's own allowances).
 * Records `audit` in the same transaction; false when the org is gone.
 */
export async function setOrgPlan(
  orgId: string,
  plan: Plan,
  limits: Partial<Limits> | null,
  now: string,
  audit: AuditEntry,
): Promise<boolean> {
  return transactIf([
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.org(orgId),
        UpdateExpression: 'SET #p = :p, #l = :l, #u = :u',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#p': 'plan', '#l': 'limits', '#u': 'updated_at' },
        ExpressionAttributeValues: { ':p': plan, ':l': limits, ':u': now },
      },
    },
    auditPut(audit),
  ]);
}

/**
 * The transaction item that moves owner_count by one: a decrement only while another owner
 * remains (the last owner guard), an increment only once the count exists (see initOwnerCount).
 */
export function ownerCountItem(orgId: string, delta: 1 | -1): TransactItem {
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: keys.org(orgId),
      UpdateExpression: 'ADD owner_count :d',
      ConditionExpression: delta < 0 ? 'owner_count > :one' : 'attribute_exists(owner_count)',
      ExpressionAttributeValues: delta < 0 ? { ':d': -1, ':one': 1 } : { ':d': 1 },
    },
  };
}
