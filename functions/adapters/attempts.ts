import { keys } from '#adapters/keys';
import { updateIf } from '#adapters/table';

// Sign-in and enrollment attempts, counted per source address and UTC minute: one small item per
// (what, source, minute), incremented by a conditional ADD so the count never passes the limit even
// under concurrent requests; DynamoDB's TTL removes it shortly after its minute.

/**
 * Counts one attempt of `what` from `source` in `minute` (ms since the epoch / 60 000); false when
 * `limit` attempts were already counted there (this one is refused and not counted).
 */
export function countAttempt(what: string, source: string, minute: number, limit: number): Promise<boolean> {
  return updateIf({
    Key: keys.attempts(what, source, minute),
    UpdateExpression: 'ADD #n :one SET #e = :e, #ttl = :ttl',
    ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
    ExpressionAttributeNames: { '#n': 'count', '#e': 'entity', '#ttl': 'ttl' },
    ExpressionAttributeValues: {
      ':one': 1,
      ':limit': limit,
      ':e': 'attempts',
      // Kept one minute past its own so a clock skew between containers never resets it early.
      ':ttl': (minute + 2) * 60,
    },
  });
}
