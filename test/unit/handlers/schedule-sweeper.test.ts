import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WATCHDOG_EVERY_SECONDS } from '#core/timing';

// The sweeper's handler runs the watchdog part at most every WATCHDOG_EVERY_SECONDS per container
// (every sweep in AWS, where sweeps are a minute apart; one in thirty locally).

const sweep = vi.fn();
vi.mock('#usecases/schedule-sweeper', () => ({ sweep }));

const { handler } = await import('#handlers/schedule-sweeper');

const T0 = new Date('2030-06-10T09:30:00.000Z').getTime();

describe('schedule sweeper handler', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    sweep.mockReset();
    sweep.mockResolvedValue({ dispatched: 0, redriven: 0, watchFailed: 0, refunded: 0 });
  });
  afterEach(() => vi.useRealTimers());

  it('runs the watchdog on the first sweep, then at most every WATCHDOG_EVERY_SECONDS, and again after a failed one', async () => {
    const watchAt = async (offsetSeconds: number) => {
      vi.setSystemTime(T0 + offsetSeconds * 1000);
      await handler().catch(() => undefined);
      return sweep.mock.calls.at(-1)?.[1]?.watch;
    };

    const first = await watchAt(0);
    const second = await watchAt(1);
    const due = await watchAt(WATCHDOG_EVERY_SECONDS);
    sweep.mockRejectedValueOnce(new Error('DynamoDB down'));
    const failed = await watchAt(2 * WATCHDOG_EVERY_SECONDS);
    const retried = await watchAt(2 * WATCHDOG_EVERY_SECONDS + 1);
    const after = await watchAt(2 * WATCHDOG_EVERY_SECONDS + 2);

    expect([first, second, due, failed, retried, after]).toEqual([true, false, true, true, true, false]);
  });

  it('fails the invocation (the Errors alarm) when the watchdog could not handle a post, after the sweep was done, and watches again next time', async () => {
    vi.setSystemTime(T0 + 1000 * WATCHDOG_EVERY_SECONDS * 10);
    sweep.mockResolvedValueOnce({ dispatched: 3, redriven: 0, watchFailed: 1, refunded: 0 });
    await expect(handler()).rejects.toThrow(/watchdog: 1 post\(s\) not handled/);
    vi.setSystemTime(T0 + 1000 * (WATCHDOG_EVERY_SECONDS * 10 + 1));
    await handler();
    expect(sweep.mock.calls.at(-1)?.[1]).toEqual({ watch: true });
  });
});
