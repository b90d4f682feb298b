// Calendar days in UTC (YYYY-MM-DD), the unit of the day-keyed items: the sync index, the stats'
// day counters and the published-posts index.

const DAY_MS = 86_400_000;

/** The UTC day of an instant. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** The UTC days from the one holding `fromMs` to the one holding `toMs`, oldest first (none if reversed). */
export function utcDaysBetween(fromMs: number, toMs: number): string[] {
  const out: string[] = [];
  for (let d = Date.parse(utcDay(fromMs)); d <= toMs; d += DAY_MS) out.push(utcDay(d));
  return out;
}

/** The last `count` UTC days, oldest first, the day holding `nowMs` last. */
export const lastUtcDays = (nowMs: number, count: number): string[] =>
  utcDaysBetween(nowMs - (count - 1) * DAY_MS, nowMs);
