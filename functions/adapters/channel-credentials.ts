import { randomUUID } from 'node:crypto';
import type { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { isSealed, open, type Sealed, seal } from '#adapters/sealed';
import {
  batchGet,
  fromItem,
  type Item,
  ifConditionHolds,
  isConditionFailure,
  type Key,
  TABLE_NAME,
  updateIf,
} from '#adapters/table';
import type { ChannelRecord } from '#core/accounts';
import { redactCredentials } from '#core/credentials';
import { ddb } from '#shared/clients';

// A channel's credentials (`ORG#<org>` / `CREDS#<ch>`): sealed with the connection-secrets key
// under {org, channel}, never listed with the channel, never logged. They carry a version and,
// while one process refreshes them, a lease: a refresh token that rotates is spent by exactly one
// refresher, and the others wait for its result. Connecting writes them together with the channel.

export type Credentials = Record<string, unknown>;

const credsContext = (orgId: string, channelId: string) => ({
  purpose: 'channel_credentials',
  org_id: orgId,
  channel_id: channelId,
});

export async function sealCredentials(
  orgId: string,
  channelId: string,
  credentials: Credentials,
): Promise<Sealed> {
  return seal(credsContext(orgId, channelId), credentials);
}

/** The stored credentials opened (items written before sealing hold them in plain JSON). */
async function opened(orgId: string, channelId: string, item: Record<string, unknown> | null | undefined) {
  if (!item) return { credentials: {}, version: 0, lease: null as Lease | null };
  const credentials = isSealed(item.sealed)
    ? await open<Credentials>(credsContext(orgId, channelId), item.sealed)
    : ((item.credentials as Credentials | undefined) ?? {});
  return {
    credentials,
    version: Number(item.version ?? 0),
    lease: (item.lease as Lease | undefined) ?? null,
  };
}

export interface Lease {
  token: string;
  until: number;
  /** Taken over from a refresher whose lease ran out (it may still be finishing). */
  displaced?: boolean;
}

export interface ChannelCredentials {
  channel: ChannelRecord | null;
  credentials: Credentials;
  /** The stored version: a refresh writes version + 1 (see leaseCredentials). */
  version: number;
}

export async function getChannelWithCredentials(
  orgId: string,
  channelId: string,
): Promise<ChannelCredentials> {
  const { channel, version, open } = await getChannelWithSealedCredentials(orgId, channelId);
  return { channel, credentials: await open(), version };
}

/** The channel and its credentials as stored, in one read; `open` is the KMS call, left to the caller. */
export interface SealedChannelCredentials {
  channel: ChannelRecord | null;
  version: number;
  open(): Promise<Credentials>;
  /** The item at `alsoRead`, read in the same round trip (null: none). */
  also: Item | null;
}

/** For an API request: read before the request gate admits it, open only after (no KMS call for a refused one). */
export async function getChannelWithSealedCredentials(
  orgId: string,
  channelId: string,
  alsoRead?: Key,
): Promise<SealedChannelCredentials> {
  const [channel, creds, also] = await batchGet([
    keys.channel(orgId, channelId),
    keys.channelCredentials(orgId, channelId),
    ...(alsoRead ? [alsoRead] : []),
  ]);
  return {
    channel: channel ? fromItem<ChannelRecord>(channel) : null,
    version: Number(creds?.version ?? 0),
    open: async () => (await opened(orgId, channelId, creds)).credentials,
    also: also ?? null,
  };
}

export async function readCredentials(orgId: string, channelId: string) {
  const res = await ddb.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: keys.channelCredentials(orgId, channelId),
      ConsistentRead: true,
    }),
  );
  return opened(orgId, channelId, res.Item);
}

/** The organization is at its plan's channel bound. */
export class ChannelLimitError extends Error {}
/** Another connection connected the same account, or completed the same session, first. */
export class ConnectRaceError extends Error {}

/**
 * Stores a connected (or reconnected) channel in one transaction: the channel, its sealed
 * credentials (version + 1), the account's guard, the org's channel count when the channel starts
 * counting (new, or back from disconnected; refused at the plan's bound), and `also` (the session
 * it completes). `previous` is the channel as read before (null: a new channel).
 */
