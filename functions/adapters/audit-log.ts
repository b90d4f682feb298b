import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { queryPage, TABLE_NAME } from '#adapters/table';
import { AUDIT_RETENTION_DAYS, type AuditEntry } from '#core/people';
import { ddb } from '#shared/clients';

// The audit log: one item per act under the organization (`AUDIT#<ulid>`), so "newest first" is a
// descending query of one partition. Written in the same transaction as the act wherever the act
// is a transaction (auditPut), so an act is never without its entry nor an entry without its act.

const item = (entry: AuditEntry) => ({
  ...keys.audit(entry.org_id, entry.id),
  entity: 'audit',
  ...entry,
  ttl: Math.ceil(Date.parse(entry.at) / 1000) + AUDIT_RETENTION_DAYS * 86_400,
});

/** The transaction item that records `entry`. */
export function auditPut(entry: AuditEntry) {
  return { Put: { TableName: TABLE_NAME, Item: item(entry) } };
}

/** Records an entry on its own (acts that are not a transaction). */
export async function putAudit(entry: AuditEntry): Promise<void> {
  await ddb.send(new PutCommand({ TableName: TABLE_NAME, Item: item(entry) }));
}

/** One page of the organization's entries, newest first, after the entry id `after`. */
export async function listAudit(
  orgId: string,
  limit: number,
  after: string | undefined,
): Promise<{ items: AuditEntry[]; hasMore: boolean }> {
  const { pk, skPrefix } = keys.auditOfOrg(orgId);
  return queryPage<AuditEntry>(
    {
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
    },
    limit,
    after ? keys.audit(orgId, after) : undefined,
  );
}
