import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, isConditionFailure, queryAll, TABLE_NAME } from '#adapters/table';
import type { User } from '#core/accounts';
import type { SessionCutoffs } from '#core/people';
import { ddb } from '#shared/clients';

// Users of an organization, unique by email within it.

/** The user an item holds, and only that (the item also keeps its sessions' cutoffs). */
export function userOf(item: Record<string, unknown>): User {
  const u = fromItem<User>(item);
  return { id: u.id, org_id: u.org_id, email: u.email, role: u.role, created_at: u.created_at };
}

/** The user item's session cutoffs (absent on a user who never ended a session early). */
export function cutoffsOf(item: Record<string, unknown>): SessionCutoffs {
  const ended = item.ended_passkeys;
  return {
    validAfter: typeof item.sessions_valid_after === 'string' ? item.sessions_valid_after : null,
    endedPasskeys: new Set(ended instanceof Set ? [...ended].map(String) : []),
    passkeyRemovedAt: typeof item.passkey_removed_at === 'string' ? item.passkey_removed_at : null,
  };
}

export class AlreadyExistsError extends Error {}

export function userPuts(user: User) {
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
  return res.Item ? userOf(res.Item) : null;
}

/** Emails of the organization's owners (who are warned about failing webhooks). */
export async function listOwnerEmails(orgId: string): Promise<string[]> {
  const users = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    FilterExpression: '#role = :owner',
    ExpressionAttributeNames: { '#role': 'role' },
    ExpressionAttributeValues: { ':pk': keys.org(orgId).pk, ':sk': 'USER#', ':owner': 'owner' },
  });
  return users.map((u) => String(u.email)).filter((e) => e.includes('@'));
}
