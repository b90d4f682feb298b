import { lastSweptAt } from './sweep-cursor.ts';

// What GET /health asks the table: one GetItem of the sweeper's cursor answers both whether the
// table answers (and how fast) and when the sweeper last ran.

export type TableProbe =
  | { readonly ok: true; readonly ms: number; readonly sweptAt: number | null }
  | { readonly ok: false; readonly ms: number; readonly error: string };

export async function probeTable(): Promise<TableProbe> {
  const started = performance.now();
  try {
    const sweptAt = await lastSweptAt();
    return { ok: true, ms: Math.round(performance.now() - started), sweptAt };
  } catch (err) {
    // The error's name and message only (a throttle, a missing table, the data model refusal).
    const e = err as Error;
    return { ok: false, ms: Math.round(performance.now() - started), error: `${e.name}: ${e.message}` };
  }
}
