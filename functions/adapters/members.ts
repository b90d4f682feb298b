import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { auditPut } from '#adapters/audit-log';
import { enrollmentPut } from '#adapters/enrollments';
import { keys } from '#adapters/keys';
import { ownerCountItem } from '#adapters/orgs';
import {
  countAll,
  failedConditions,
  fromItem,
  queryAll,
  TABLE_NAME,
  type TransactItem,
  updateIf,
} from '#adapters/table';
import { userOf, userPuts } from '#adapters/users';
import type { Role, User } from '#core/accounts';
import type { AuditEntry, EnrollmentRecord } from '#core/people';
import { ddb } from '#shared/clients';

// The people of an organization as the owners manage them: invited (the user, their email guard and
// their enrollment link), given another role, removed (with their passkeys). Every change that adds
// or takes away an owner moves the org's owner_count in the same transaction, and taking one away
// is conditioned on another remaining: two owners demoting each other at once leave one owner.

/** The organization's users, oldest first (ids are ULIDs). */
export async function listUsers(orgId: string): Promise<User[]> {
  const { pk, skPrefix } = keys.usersOfOrg(orgId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
  });
  return items.map((i) => userOf(i));
}

/** How many passkeys each user of the organization has (only the keys are read). */
export async function passkeyCounts(orgId: string): Promise<Map<string, number>> {
  const { pk, skPrefix } = keys.passkeysOfOrg(orgId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
    ProjectionExpression: 'sk',
  });
  const counts = new Map<string, number>();
  for (const item of items) {
    // PASSKEY#<user>#<credential>
    const userId = String(item.sk).slice(skPrefix.length).split('#')[0] ?? '';
    counts.set(userId, (counts.get(userId) ?? 0) + 1);
  }
  return counts;
}

/**
 * Sets owner_count on an organization created before it existed, from its users. Changes of owners
 * need the count (their increments and decrements are conditioned on it), so none can happen
 * between the count and this write; of two initializers, the second's write is refused, harmlessly.
 */
export async function initOwnerCount(orgId: string): Promise<void> {
  const { pk, skPrefix } = keys.usersOfOrg(orgId);
  const owners = await countAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    FilterExpression: '#r = :owner',
    ExpressionAttributeNames: { '#r': 'role' },
    ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix, ':owner': 'owner' },
    ConsistentRead: true,
  });
  await updateIf({
    Key: keys.org(orgId),
    UpdateExpression: 'SET owner_count = :n',
    ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(owner_count)',
    ExpressionAttributeValues: { ':n': owners },
  });
}

/** Why a change of the organization's people was refused (nothing was written). */
export type PeopleRefusal = 'email_taken' | 'last_owner' | 'changed_meanwhile';

/** Runs `items`; the refusal named by the first failed item's index in `reasons`, else changed_meanwhile. */
async function transactPeople(
  items: TransactItem[],
  reasons: Map<number, PeopleRefusal>,
): Promise<PeopleRefusal | null> {
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: items }));
    return null;
  } catch (err) {
    const failed = failedConditions(err);
    if (!failed) throw err;
    for (const i of failed) {
      const reason = reasons.get(i);
      if (reason) return reason;
    }
    return 'changed_meanwhile';
  }
}

const roleIs = (role: Role) => ({
  ConditionExpression: '#r = :was',
  ExpressionAttributeNames: { '#r': 'role' },
  ExpressionAttributeValues: { ':was': role },
});

/** Adds `user` (email unique in the org) with an enrollment link, recorded by `audit`. */
export async function addMember(
  user: User,
  enrollment: { tokenHash: string; record: EnrollmentRecord },
  audit: AuditEntry,
): Promise<PeopleRefusal | null> {
  const orgItem: TransactItem =
    user.role === 'owner'
      ? ownerCountItem(user.org_id, 1)
      : {
          ConditionCheck: {
            TableName: TABLE_NAME,
            Key: keys.org(user.org_id),
            ConditionExpression: 'attribute_exists(pk)',
          },
        };
  // userPuts: [email guard, user].
  return transactPeople(
    [...userPuts(user), orgItem, enrollmentPut(enrollment.tokenHash, enrollment.record), auditPut(audit)],
    new Map([[0, 'email_taken']]),
  );
}

/** Gives `user` (as read) another role, unless it changed since or they are the last owner. */
export async function setMemberRole(
  user: User,
  role: Role,
  audit: AuditEntry,
): Promise<PeopleRefusal | null> {
  const items: TransactItem[] = [
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.user(user.org_id, user.id),
        UpdateExpression: 'SET #r = :role',
        ConditionExpression: '#r = :was',
        ExpressionAttributeNames: { '#r': 'role' },
        ExpressionAttributeValues: { ':was': user.role, ':role': role },
      },
    },
    auditPut(audit),
  ];
  if (user.role === 'owner') items.push(ownerCountItem(user.org_id, -1));
  else if (role === 'owner') items.push(ownerCountItem(user.org_id, 1));
  return transactPeople(items, new Map(user.role === 'owner' ? [[2, 'last_owner']] : []));
}

/** The passkeys' item keys of one user. */
async function passkeyKeysOf(orgId: string, userId: string): Promise<Array<{ pk: string; sk: string }>> {
  const { pk, skPrefix } = keys.passkeysOfUser(orgId, userId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
    ProjectionExpression: 'pk, sk',
    ConsistentRead: true,
  });
  return items.map((i) => ({ pk: String(i.pk), sk: String(i.sk) }));
}

/** A transaction holds at most 100 items; the user, their guard, the org and the entry take 4. */
const PASSKEYS_PER_REMOVAL = 90;

/**
 * Removes `user` (as read): the user, their email guard and their passkeys, unless their role
 * changed since or they are the last owner. Their sessions end with the user (a session is only
 * valid while its user exists).
 */
export async function deleteMember(user: User, audit: AuditEntry): Promise<PeopleRefusal | null> {
  const passkeys = await passkeyKeysOf(user.org_id, user.id);
  const items: TransactItem[] = [
    { Delete: { TableName: TABLE_NAME, Key: keys.user(user.org_id, user.id), ...roleIs(user.role) } },
    {
      Delete: {
        TableName: TABLE_NAME,
        Key: keys.userEmail(user.org_id, user.email),
        ConditionExpression: 'user_id = :id',
        ExpressionAttributeValues: { ':id': user.id },
      },
    },
    auditPut(audit),
    ...(user.role === 'owner' ? [ownerCountItem(user.org_id, -1)] : []),
    ...passkeys.slice(0, PASSKEYS_PER_REMOVAL).map((Key) => ({ Delete: { TableName: TABLE_NAME, Key } })),
  ];
  const refused = await transactPeople(items, new Map(user.role === 'owner' ? [[3, 'last_owner']] : []));
  if (refused) return refused;
  // More passkeys than one transaction holds (hardly a real case): the user is gone, so what is
  // left can no longer sign anyone in; it is deleted after.
  for (let i = PASSKEYS_PER_REMOVAL; i < passkeys.length; i += 25) {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: passkeys.slice(i, i + 25).map((Key) => ({ Delete: { TableName: TABLE_NAME, Key } })),
      }),
    );
  }
  return null;
}
