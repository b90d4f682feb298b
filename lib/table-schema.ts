// The single table's key schema, read by the CDK stack and by the local stack's bootstrap so both
// create exactly the same table.

export const TABLE = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  /** GSI1: secondary listings inside an organization (posts by status, API keys of an org). */
  indexes: [{ name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' }],
} as const;
