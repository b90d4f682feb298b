import { describe, expect, it } from 'vitest';
import { cpuBetween, cpuTimes } from '../../bench/support.ts';

// The benches print the machine's busy CPU and steal beside their rates (test/bench/support.ts).

describe('cpuBetween', () => {
  it('turns two /proc/stat readings into busy seconds and the steal share', () => {
    const a = { busy: 1_000, steal: 100, total: 5_000 };
    const b = { busy: 1_600, steal: 300, total: 7_000 };
    // 600 ticks of 10 ms busy; 200 of the 2,000 ticks that passed were stolen.
    expect(cpuBetween(a, b)).toEqual({ busySeconds: 6, stealPct: 10 });
  });

  it('answers nothing without two readings or when no time passed', () => {
    const a = { busy: 1, steal: 0, total: 10 };
    expect(cpuBetween(undefined, a)).toBeUndefined();
    expect(cpuBetween(a, undefined)).toBeUndefined();
    expect(cpuBetween(a, a)).toBeUndefined();
  });

  it('reads this machine (Linux) as busy ≤ total, and moves forward', () => {
    const first = cpuTimes();
    if (!first) return expect(process.platform).not.toBe('linux');
    expect(first.busy + first.steal).toBeLessThanOrEqual(first.total);
    let x = 0;
    for (let i = 0; i < 5e6; i++) x += i;
    expect(x).toBeGreaterThan(0);
    expect((cpuTimes() as typeof first).total).toBeGreaterThanOrEqual(first.total);
  });
});
