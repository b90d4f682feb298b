import type { DispatchMessage } from '#core/messages';
import { type DispatchOutcome, dispatchAll } from '#usecases/schedule-dispatcher';

/** One dispatch message as a batch of one (the handler's use case takes the queue batch). */
export async function dispatch(msg: DispatchMessage, clock?: () => Date): Promise<DispatchOutcome> {
  const [outcome] = await dispatchAll([msg], clock);
  if (outcome instanceof Error) throw outcome;
  return outcome as DispatchOutcome;
}
