import { type LadderStepInput, ladderStep } from '#usecases/webhook-ladder-step';

/** Invoked by the ladder state machine's Task states (lambda:invoke; the payload is the input). */
export const handler = async (input: LadderStepInput) => ladderStep(input);
