import type { SignedIn } from '#core/people';
import { resolveSession } from '#usecases/console-sessions';

/** The console pipeline's question about a request's session cookie, answered by the use cases. */
export interface ConsoleGate {
  resolve: (cookie: string | undefined, now: Date) => Promise<SignedIn | null>;
}

export const consoleGate: ConsoleGate = { resolve: resolveSession };
