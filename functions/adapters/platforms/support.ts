import { PlatformError } from './types.ts';

// Small helpers several connectors share.

/** A non-empty string, else undefined (credentials, options and API answers are untyped). */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The earlier attempt's result cannot be known: the worker must not publish again on its own. */
export function outcomeUnknown(platform: string, why: string): PlatformError {
  return new PlatformError('system', `${platform}: outcome unknown: ${why}`, { retryable: false });
}

/** Pacing of a status poll: a delay per round (the last repeats) and a total budget. */
export interface Polling {
  delaysMs: number[];
  budgetMs: number;
}

/**
 * Polls `check` after each delay of `polling` until it returns a value; undefined once the next delay
 * would run past the budget (the caller decides what "still processing" means). The first round always runs.
 */
export async function pollWithin<T>(
  polling: Polling,
  check: () => Promise<T | undefined>,
): Promise<T | undefined> {
  const started = Date.now();
  for (let i = 0; ; i++) {
    const delay = polling.delaysMs[Math.min(i, polling.delaysMs.length - 1)] ?? 1000;
    if (i > 0 && Date.now() - started + delay > polling.budgetMs) return undefined;
    if (delay) await sleep(delay);
    const done = await check();
    if (done !== undefined) return done;
  }
}
