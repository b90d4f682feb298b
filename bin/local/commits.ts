import { type DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';

// Kept apart from services.ts so the admin CLI can use it without loading the stand-ins.

const TRANSACTIONS = new Set(['TransactWriteItemsCommand', 'ExecuteTransactionCommand']);

/**
 * DynamoDB Local answers a write transaction before its COMMIT has run: it queues the COMMIT on
 * the database's single SQLite thread and does not wait for it, so a crash right after the answer
 * loses the transaction. Any later request that waits on that thread (ListTables does) is answered
 * only after the COMMIT, so the transaction's caller gets its result only then.
 */
export function awaitLocalCommits(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (TRANSACTIONS.has(context.commandName ?? '')) await client.send(new ListTablesCommand({ Limit: 1 }));
      return result;
    },
    { step: 'initialize', name: 'heraldAwaitLocalCommits', override: true },
  );
}
