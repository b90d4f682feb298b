import type { ConsoleGate } from '#shared/console';
import { resolveSession } from '#usecases/console-sessions';

/** The console pipeline's question about a request's session cookie, answered by the sessions use case. */
export const consoleGate: ConsoleGate = { resolve: resolveSession };
