import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { TABLE_NAME, updateIf } from '#adapters/table';
import { ddb } from '#shared/clients';

// The minute up to which the sweeper has read every bucket of the due-work index. A sweeper that
// stopped for longer than its lookback (an outage, a laptop asleep with the local stack) reads on
// from there instead of skipping what fell due meanwhile.

/** The last minute swept (minutes since the epoch), or null before the first sweep. */
export async function sweptThrough(): Promise<number | null> {
  const res = await ddb.send(new GetCommand({ TableName: TABLE_NAME, Key: keys.sweepCursor() }));
  const minute = res?.Item?.minute;
  return typeof minute === 'number' ? minute : null;
}

/** Moves the cursor forward to `minute` (never back: concurrent sweeps may finish out of order). */
export async function markSwept(minute: number): Promise<void> {
  await updateIf({
    Key: keys.sweepCursor(),
    // `minute` is a DynamoDB reserved word: it must go through a placeholder.
    UpdateExpression: 'SET #minute = :m, entity = :e',
    ConditionExpression: 'attribute_not_exists(#minute) OR #minute < :m',
    ExpressionAttributeNames: { '#minute': 'minute' },
    ExpressionAttributeValues: { ':m': minute, ':e': 'sweep_cursor' },
  });
}
