import { DATA_MODEL_KEY, DATA_MODEL_VERSION } from '#core/data-model';
import { dataModelVerdict } from '#shared/data-model-gate';
import { updateIf } from './table.ts';

// The writer of the table's data model mark: the schedule sweeper, every minute, so a deploy's new
// code marks the table within a minute. It raises the mark only (never lowers it: a rolled-back
// release must not tell a newer one's data it is old), and only when this container read it lower.

let raised = false;

/** Raises the table's mark to DATA_MODEL_VERSION when it is lower or missing (once per container). */
export async function raiseDataModelMark(now: Date): Promise<boolean> {
  if (raised) return false;
  const verdict = await dataModelVerdict();
  if (!verdict.run || !verdict.raise) {
    raised = true;
    return false;
  }
  const wrote = await updateIf({
    Key: DATA_MODEL_KEY,
    UpdateExpression: 'SET #v = :v, entity = :e, raised_at = :at',
    ConditionExpression: 'attribute_not_exists(#v) OR #v < :v',
    ExpressionAttributeNames: { '#v': 'version' },
    ExpressionAttributeValues: { ':v': DATA_MODEL_VERSION, ':e': 'data_model', ':at': now.toISOString() },
  });
  raised = true;
  return wrote;
}
