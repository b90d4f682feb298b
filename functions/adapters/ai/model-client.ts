import { AI_ENV, DEFAULT_AI_TIMEOUT_MS } from '#shared/ai-settings';
import { bedrockClient } from './bedrock.ts';
import { openAiCompatibleClient } from './openai-compatible.ts';

// The port the generation use case calls: one request (a system prompt, one user turn, an optional
// image) and one answer with the model's token usage. The engine is the deployment's choice (its
// settings put HERALD_AI_* in the environment); with none configured the use case runs the
// rule-based engine instead.

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

/** The engine the environment names, or null (the rule-based engine). Throws on a half or double setting. */
export function modelClientFrom(env: NodeJS.ProcessEnv): ModelClient | null {
  const get = (name: string) => (env[name] === '' ? undefined : env[name]);
  const timeoutMs = Number(get(AI_ENV.timeoutMs) ?? DEFAULT_AI_TIMEOUT_MS);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
    throw new Error(`${AI_ENV.timeoutMs} must be a whole number of milliseconds above 0`);
  const acceptsImages = get(AI_ENV.images) === 'true';
  const modelId = get(AI_ENV.bedrockModelId);
  const baseUrl = get(AI_ENV.openAiBaseUrl);
  if (modelId && baseUrl)
    throw new Error(`set ${AI_ENV.bedrockModelId} or ${AI_ENV.openAiBaseUrl}, not both: one engine answers`);
  if (modelId) {
    const guardrailId = get(AI_ENV.bedrockGuardrailId);
    const guardrailVersion = get(AI_ENV.bedrockGuardrailVersion);
    if (Boolean(guardrailId) !== Boolean(guardrailVersion))
      throw new Error(`${AI_ENV.bedrockGuardrailId} and ${AI_ENV.bedrockGuardrailVersion} go together`);
    return bedrockClient({
      modelId,
      region: get(AI_ENV.bedrockRegion),
      ...(guardrailId && guardrailVersion
        ? { guardrail: { id: guardrailId, version: guardrailVersion } }
        : {}),
      acceptsImages,
      timeoutMs,
    });
  }
  if (baseUrl) {
    const model = get(AI_ENV.openAiModel);
    if (!model) throw new Error(`${AI_ENV.openAiBaseUrl} needs ${AI_ENV.openAiModel}`);
    const key = get(AI_ENV.openAiKey);
    const ciphertext = get(AI_ENV.openAiKeyCiphertext);
    return openAiCompatibleClient({
      baseUrl,
      model,
      key: key ? { plain: key } : ciphertext ? { ciphertext } : undefined,
      acceptsImages,
      timeoutMs,
    });
  }
  return null;
}

let built: { client: ModelClient | null } | undefined;

/** The deployment's engine, built once per container; null: the rule-based engine answers. */
export function modelClient(): ModelClient | null {
  built ??= { client: modelClientFrom(process.env) };
  return built.client;
}

/** The request's own signal (if any) and the engine's timeout, whichever ends first. */
export function deadlineOf(timeoutMs: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/** An abort from our deadline (or the caller's signal) rather than from the far side. */
export const isAbort = (err: unknown): boolean =>
  err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError');
