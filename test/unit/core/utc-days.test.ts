import { describe, expect, it } from 'vitest';
import { lastUtcDays, utcDay, utcDaysBetween } from '#core/utc-days';

const at = (iso: string) => Date.parse(iso);

describe('UTC days', () => {
  it('names the UTC day of an instant, whatever the hour', () => {
    expect(utcDay(at('2026-03-01T00:00:00.000Z'))).toBe('2026-03-01');
    expect(utcDay(at('2026-02-28T23:59:59.999Z'))).toBe('2026-02-28');
  });

  it('lists every day from the first instant to the second, both ends included, across months and years', () => {
    expect(utcDaysBetween(at('2025-12-30T22:00:00Z'), at('2026-01-02T01:00:00Z'))).toEqual([
      '2025-12-30',
      '2025-12-31',
      '2026-01-01',
      '2026-01-02',
    ]);
    expect(utcDaysBetween(at('2026-02-28T10:00:00Z'), at('2026-02-28T11:00:00Z'))).toEqual(['2026-02-28']);
    expect(utcDaysBetween(at('2026-03-02T00:00:00Z'), at('2026-03-01T00:00:00Z'))).toEqual([]);
  });

  it('gives the last n days, today last, a leap day included', () => {
    expect(lastUtcDays(at('2028-03-01T00:00:01Z'), 3)).toEqual(['2028-02-28', '2028-02-29', '2028-03-01']);
    expect(lastUtcDays(at('2026-06-15T23:59:59.999Z'), 1)).toEqual(['2026-06-15']);
    expect(lastUtcDays(at('2026-06-15T12:00:00Z'), 14)).toHaveLength(14);
  });
});
