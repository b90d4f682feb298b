import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, TABLE_NAME } from '#adapters/table';
import type { CeremonyRecord } from '#core/people';
import { ddb } from '#shared/clients';

// WebAuthn ceremonies: the challenge a begin* handed out, kept until its answer comes back (or
// DynamoDB's TTL removes it). Taking one deletes it in the same request, so an answer is checked
// against its challenge at most once: a replayed answer finds nothing.

export async function putCeremony(rec: CeremonyRecord): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: {
        ...keys.ceremony(rec.id),
        entity: 'ceremony',
        ...rec,
        ttl: Math.ceil(Date.parse(rec.expires_at) / 1000),
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
}

/** Deletes the ceremony and answers what it was; null when there was none (unknown or taken). */
export async function takeCeremony(ceremonyId: string): Promise<CeremonyRecord | null> {
  const res = await ddb.send(
    new DeleteCommand({ TableName: TABLE_NAME, Key: keys.ceremony(ceremonyId), ReturnValues: 'ALL_OLD' }),
  );
  return res.Attributes ? fromItem<CeremonyRecord>(res.Attributes) : null;
}
