import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DATA_MODEL_KEY, type DataModelVerdict, judgeDataModel } from '#core/data-model';
import { ApiError } from '#core/errors';
import { logger } from './logger.ts';

// Every function with a table reads the table's data model version once per container (one GetItem,
// started at module init in Lambda so it overlaps the rest of the cold start) and refuses to touch
// the table when that version is newer than its own: an older release meeting a newer data model
// stops instead of corrupting it. The check sits on the DynamoDB client, so it holds for every
// handler alike: HTTP operations answer 503 service_unavailable, workers throw and their messages
// go back to the queue unprocessed.

let verdict: Promise<DataModelVerdict> | undefined;
/** How the gate reads the marker (set by installDataModelGate). */
let readMarker: ((table: string) => Promise<number | null>) | undefined;

/** A key that names the marker item itself (plain or marshalled): its reads and writes pass. */
function isMarker(key: unknown): boolean {
  if (!key || typeof key !== 'object') return false;
  const { pk, sk } = key as Record<string, unknown>;
  const text = (v: unknown) => (v && typeof v === 'object' ? (v as { S?: unknown }).S : v);
  return text(pk) === DATA_MODEL_KEY.pk && text(sk) === DATA_MODEL_KEY.sk;
}

/**
 * This container's verdict on the table's data model, read once (a failed read is read again
 * next time). Without TABLE_NAME (a function with no table) there is nothing to protect.
 */
export function dataModelVerdict(): Promise<DataModelVerdict> {
  const table = process.env.TABLE_NAME;
  if (!table || !readMarker) return Promise.resolve({ run: true, raise: false });
  verdict ??= readMarker(table).then(
    (version) => {
      const v = judgeDataModel(version);
      if (!v.run)
        logger.error('refusing to run: the data model is newer than this release', { reason: v.reason });
      return v;
    },
    (err: unknown) => {
      verdict = undefined;
      throw err;
    },
  );
  return verdict;
}

/** The refusal an operation answers with (503) and a worker throws. */
export const dataModelRefusal = () =>
  new ApiError(
    'service_unavailable',
    'This deployment is being upgraded: its running code is older than its data. Retry later.',
    { headers: { 'retry-after': '60' } },
  );

/**
 * Puts the check on a DynamoDB client (the one every adapter uses, the document client too): each
 * command but those on the marker waits for the verdict, settled after the first; a newer data
 * model refuses it. `read` reads the marker's `version` (null: no marker).
 */
export function installDataModelGate(
  client: DynamoDBClient,
  read: (table: string) => Promise<number | null>,
): void {
  readMarker = read;
  client.middlewareStack.add(
    (next) => async (args) => {
      if (!isMarker((args.input as { Key?: unknown }).Key)) {
        const v = await dataModelVerdict();
        if (!v.run) throw dataModelRefusal();
      }
      return next(args);
    },
    { step: 'initialize', name: 'heraldDataModelGate', priority: 'high' },
  );
  // In Lambda the read starts with the container, overlapping the rest of its init.
  if (process.env.AWS_LAMBDA_FUNCTION_NAME && process.env.TABLE_NAME)
    dataModelVerdict().catch(() => undefined);
}

/** For tests: forget the verdict (a new container). */
export function resetDataModelVerdict(): void {
  verdict = undefined;
}
