import type { ConverseCommandInput, ConverseCommandOutput } from '@aws-sdk/client-bedrock-runtime';

// A contract fake of Amazon Bedrock's Converse operation (Bedrock API Reference, "Converse",
// "ContentBlock", "SystemContentBlock", "ImageBlock", "InferenceConfiguration",
// "GuardrailConfiguration", "ConverseOutput", "TokenUsage"): `converseErrors` lists what the
// service would refuse in a request, `converseAnswer` builds the documented answer. The tests put
// it behind the mocked SDK client, so a request Herald builds is checked against the documented
// shape, not against itself.

/** ContentBlock is a union: exactly one of these members is set. */
const CONTENT_MEMBERS = [
  'text',
  'image',
  'document',
  'video',
  'audio',
  'toolUse',
  'toolResult',
  'guardContent',
  'cachePoint',
  'reasoningContent',
  'citationsContent',
  'searchResult',
] as const;
/** SystemContentBlock's members. */
const SYSTEM_MEMBERS = ['text', 'guardContent', 'cachePoint'] as const;
const IMAGE_FORMATS = ['png', 'jpeg', 'gif', 'webp'];
/** An image's bytes: at most 3.75 MB. */
export const MAX_IMAGE_BYTES = 3_750_000;
/** modelId: 1–2048 characters. */
const MODEL_ID_MAX = 2048;
const GUARDRAIL_VERSION = /^(([1-9][0-9]{0,7})|(DRAFT))$/;
const GUARDRAIL_ID =
  /^(([a-z0-9]+)|(arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail\/[a-z0-9]+))$/;

const membersOf = (block: object) =>
  Object.entries(block)
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);

/** What Converse would answer a ValidationException for (empty: a well-formed request). */
export function converseErrors(input: ConverseCommandInput): string[] {
  const errors: string[] = [];
  if (typeof input.modelId !== 'string' || input.modelId.length < 1 || input.modelId.length > MODEL_ID_MAX)
    errors.push('modelId: 1–2048 characters required');
  if (!Array.isArray(input.messages) || input.messages.length === 0) errors.push('messages: at least one');
  for (const [i, m] of (input.messages ?? []).entries()) {
    if (m.role !== 'user' && m.role !== 'assistant') errors.push(`messages[${i}].role: user or assistant`);
    if (i === 0 && m.role !== 'user') errors.push('messages[0]: the conversation starts with a user message');
    if (!Array.isArray(m.content) || m.content.length === 0)
      errors.push(`messages[${i}].content: at least one block`);
    for (const [j, block] of (m.content ?? []).entries()) {
      const where = `messages[${i}].content[${j}]`;
      const members = membersOf(block);
      if (members.length !== 1 || !(CONTENT_MEMBERS as readonly string[]).includes(members[0] ?? ''))
        errors.push(`${where}: exactly one of ${CONTENT_MEMBERS.join(', ')}`);
      if (
        'text' in block &&
        block.text !== undefined &&
        (typeof block.text !== 'string' || block.text === '')
      )
        errors.push(`${where}.text: a non-empty string`);
      if ('image' in block && block.image !== undefined) {
        const { format, source } = block.image;
        if (!IMAGE_FORMATS.includes(String(format)))
          errors.push(`${where}.image.format: ${IMAGE_FORMATS.join(', ')}`);
        const sources = source ? membersOf(source) : [];
        if (sources.length !== 1 || !['bytes', 's3Location'].includes(sources[0] ?? ''))
          errors.push(`${where}.image.source: exactly one of bytes, s3Location`);
        const bytes = source && 'bytes' in source ? source.bytes : undefined;
        if (sources[0] === 'bytes' && (!(bytes instanceof Uint8Array) || bytes.length === 0))
          errors.push(`${where}.image.source.bytes: the image's bytes (not base64 text)`);
        if (bytes instanceof Uint8Array && bytes.length > MAX_IMAGE_BYTES)
          errors.push(`${where}.image.source.bytes: at most 3.75 MB`);
      }
    }
  }
  for (const [i, block] of (input.system ?? []).entries()) {
    const members = membersOf(block);
    if (members.length !== 1 || !(SYSTEM_MEMBERS as readonly string[]).includes(members[0] ?? ''))
      errors.push(`system[${i}]: exactly one of ${SYSTEM_MEMBERS.join(', ')}`);
    if ('text' in block && (typeof block.text !== 'string' || block.text === ''))
      errors.push(`system[${i}].text: a non-empty string`);
  }
  const inference = input.inferenceConfig;
  if (inference) {
    if (
      inference.maxTokens !== undefined &&
      (!Number.isInteger(inference.maxTokens) || inference.maxTokens < 1)
    )
      errors.push('inferenceConfig.maxTokens: an integer ≥ 1');
    if (inference.temperature !== undefined && !(inference.temperature >= 0 && inference.temperature <= 1))
      errors.push('inferenceConfig.temperature: 0 to 1');
    if (inference.topP !== undefined && !(inference.topP >= 0 && inference.topP <= 1))
      errors.push('inferenceConfig.topP: 0 to 1');
    if (inference.stopSequences !== undefined && inference.stopSequences.length > 4)
      errors.push('inferenceConfig.stopSequences: at most 4');
  }
  const guardrail = input.guardrailConfig;
  if (guardrail) {
    if (!GUARDRAIL_ID.test(guardrail.guardrailIdentifier ?? ''))
      errors.push('guardrailConfig.guardrailIdentifier: a guardrail id or ARN');
    if (!GUARDRAIL_VERSION.test(guardrail.guardrailVersion ?? ''))
      errors.push('guardrailConfig.guardrailVersion: a version number or DRAFT');
  }
  return errors;
}

/** The documented answer: one assistant message, the stop reason, the usage and the latency. */
export function converseAnswer(
  text: string,
  opts: { inputTokens?: number; outputTokens?: number; stopReason?: string; usage?: boolean } = {},
): ConverseCommandOutput {
  const inputTokens = opts.inputTokens ?? 120;
  const outputTokens = opts.outputTokens ?? 40;
  return {
    $metadata: { httpStatusCode: 200 },
    output: { message: { role: 'assistant', content: [{ text }] } },
    stopReason: (opts.stopReason ?? 'end_turn') as ConverseCommandOutput['stopReason'],
    usage:
      opts.usage === false
        ? undefined
        : { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
    metrics: { latencyMs: 850 },
  };
}
