// The single table's key schema, read by the CDK stack and by the local stack's bootstrap so both
// create exactly the same table.

export const TABLE = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  indexes: [
    /** GSI1: secondary listings inside an organization (posts by status, API keys of an org). */
    { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk', projection: 'ALL' },
    /**
     * GSI2: due work across organizations, bucketed by UTC minute — scheduled posts at their
     * scheduled_at, publishing posts at their watchdog time. Sparse, keys and ids only.
     */
    { name: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk', projection: 'KEYS_ONLY' },
  ],
} as const;
