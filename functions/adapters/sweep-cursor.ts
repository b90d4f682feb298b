import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { keys } from '#adapters/keys';
import { advanceThrough, TABLE_NAME } from '#adapters/table';
import { ddb } from '#shared/clients';

// The time up to which the sweeper has dispatched every entry of the due-work index (one item for
// the deployment). Each sweep dispatches only what lies past it, so an entry is dispatched once
// however often sweeps run; a sweeper that stopped (an outage, a laptop asleep with the local
// stack) carries on from there instead of skipping what fell due meanwhile.

/**
 * How far the sweeper has dispatched, in ms since the epoch; null before the first sweep. A cursor
 * written by an older Herald holds only the minute it swept: it counts from that minute's start.
 */
export async function dispatchedThrough(): Promise<number | null> {
  const res = await ddb.send(new GetCommand({ TableName: TABLE_NAME, Key: keys.sweepCursor() }));
  const through = res?.Item?.through;
  if (typeof through === 'number') return through;
  const minute = res?.Item?.minute;
  return typeof minute === 'number' ? minute * 60_000 : null;
}

/**
 * Moves the cursor forward to `through` (never back: concurrent sweeps may finish out of order),
 * noting when the sweep ran (`swept_at`, ms): GET /health tells a stopped sweeper by it.
 */
export async function markDispatched(through: number, sweptAt: number): Promise<void> {
  await advanceThrough(keys.sweepCursor(), 'sweep_cursor', through, { swept_at: sweptAt });
}

/** When a sweep last moved the cursor (ms since the epoch); null before the first (or an older Herald's). */
export async function lastSweptAt(): Promise<number | null> {
  const res = await ddb.send(new GetCommand({ TableName: TABLE_NAME, Key: keys.sweepCursor() }));
  const at = res?.Item?.swept_at;
  return typeof at === 'number' ? at : null;
}
