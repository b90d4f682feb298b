import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { fromItem, ifConditionHolds, queryAll, setClause, TABLE_NAME, transactIf } from '#adapters/table';
import type { ChannelRecord } from '#core/accounts';
import { ddb } from '#shared/clients';

// Channels (`ORG#<org>` / `CHANNEL#<ch>`), which channel posts as which platform account
// (`CHACCT#<platform>#<account>`, so connecting an account twice reconnects its channel), their
// health, and their place in the channel-sync index (gsi2 `CHSYNC#<day>`, read by
// channel-sync-index.ts). Their credentials: channel-credentials.ts.

export async function getChannel(orgId: string, channelId: string): Promise<ChannelRecord | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.channel(orgId, channelId), ConsistentRead: true }),
  );
  return res.Item ? fromItem<ChannelRecord>(res.Item) : null;
}

export async function listChannels(orgId: string): Promise<ChannelRecord[]> {
  const { pk, skPrefix } = keys.channelsOfOrg(orgId);
  const items = await queryAll({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
    ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
  });
  return items.map((item) => fromItem<ChannelRecord>(item));
}

/** The channel that posts as this platform account in the org, if any. */
export async function channelOfAccount(
  orgId: string,
  platform: string,
  accountId: string,
): Promise<string | null> {
  const res = await ddb.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: keys.channelAccount(orgId, platform, accountId),
      ConsistentRead: true,
    }),
  );
  return res.Item ? String(res.Item.channel_id) : null;
}

/**
 * The channel's health after a sync or a failed delivery: the profile the platform reports, the
 * status and error, and when to look again (the sync index follows next_sync_at). Written only if
 * the channel is still connected by the same connection it was read with (a reconnect or
 * disconnect meanwhile wins): null then. A move to reauth_required makes the stream relay emit
 * channel.reauth_required once.
 */
export async function updateChannelHealth(
  rec: ChannelRecord,
  patch: Partial<
    Pick<
      ChannelRecord,
      | 'handle'
      | 'avatar_url'
      | 'followers'
      | 'status'
      | 'last_sync_at'
      | 'last_error'
      | 'next_sync_at'
      | 'sync_failures'
    >
  >,
  now: string,
): Promise<ChannelRecord | null> {
  const next = { ...rec, ...patch, updated_at: now };
  // The index entry moves only with a new next_sync_at: from `rec`, possibly read before a sync
  // moved it on, it would put the entry back where the channel no longer is.
  const moves = 'next_sync_at' in patch;
  const sync = next.next_sync_at ? keys.channelSync(next.next_sync_at, rec.org_id, rec.id) : null;
  const set: Record<string, unknown> = { ...patch, updated_at: now, ...(moves && sync ? sync : {}) };
  const names: Record<string, string> = { '#st': 'status' };
  const values: Record<string, unknown> = {};
  const condition = sameConnection(rec, values);
  const parts = setClause(set, names, values);
  return ifConditionHolds(async () => {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.channel(rec.org_id, rec.id),
        UpdateExpression: `SET ${parts}${moves && !sync ? ' REMOVE gsi2pk, gsi2sk' : ''}`,
        ConditionExpression: condition,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return next;
  });
}

/** The condition that the channel is still connected by the connection `rec` was read with. */
function sameConnection(rec: ChannelRecord, values: Record<string, unknown>): string {
  values[':disconnected'] = 'disconnected';
  if (rec.connection_id) values[':conn'] = rec.connection_id;
  return `attribute_exists(pk) AND #st <> :disconnected AND ${
    rec.connection_id ? 'connection_id = :conn' : 'attribute_not_exists(connection_id)'
  }`;
}

/**
 * Disconnects: the channel becomes `disconnected` (it stops counting against the plan's bound and
 * leaves the sync index) and its credentials are erased, in one transaction — only while they are
 * still at `credentialsVersion`, the version the caller revoked (a refresh in between rotated them:
 * false, and the caller revokes the new ones). The account's guard stays: connecting the same
 * account again revives this channel. False too when it was already disconnected (or is gone).
 */
export async function disconnectChannel(
  rec: ChannelRecord,
  now: string,
  credentialsVersion: number,
): Promise<boolean> {
  return transactIf([
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.channel(rec.org_id, rec.id),
        UpdateExpression:
          'SET #s = :disconnected, last_error = :none, updated_at = :now, next_sync_at = :none REMOVE gsi2pk, gsi2sk',
        ConditionExpression: 'attribute_exists(pk) AND #s <> :disconnected',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':disconnected': 'disconnected', ':none': null, ':now': now },
      },
    },
    {
      Delete: {
        TableName: TABLE_NAME,
        Key: keys.channelCredentials(rec.org_id, rec.id),
        ConditionExpression: 'attribute_not_exists(pk) OR version = :v',
        ExpressionAttributeValues: { ':v': credentialsVersion },
      },
    },
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.org(rec.org_id),
        UpdateExpression: 'ADD channel_count :minus',
        ExpressionAttributeValues: { ':minus': -1 },
      },
    },
  ]);
}
