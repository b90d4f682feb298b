import { describe, expect, it } from 'vitest';
import { mapLimit } from '#core/concurrency';

describe('mapLimit', () => {
  it('keeps the items’ order and never has more than `limit` calls in flight', async () => {
    let inFlight = 0;
    let most = 0;
    const out = await mapLimit([30, 5, 20, 1, 10, 2], 2, async (ms) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, ms));
      inFlight--;
      return ms * 2;
    });
    expect(out).toEqual([60, 10, 40, 2, 20, 4]);
    expect(most).toBe(2);
  });

  it('rejects with the first failure, and maps nothing for no items', async () => {
    await expect(
      mapLimit([1, 2], 4, async (n) => (n === 2 ? Promise.reject(new Error('no')) : n)),
    ).rejects.toThrow('no');
    expect(await mapLimit([], 4, async (n) => n)).toEqual([]);
  });
});
