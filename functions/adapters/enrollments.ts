import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { auditPut } from '#adapters/audit-log';
import { keys } from '#adapters/keys';
import { fromItem, TABLE_NAME, type TransactItem, transactIf } from '#adapters/table';
import type { AuditEntry, EnrollmentRecord } from '#core/people';
import { ddb } from '#shared/clients';

// One-time enrollment links, stored by the SHA-256 of their token (the token itself only ever
// reaches the person). Spent by deleting the item in the transaction that saves the passkey, so a
// link works exactly once; DynamoDB's TTL removes the unused ones.

const ttlOf = (iso: string) => Math.ceil(Date.parse(iso) / 1000);

export async function putEnrollment(tokenHash: string, rec: EnrollmentRecord): Promise<void> {
  await ddb.send(new PutCommand(enrollmentPut(tokenHash, rec).Put));
}

/** The transaction item that stores a new link (with the user it lets in, in the same transaction). */
export function enrollmentPut(tokenHash: string, rec: EnrollmentRecord) {
  return {
    Put: {
      TableName: TABLE_NAME,
      Item: { ...keys.enrollment(tokenHash), entity: 'enrollment', ...rec, ttl: ttlOf(rec.expires_at) },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  } satisfies TransactItem;
}

/**
 * A fresh link for an existing user, recorded by `audit`: false (nothing written) when the user is
 * not, or no longer, in the organization.
 */
export async function putEnrollmentFor(
  tokenHash: string,
  rec: EnrollmentRecord,
  audit: AuditEntry,
): Promise<boolean> {
  return transactIf([
    {
      ConditionCheck: {
        TableName: TABLE_NAME,
        Key: keys.user(rec.org_id, rec.user_id),
        ConditionExpression: 'attribute_exists(pk)',
      },
    },
    enrollmentPut(tokenHash, rec),
    auditPut(audit),
  ]);
}

/** The link's record while it is unspent and unexpired at `now`; null otherwise. */
export async function getEnrollment(tokenHash: string, now: Date): Promise<EnrollmentRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.enrollment(tokenHash), ConsistentRead: true }),
  );
  if (!res.Item) return null;
  const rec = fromItem<EnrollmentRecord>(res.Item);
  return Date.parse(rec.expires_at) > now.getTime() ? rec : null;
}

/** The transaction item that spends a link: fails unless it still exists and has not expired. */
export function spendEnrollmentItem(tokenHash: string, now: Date) {
  return {
    Delete: {
      TableName: TABLE_NAME,
      Key: keys.enrollment(tokenHash),
      ConditionExpression: 'attribute_exists(pk) AND expires_at > :now',
      ExpressionAttributeValues: { ':now': now.toISOString() },
    },
  };
}
