// The port the generation use case calls, and what the engines share: one request (a system
// prompt, one user turn, an optional image) and one answer with the model's token usage, the errors
// an engine answers with, and its deadline.

export interface ModelRequest {
  system: string;
  user: string;
  image?: { bytes: Uint8Array; format: 'jpeg' | 'png' | 'gif' | 'webp' };
  maxTokens: number;
  signal?: AbortSignal;
}

export interface ModelAnswer {
  text: string;
  inputTokens: number;
  outputTokens: number;
}

export interface ModelClient {
  readonly model: string;
  readonly acceptsImages: boolean;
  converse(req: ModelRequest): Promise<ModelAnswer>;
}

export type ModelErrorKind = 'throttled' | 'access_denied' | 'invalid_request' | 'timeout' | 'unavailable';

/** The model could not be reached or refused the call: nothing usable came back (503 model_unavailable). */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The model answered, but with nothing Herald can use: a guardrail or the model's own content
 * filter replaced the answer, or it was empty (502 generation_failed).
 */
export class ModelAnswerError extends Error {
  override readonly name = 'ModelAnswerError';
}

/** The request's own signal (if any) and the engine's timeout, whichever ends first. */
export function deadlineOf(timeoutMs: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** An abort from our deadline (or the caller's signal) rather than from the far side. */
export const isAbort = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
