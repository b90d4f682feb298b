import { AI_ENV, DEFAULT_AI_TIMEOUT_MS } from '#shared/ai-settings';
import { bedrockClient } from './bedrock.ts';
import type { ModelClient } from './model-port.ts';
import { openAiCompatibleClient } from './openai-compatible.ts';

// Callers import the port's types and errors from here, with the engine.
export * from './model-port.ts';

// The deployment's engine: the environment (its settings put HERALD_AI_* there) names Bedrock or an
// OpenAI-compatible endpoint; with none configured the use case runs the rule-based engine instead.

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
