import { describe, expect, it } from 'vitest';
import { FIT_FUNCTION_ENV, PROBE_FUNCTION_ENV } from '#core/vocabulary';
import { apiOperations, type Worker, workers } from '#lib/operations';
import { invokableFunctions, invokedFunctionEnv } from '../../../bin/local/invoked-functions.ts';

// The local Lambda stand-in invokes by name what AWS would let a caller invoke: the API operations
// (the MCP server's tools), the workers with an `invoke` trigger (the probe, the fit function) and the stream relay
// (`herald stream replay`), nothing else.

describe('the local stack’s invocable functions', () => {
  it('are the API operations, probeMedia, fitMedia and streamRelay, with their manifest timeouts; no other worker', () => {
    const invokable = invokableFunctions();
    expect([...invokable.keys()].sort()).toEqual(
      [...apiOperations.map((op) => op.id), 'probeMedia', 'fitMedia', 'streamRelay'].sort(),
    );
    expect(invokable.get('streamRelay')).toEqual({
      entry: 'functions/handlers/stream-relay.ts',
      timeoutMs: 30_000,
    });
    expect(invokable.get('probeMedia')).toEqual({
      entry: 'functions/handlers/probe-media.ts',
      timeoutMs: 27_000,
    });
    expect(invokable.get('fitMedia')).toEqual({
      entry: 'functions/handlers/fit-media.ts',
      timeoutMs: 900_000,
    });
    for (const w of workers.filter((w) => w.trigger.kind !== 'invoke' && w.trigger.kind !== 'stream'))
      expect(invokable.has(w.id)).toBe(false);
  });

  it('name the probe and the fit function to their callers under the variables their adapters read', () => {
    expect(invokedFunctionEnv()).toEqual({
      [PROBE_FUNCTION_ENV]: 'probeMedia',
      [FIT_FUNCTION_ENV]: 'fitMedia',
    });
    const probe = workers.find((w) => w.id === 'probeMedia') as Worker;
    // Uploads are probed by completeMediaUpload, imports by importMedia or the import worker.
    expect(probe.trigger).toEqual({
      kind: 'invoke',
      by: ['completeMediaUpload', 'importMedia', 'mediaImportWorker'],
      env: PROBE_FUNCTION_ENV,
    });
  });
});
