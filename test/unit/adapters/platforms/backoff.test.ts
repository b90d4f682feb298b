import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoff, pollWithin } from '#adapters/platforms/support';

// The exponential pacing the Meta and LinkedIn status waits share, run by pollWithin.

afterEach(() => {
  vi.useRealTimers();
});

describe('backoff', () => {
  it('starts at once, then doubles from the first delay up to the longest', () => {
    expect(backoff({ firstDelayMs: 1000, maxDelayMs: 4000, budgetMs: 10_000 })).toEqual({
      delaysMs: [0, 1000, 2000, 4000],
      budgetMs: 10_000,
    });
    expect(backoff({ firstDelayMs: 250, maxDelayMs: 5000, budgetMs: 20_000 }).delaysMs).toEqual([
      0, 250, 500, 1000, 2000, 4000, 5000,
    ]);
    expect(backoff({ firstDelayMs: 5, maxDelayMs: 5, budgetMs: 30 }).delaysMs).toEqual([0, 5]);
  });

  it('a zero first delay stays zero instead of looping', () => {
    expect(backoff({ firstDelayMs: 0, maxDelayMs: 10, budgetMs: 30 }).delaysMs).toEqual([0, 0]);
  });

  it('pollWithin gives up before a delay would run past the budget, never after it', async () => {
    vi.useFakeTimers({ now: 0 });
    const at: number[] = [];
    const waiting = pollWithin(backoff({ firstDelayMs: 10, maxDelayMs: 40, budgetMs: 100 }), async () => {
      at.push(Date.now());
      return undefined;
    });
    await vi.runAllTimersAsync();
    expect(await waiting).toBeUndefined();
    // 0, +10, +20, +40; the next 40 would end at 110.
    expect(at).toEqual([0, 10, 30, 70]);
    expect(Date.now()).toBeLessThanOrEqual(100);
  });

  it('pollWithin returns the first answer', async () => {
    let rounds = 0;
    const got = await pollWithin(backoff({ firstDelayMs: 1, maxDelayMs: 2, budgetMs: 1000 }), async () =>
      ++rounds === 3 ? 'done' : undefined,
    );
    expect(got).toBe('done');
    expect(rounds).toBe(3);
  });
});
