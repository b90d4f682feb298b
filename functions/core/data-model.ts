// The data model's version: what the items in the table look like. A release that changes an item's
// shape in a way older code would misread (or write back wrongly) raises it; the newest code writes
// it into the table (the schedule sweeper, soon after a deploy), and code that finds the table's
// version above its own refuses to run instead of corrupting data it does not understand.

/** The data model this code reads and writes. */
export const DATA_MODEL_VERSION = 1;

/** The one item that holds the table's data model version (`version`: a number). */
export const DATA_MODEL_KEY = { pk: 'META', sk: 'SCHEMA' } as const;

export type DataModelVerdict =
  /** Same version, or the table's is older (or unmarked): run; the sweeper raises an older mark. */
  { readonly run: true; readonly raise: boolean } | { readonly run: false; readonly reason: string };

/** Whether code at `code` may run on a table marked `table` (null: no mark yet). */
export function judgeDataModel(table: number | null, code: number = DATA_MODEL_VERSION): DataModelVerdict {
  if (table === null || table < code) return { run: true, raise: true };
  if (table === code) return { run: true, raise: false };
  return {
    run: false,
    reason: `the table holds data model ${table}, newer than this release's ${code}: deploy the newer release (docs/operator/upgrading.md)`,
  };
}
