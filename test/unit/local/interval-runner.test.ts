import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IntervalRunner } from '../../../bin/local/interval-runner.ts';

// The local stand-in for an EventBridge schedule: a handler every `everyMs`, never two at once.

/** Runs still pending; afterEach finishes them so stop() can return. */
let releases: Array<(err?: Error) => void> = [];

/** A run the test finishes by hand. */
function controlledRun() {
  const run = vi.fn(
    () =>
      new Promise<void>((resolve, reject) => {
        releases.push((err) => (err ? reject(err) : resolve()));
      }),
  );
  return {
    run,
    /** Finishes the oldest pending run (with `err`: it fails). */
    finish: (err?: Error) => releases.shift()?.(err),
  };
}

let runner: IntervalRunner | undefined;

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  const stopping = runner?.stop();
  runner = undefined;
  for (const release of releases) release();
  releases = [];
  await stopping;
  vi.useRealTimers();
});

describe('IntervalRunner', () => {
  it('runs the handler every interval', async () => {
    // Arrange
    const run = vi.fn(async () => undefined);
    runner = new IntervalRunner(run, 100, () => {});

    // Act
    runner.start();
    await vi.advanceTimersByTimeAsync(350);

    // Assert
    expect(run).toHaveBeenCalledTimes(3);
  });

  it('never starts a run while the previous one is still going', async () => {
    // Arrange
    const { run, finish } = controlledRun();
    runner = new IntervalRunner(run, 100, () => {});
    runner.start();

    // Act: five intervals pass during the first run; then it finishes.
    await vi.advanceTimersByTimeAsync(550);
    const duringFirst = run.mock.calls.length;
    finish();
    await vi.advanceTimersByTimeAsync(100);

    // Assert
    expect(duringFirst).toBe(1);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it('reports a failed run and keeps running', async () => {
    // Arrange
    const errors: unknown[] = [];
    const { run, finish } = controlledRun();
    runner = new IntervalRunner(run, 100, (err) => errors.push(err));
    runner.start();
    await vi.advanceTimersByTimeAsync(100);

    // Act
    finish(new Error('sweep failed'));
    await vi.advanceTimersByTimeAsync(100);

    // Assert
    expect(errors).toEqual([expect.objectContaining({ message: 'sweep failed' })]);
    expect(run).toHaveBeenCalledTimes(2);
  });

  it('stop() waits for the run in progress and starts no other', async () => {
    // Arrange
    const { run, finish } = controlledRun();
    const r = new IntervalRunner(run, 100, () => {});
    r.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(run).toHaveBeenCalledTimes(1);

    // Act
    let stopped = false;
    const stopping = r.stop().then(() => {
      stopped = true;
    });
    await vi.advanceTimersByTimeAsync(500);
    const stoppedWhileRunning = stopped;
    finish();
    await stopping;
    await vi.advanceTimersByTimeAsync(500);

    // Assert
    expect(stoppedWhileRunning).toBe(false);
    expect(stopped).toBe(true);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('stop() before any run resolves at once and nothing runs after', async () => {
    const run = vi.fn(async () => undefined);
    const r = new IntervalRunner(run, 100, () => {});
    r.start();
    await r.stop();
    await vi.advanceTimersByTimeAsync(1000);
    expect(run).not.toHaveBeenCalled();
  });
});
