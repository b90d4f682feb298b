import { DeleteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { queryAll, TABLE_NAME } from '#adapters/table';
import { ddb } from '#shared/clients';

// Refusals of the operator's app by a platform (a channel's renewal in the sync, or a delivery's),
// counted per platform between two runs of the channel sync's finder (`ALARM#PLATFORM_APP_REFUSED`
// / `<platform>`). The sync and delivery workers each meet a few; the finder reports what they
// counted as one alarm line per platform, so a rotated secret is one page, not one per channel or
// delivery. Writes to one item are bounded by the workers' concurrency, far below a partition's limit.

/** Counts one refusal; the first error since the last report is the one reported. */
export async function countAppRefusal(platform: string, error: string): Promise<void> {
  await ddb.send(
    new UpdateCommand({
      TableName: TABLE_NAME,
      Key: keys.appRefusals(platform),
      UpdateExpression: 'SET entity = :e, #error = if_not_exists(#error, :err) ADD channels :one',
      ExpressionAttributeNames: { '#error': 'error' },
      ExpressionAttributeValues: { ':e': 'app_refusals', ':err': error, ':one': 1 },
    }),
  );
}

/**
 * What was counted since the last call, per platform, and resets it: each item is deleted with its
 * old value returned, so a count that lands meanwhile starts a new item and is reported next time.
 */
export async function takeAppRefusals(): Promise<
  Array<{ platform: string; channels: number; error: string }>
> {
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.appRefusalsAll().pk },
  });
  const taken = await Promise.all(
    items.map(async (item) => {
      const res = await ddb.send(
        new DeleteCommand({
          TableName: TABLE_NAME,
          Key: keys.appRefusals(String(item.sk)),
          ReturnValues: 'ALL_OLD',
        }),
      );
      const old = res.Attributes;
      return old && Number(old.channels) > 0
        ? [{ platform: String(item.sk), channels: Number(old.channels), error: String(old.error ?? '') }]
        : [];
    }),
  );
  return taken.flat();
}
