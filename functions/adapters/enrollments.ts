import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, TABLE_NAME } from '#adapters/table';
import type { EnrollmentRecord } from '#core/people';
import { ddb } from '#shared/clients';

// One-time enrollment links, stored by the SHA-256 of their token (the token itself only ever
// reaches the person). Spent by deleting the item in the transaction that saves the passkey, so a
// link works exactly once; DynamoDB's TTL removes the unused ones.

const ttlOf = (iso: string) => Math.ceil(Date.parse(iso) / 1000);

export async function putEnrollment(tokenHash: string, rec: EnrollmentRecord): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { ...keys.enrollment(tokenHash), entity: 'enrollment', ...rec, ttl: ttlOf(rec.expires_at) },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
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
