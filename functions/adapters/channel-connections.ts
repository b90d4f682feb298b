import { createHash } from 'node:crypto';
import { DeleteCommand, GetCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import type { Sealed } from '#adapters/sealed';
import {
  batchGet,
  fromItem,
  ifConditionHolds,
  isConditionFailure,
  setClause,
  TABLE_NAME,
  updateIf,
} from '#adapters/table';
import type { ChannelRecord, Org } from '#core/accounts';
import type { ConnectionRecord } from '#core/connections';
import { ddb } from '#shared/clients';

// Connection sessions (`ORG#<org>` / `CONN#<id>`) and the OAuth `state` that finds one from the
// platform's callback (`OAUTHSTATE#<sha256(state)>`, used once: taking it deletes it). What must
// stay secret while a session is open — the PKCE verifier, and the grant while the person picks an
// account — is sealed under the session's own context. Sessions and states expire by TTL.

/** What a session keeps sealed: the PKCE verifier, and the grant once the code was exchanged. */
export interface Pending {
  codeVerifier?: string | null;
  /** Per account id: the credentials a channel of that account would keep. */
  grants?: Record<string, Record<string, unknown>>;
  /** The scopes the grant holds, as the platform reported them (null: it did not say). */
  scopes?: string[] | null;
}

interface Stored extends ConnectionRecord {
  pending?: Sealed | null;
}

/** The context a session's pending part is sealed under (adapters/channel-connection-secrets.ts). */
export const pendingContext = (orgId: string, id: string) => ({
  purpose: 'connection',
  org_id: orgId,
  connection_id: id,
});
const ttl = (rec: ConnectionRecord) => Math.floor(Date.parse(rec.expires_at) / 1000) + 7 * 86_400;
export const hashState = (state: string) => createHash('sha256').update(state).digest('hex');

/**
 * What a new session is checked against, in one round trip (strongly consistent, so a settings
 * change applies from the next request): the organization when `org` (its landing origins), the
 * channel to reconnect when `channelId`. No request when neither is wanted.
 */
export async function sessionContext(
  orgId: string,
  want: { org: boolean; channelId: string | null },
): Promise<{ org: Org | null; channel: ChannelRecord | null }> {
  const wanted = [
    ...(want.org ? [keys.org(orgId)] : []),
    ...(want.channelId ? [keys.channel(orgId, want.channelId)] : []),
  ];
  const items = wanted.length ? await batchGet(wanted) : [];
  const org = items.find((i) => i?.entity === 'org');
  const channel = items.find((i) => i?.entity === 'channel');
  return { org: org ? fromItem<Org>(org) : null, channel: channel ? fromItem<ChannelRecord>(channel) : null };
}

/** Stores a new session; `state` (OAuth) becomes findable by the callback. */
export async function putConnection(
  rec: ConnectionRecord,
  pending: Sealed | null,
  state: string | null,
): Promise<void> {
  const item: Stored & Record<string, unknown> = {
    ...keys.connection(rec.org_id, rec.id),
    entity: 'connection',
    ...rec,
    pending,
    ttl: ttl(rec),
  };
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName: TABLE_NAME, Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
        ...(state
          ? [
              {
                Put: {
                  TableName: TABLE_NAME,
                  Item: {
                    ...keys.oauthState(hashState(state)),
                    entity: 'oauth_state',
                    org_id: rec.org_id,
                    connection_id: rec.id,
                    ttl: Math.floor(Date.parse(rec.expires_at) / 1000),
                  },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
            ]
          : []),
      ],
    }),
  );
}

/**
 * The session a callback's `state` names, once: a second use (a replay) finds nothing. A read comes
 * first, so a made-up or spent state costs a read, not a (failed, but billed) conditional delete.
 */
export async function takeState(state: string): Promise<{ orgId: string; connectionId: string } | null> {
  const known = await ddb.send(
    new GetCommand({
      TableName: TABLE_NAME,
      Key: keys.oauthState(hashState(state)),
      ConsistentRead: true,
      ProjectionExpression: 'pk',
    }),
  );
  if (!known.Item) return null;
  return ifConditionHolds(async () => {
    const res = await ddb.send(
      new DeleteCommand({
        TableName: TABLE_NAME,
        Key: keys.oauthState(hashState(state)),
        ConditionExpression: 'attribute_exists(pk)',
        ReturnValues: 'ALL_OLD',
      }),
    );
    const item = res.Attributes;
    return item ? { orgId: String(item.org_id), connectionId: String(item.connection_id) } : null;
  });
}

/** A session, and its pending part still sealed (adapters/channel-connection-secrets.ts opens it). */
export async function getConnection(
  orgId: string,
  id: string,
): Promise<{ rec: ConnectionRecord; pending: Sealed | null } | null> {
  const res = await ddb.send(
    new GetCommand({ TableName: TABLE_NAME, Key: keys.connection(orgId, id), ConsistentRead: true }),
  );
  if (!res.Item) return null;
  const { pending, ttl: _ttl, ...rec } = fromItem<Stored & { ttl?: number }>(res.Item);
  return { rec: rec as ConnectionRecord, pending: pending ?? null };
}

/**
 * Moves a session on from `from` (and only from it: of two callbacks or selects racing, one
 * wins). `pending` replaces the sealed part (null erases it). False when the session was not in
 * `from` any more.
 */
export async function advanceConnection(
  rec: ConnectionRecord,
  from: ConnectionRecord['status'],
  next: Partial<ConnectionRecord>,
  pending: Sealed | null,
  /** The session keeps a grant until then: it joins the sync index for its cleanup (keys.connectionCleanup). */
  opts: { cleanupAt?: string } = {},
): Promise<boolean> {
  const cleanup = opts.cleanupAt ? keys.connectionCleanup(opts.cleanupAt, rec.org_id, rec.id) : null;
  const set: Record<string, unknown> = { ...next, pending, ...(cleanup ?? {}) };
  const names: Record<string, string> = { '#status': 'status' };
  const values: Record<string, unknown> = { ':from': from };
  const parts = setClause(set, names, values);
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: keys.connection(rec.org_id, rec.id),
        UpdateExpression: `SET ${parts}${cleanup ? '' : ' REMOVE gsi2pk, gsi2sk'}`,
        ConditionExpression: '#status = :from',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** The session-completing item of a channel's connect transaction (connected, grant erased). */
export function completeConnectionItem(
  rec: ConnectionRecord,
  from: ConnectionRecord['status'],
  channelId: string,
  at: string,
) {
  return {
    Update: {
      TableName: TABLE_NAME,
      Key: keys.connection(rec.org_id, rec.id),
      UpdateExpression:
        'SET #status = :connected, channel_id = :ch, updated_at = :at, pending = :none, accounts = :none REMOVE gsi2pk, gsi2sk',
      ConditionExpression: '#status = :from',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':connected': 'connected',
        ':ch': channelId,
        ':at': at,
        ':none': null,
        ':from': from,
      },
    },
  };
}

/**
 * Ends an expired account choice: its sealed grant and accounts are erased and it leaves the sync
 * index (its status reads `expired` from its time). False when it was completed meanwhile.
 */
export async function endExpiredSelection(rec: ConnectionRecord, now: string): Promise<boolean> {
  return updateIf({
    Key: keys.connection(rec.org_id, rec.id),
    UpdateExpression: 'SET pending = :none, accounts = :none, updated_at = :now REMOVE gsi2pk, gsi2sk',
    ConditionExpression: '#status = :selecting AND expires_at <= :now',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':none': null, ':now': now, ':selecting': 'selecting_account' },
  });
}
