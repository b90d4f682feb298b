import { apiOperations, DEFAULT_TIMEOUT_SECONDS, type Worker, workers } from '#lib/operations';

// What the local Lambda stand-in may invoke by name, as in AWS: the API operations (the MCP
// server's tools), the workers the manifest says are invoked by other functions (the probe) and
// the stream relay (`herald stream replay` hands it a dead-lettered batch again). Their names
// locally are their manifest ids.

export interface Invokable {
  entry: string;
  timeoutMs: number;
}

export function invokableFunctions(list: readonly Worker[] = workers): Map<string, Invokable> {
  const out = new Map<string, Invokable>();
  for (const op of apiOperations)
    out.set(op.id, { entry: op.entry, timeoutMs: (op.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000 });
  for (const w of list)
    if (w.trigger.kind === 'invoke' || w.trigger.kind === 'stream')
      out.set(w.id, { entry: w.entry, timeoutMs: w.timeoutSeconds * 1000 });
  return out;
}

/** The environment naming each invoked worker to its callers (one process: every handler sees it). */
export function invokedFunctionEnv(list: readonly Worker[] = workers): Record<string, string> {
  return Object.fromEntries(
    list.flatMap((w) => (w.trigger.kind === 'invoke' ? [[w.trigger.env, w.id] as const] : [])),
  );
}