export async function saveConnectedChannel(args: {
  channel: ChannelRecord;
  previous: ChannelRecord | null;
  credentials: Credentials;
  channelLimit: number;
  also?: Array<Record<string, unknown>>;
}): Promise<void> {
  const { channel, previous } = args;
  const counts = !previous || previous.status === 'disconnected';
  const stored = await ddb.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: keys.channelCredentials(channel.org_id, channel.id),
      ProjectionExpression: 'version',
      ConsistentRead: true,
    }),
  );
  const version = Number(stored.Item?.version ?? 0);
  const sealed = await sealCredentials(channel.org_id, channel.id, args.credentials);
  const sync = channel.next_sync_at ? keys.channelSync(channel.next_sync_at, channel.org_id, channel.id) : {};
  const items: Array<Record<string, unknown>> = [
    {
      Put: {
        TableName: TABLE_NAME,
        Item: { ...keys.channel(channel.org_id, channel.id), ...sync, entity: 'channel', ...channel },
        ConditionExpression: previous ? 'attribute_exists(pk) AND #s = :was' : 'attribute_not_exists(pk)',
        ...(previous
          ? {
              ExpressionAttributeNames: { '#s': 'status' },
              ExpressionAttributeValues: { ':was': previous.status },
            }
          : {}),
      },
    },
    {
      Put: {
        TableName: TABLE_NAME,
        Item: {
          ...keys.channelCredentials(channel.org_id, channel.id),
          entity: 'channel_credentials',
          sealed,
          version: version + 1,
        },
        // A refresh that wrote in between (version + 1 of its own) must not be overwritten with
        // the same version: the connect reads again and retries (ConnectRaceError).
        ConditionExpression: stored.Item ? 'version = :read' : 'attribute_not_exists(pk)',
        ...(stored.Item ? { ExpressionAttributeValues: { ':read': version } } : {}),
      },
    },
    ...(channel.account_id
      ? [
          {
            Put: {
              TableName: TABLE_NAME,
              Item: {
                ...keys.channelAccount(channel.org_id, channel.platform, channel.account_id),
                entity: 'channel_account',
                channel_id: channel.id,
              },
              ConditionExpression: 'attribute_not_exists(pk) OR channel_id = :ch',
              ExpressionAttributeValues: { ':ch': channel.id },
            },
          },
        ]
      : []),
    ...(counts
      ? [
          {
            Update: {
              TableName: TABLE_NAME,
              Key: keys.org(channel.org_id),
              UpdateExpression: 'ADD channel_count :one',
              ConditionExpression:
                'attribute_exists(pk) AND (attribute_not_exists(channel_count) OR channel_count < :limit)',
              ExpressionAttributeValues: { ':one': 1, ':limit': args.channelLimit },
            },
          },
        ]
      : []),
    ...(args.also ?? []),
  ];
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: items as never }));
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const reasons = (err as TransactionCanceledException).CancellationReasons ?? [];
    const countIndex = counts ? items.length - (args.also?.length ?? 0) - 1 : -1;
    if (countIndex >= 0 && reasons[countIndex]?.Code === 'ConditionalCheckFailed')
      throw new ChannelLimitError(`the plan allows ${args.channelLimit} channels`);
    throw new ConnectRaceError('the channel, its account or the session changed meanwhile');
  }
}

/**
 * A channel's credentials while a connector uses them: every version seen can be redacted from
 * error text before it is logged or stored.
 */
export function credentialRedactor() {
  const seen: Credentials[] = [];
  return {
    remember(credentials: Credentials): Credentials {
      seen.push(credentials);
      return credentials;
    },
    redact: (text: string): string => redactCredentials(text, ...seen),
  };
}

/**
 * Takes the refresh lease on a channel's credentials, at the version the caller read and only
 * while no other lease is live. Null when someone else holds it or already wrote a newer version.
 */
export async function leaseCredentials(
  orgId: string,
  channelId: string,
  version: number,
  leaseMs: number,
): Promise<Lease | null> {
  const lease = { token: randomUUID(), until: Date.now() + leaseMs };
  const res = await ifConditionHolds(() =>
    ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.channelCredentials(orgId, channelId),
        UpdateExpression: 'SET lease = :lease',
        ConditionExpression: 'version = :v AND (attribute_not_exists(lease) OR lease.#until < :now)',
        ExpressionAttributeNames: { '#until': 'until' },
        ExpressionAttributeValues: { ':lease': lease, ':v': version, ':now': Date.now() },
        ReturnValues: 'UPDATED_OLD',
      }),
    ),
  );
  return res ? { ...lease, displaced: res.Attributes?.lease !== undefined } : null;
}

/**
 * Writes refreshed credentials as version + 1 and ends the refresh lease, if the stored version is
 * still the one that was refreshed. The version, not the lease, is the condition: a refresher whose
 * lease ran out still holds the only copy of a rotated refresh token, and its write is right as long
 * as nobody wrote a newer version; if somebody did (a reconnect, a refresh after the lease ran out,
 * a disconnect), false: the caller must not use what it could not write.
 */
export async function saveLeasedCredentials(
  orgId: string,
  channelId: string,
  version: number,
  credentials: Credentials,
): Promise<boolean> {
  const sealed = await sealCredentials(orgId, channelId, credentials);
  return updateIf({
    Key: keys.channelCredentials(orgId, channelId),
    UpdateExpression: 'SET sealed = :sealed, version = :next REMOVE lease, credentials',
    ConditionExpression: 'version = :v',
    ExpressionAttributeValues: { ':sealed': sealed, ':v': version, ':next': version + 1 },
  });
}

/** Gives a lease back without writing (the refresh failed). */
export async function releaseLease(orgId: string, channelId: string, lease: Lease): Promise<void> {
  await updateIf({
    Key: keys.channelCredentials(orgId, channelId),
    UpdateExpression: 'REMOVE lease',
    ConditionExpression: 'lease.#token = :token',
    ExpressionAttributeNames: { '#token': 'token' },
    ExpressionAttributeValues: { ':token': lease.token },
  });
}
