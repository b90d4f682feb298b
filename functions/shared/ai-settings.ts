// The generation engine's settings as the functions read them: the stack sets these from the
// stage's `ai` setting (lib/stage.ts) on the functions with `ai` access; the local stack passes
// the user's own through.

export const AI_ENV = {
  bedrockModelId: 'HERALD_AI_BEDROCK_MODEL_ID',
  bedrockRegion: 'HERALD_AI_BEDROCK_REGION',
  bedrockGuardrailId: 'HERALD_AI_BEDROCK_GUARDRAIL_ID',
  bedrockGuardrailVersion: 'HERALD_AI_BEDROCK_GUARDRAIL_VERSION',
  images: 'HERALD_AI_IMAGES',
  openAiBaseUrl: 'HERALD_AI_OPENAI_BASE_URL',
  openAiModel: 'HERALD_AI_OPENAI_MODEL',
  /** The key as given: local use only. */
  openAiKey: 'HERALD_AI_OPENAI_KEY',
  /** The key encrypted with KMS under OPENAI_KEY_CONTEXT (AWS). */
  openAiKeyCiphertext: 'HERALD_AI_OPENAI_KEY_CIPHERTEXT',
  timeoutMs: 'HERALD_AI_TIMEOUT_MS',
} as const;

/** The model call's deadline when HERALD_AI_TIMEOUT_MS is unset. */
export const DEFAULT_AI_TIMEOUT_MS = 20_000;

/** The KMS encryption context the OpenAI-compatible key is encrypted under; the grant requires it. */
export const OPENAI_KEY_CONTEXT = { herald: 'ai-openai-key' } as const;

/** An inference profile id starts with its geography (or `global`) before the model id. */
export const INFERENCE_PROFILE_PREFIX = /^(us|us-gov|eu|apac|jp|au|global)\./;
