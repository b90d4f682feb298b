import { DeleteCommand } from '@aws-sdk/lib-dynamodb';
import { auditPut } from '#adapters/audit-log';
import { keys } from '#adapters/keys';
import { batchGet, fromItem, TABLE_NAME, transactIf, updateIf } from '#adapters/table';
import { cutoffsOf, userOf } from '#adapters/users';
import type { User } from '#core/accounts';
import type { AuditEntry, ConsoleSessionRecord, SessionCutoffs } from '#core/people';
import { ddb } from '#shared/clients';

// Console sessions, stored by the SHA-256 of the cookie's value (the cookie itself only ever
// reaches the browser). The cookie names the organization and the user, so a request reads the
// session and its user in one BatchGet; DynamoDB's TTL removes a session after its absolute expiry.

const ttlOf = (iso: string) => Math.ceil(Date.parse(iso) / 1000);

/** The transaction item that starts a session. */
export function sessionPut(cookieHash: string, rec: ConsoleSessionRecord) {
  return {
    Put: {
      TableName: TABLE_NAME,
      Item: {
        ...keys.consoleSession(cookieHash),
        entity: 'console_session',
        ...rec,
        ttl: ttlOf(rec.expires_at),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

/** The transaction item that ends a session; refused when it is already gone. */
function sessionDelete(cookieHash: string) {
  return {
    Delete: {
      TableName: TABLE_NAME,
      Key: keys.consoleSession(cookieHash),
      ConditionExpression: 'attribute_exists(pk)',
    },
  };
}

/** The session and the user the cookie names, in one round trip; either null when missing. */
export async function getSessionAndUser(
  cookieHash: string,
  orgId: string,
  userId: string,
): Promise<{ session: ConsoleSessionRecord | null; user: User | null; cutoffs: SessionCutoffs | null }> {
  const [session, user] = await batchGet([keys.consoleSession(cookieHash), keys.user(orgId, userId)]);
  return {
    session: session ? fromItem<ConsoleSessionRecord>(session) : null,
    user: user ? userOf(user) : null,
    cutoffs: user ? cutoffsOf(user) : null,
  };
}

/**
 * Ends every session of the user opened up to `at` (the current one too) and records `audit`;
 * false when the user is gone (nothing written).
 */
export function endSessionsOf(
  orgId: string,
  userId: string,
  at: string,
  audit: AuditEntry,
): Promise<boolean> {
  return transactIf([
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.user(orgId, userId),
        UpdateExpression: 'SET sessions_valid_after = :at',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':at': at },
      },
    },
    auditPut(audit),
  ]);
}

/** Ends a session on its own (expired, or its user removed or demoted). */
export async function deleteSession(cookieHash: string): Promise<void> {
  await ddb.send(new DeleteCommand({ TableName: TABLE_NAME, Key: keys.consoleSession(cookieHash) }));
}

/** Signs out: deletes the session and records `audit`; false when it was already gone (nothing written). */
export function endSession(cookieHash: string, audit: AuditEntry): Promise<boolean> {
  return transactIf([sessionDelete(cookieHash), auditPut(audit)]);
}

/**
 * Moves the session's last-seen time to `seenAt` unless another request did since `previous`
 * (then theirs stands); false when the session is gone or was touched meanwhile.
 */
export function touchSession(cookieHash: string, previous: string, seenAt: string): Promise<boolean> {
  return updateIf({
    Key: keys.consoleSession(cookieHash),
    UpdateExpression: 'SET #s = :s',
    ConditionExpression: 'attribute_exists(pk) AND #s = :prev',
    ExpressionAttributeNames: { '#s': 'seen_at' },
    ExpressionAttributeValues: { ':s': seenAt, ':prev': previous },
  });
}
