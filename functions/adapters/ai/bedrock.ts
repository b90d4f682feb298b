import {
  BedrockRuntimeClient,
  type ContentBlock,
  ConverseCommand,
  type ConverseCommandInput,
  type ConverseCommandOutput,
} from '@aws-sdk/client-bedrock-runtime';
import { estimateTokens } from '#core/generation';
import { INFERENCE_PROFILE_PREFIX } from '#shared/ai-settings';
import { lean } from '#shared/sdk';
import {
  deadlineOf,
  isAbort,
  type ModelAnswer,
  ModelAnswerError,
  type ModelClient,
  ModelError,
  type ModelErrorKind,
  type ModelRequest,
} from './model-port.ts';

// Amazon Bedrock through the Converse API: one request shape for every model Bedrock serves (a
// foundation model id or an inference profile id), the token usage in the answer.

export interface BedrockOptions {
  /** A foundation model id (`anthropic.claude-…`) or an inference profile id (`us.…`, `eu.…`, `global.…`). */
  modelId: string;
  /** Where Bedrock is called; the function's own region when unset. */
  region?: string | undefined;
  guardrail?: { id: string; version: string };
  acceptsImages: boolean;
  timeoutMs: number;
  /** Tests hand in a mocked client. */
  client?: BedrockRuntimeClient;
}

/** Varied enough for a choice of suggestions, steady enough to keep to the asked JSON. */
export const TEMPERATURE = 0.4;

const KINDS: Record<string, ModelErrorKind> = {
  ThrottlingException: 'throttled',
  ServiceQuotaExceededException: 'throttled',
  AccessDeniedException: 'access_denied',
  ValidationException: 'invalid_request',
  ResourceNotFoundException: 'invalid_request',
  ModelTimeoutException: 'timeout',
  ServiceUnavailableException: 'unavailable',
  InternalServerException: 'unavailable',
  ModelNotReadyException: 'unavailable',
  ModelErrorException: 'unavailable',
};

/** The request Converse gets for one model call (exported for the contract tests). */
export function converseInput(opts: BedrockOptions, req: ModelRequest): ConverseCommandInput {
  const content: ContentBlock[] = [{ text: req.user }];
  if (req.image) content.push({ image: { format: req.image.format, source: { bytes: req.image.bytes } } });
  return {
    modelId: opts.modelId,
    system: [{ text: req.system }],
    messages: [{ role: 'user', content }],
    inferenceConfig: { maxTokens: req.maxTokens, temperature: TEMPERATURE },
    ...(opts.guardrail
      ? {
          guardrailConfig: {
            guardrailIdentifier: opts.guardrail.id,
            guardrailVersion: opts.guardrail.version,
          },
        }
      : {}),
  };
}

function modelErrorOf(err: unknown, opts: BedrockOptions, region: string): ModelError {
  if (isAbort(err))
    return new ModelError('timeout', `Amazon Bedrock did not answer within ${opts.timeoutMs} ms`);
  const name = err instanceof Error ? err.name : '';
  const kind = KINDS[name] ?? 'unavailable';
  const said = err instanceof Error ? err.message : String(err);
  if (kind === 'access_denied') {
    const where = INFERENCE_PROFILE_PREFIX.test(opts.modelId)
      ? `${region} and every region its inference profile routes to`
      : region;
    return new ModelError(
      kind,
      `Amazon Bedrock refused model ${opts.modelId}: enable access to it in the Amazon Bedrock console (Model access) in ${where}, then retry (${said})`,
    );
  }
  if (name === 'ResourceNotFoundException')
    return new ModelError(kind, `Amazon Bedrock has no model ${opts.modelId} in ${region} (${said})`);
  return new ModelError(kind, `Amazon Bedrock: ${name || 'network error'}: ${said}`);
}

export function bedrockClient(opts: BedrockOptions): ModelClient {
  // Retries stay inside the deadline: one more attempt after a throttle or a 5xx.
  const client =
    opts.client ??
    lean(new BedrockRuntimeClient({ maxAttempts: 2, ...(opts.region ? { region: opts.region } : {}) }));
  return {
    model: opts.modelId,
    acceptsImages: opts.acceptsImages,
    async converse(req: ModelRequest): Promise<ModelAnswer> {
      let res: ConverseCommandOutput;
      try {
        res = await client.send(new ConverseCommand(converseInput(opts, req)), {
          abortSignal: deadlineOf(opts.timeoutMs, req.signal),
        });
      } catch (err) {
        const region = opts.region ?? (await client.config.region().catch(() => "the function's region"));
        throw modelErrorOf(err, opts, region);
      }
      if (res.stopReason === 'guardrail_intervened')
        throw new ModelAnswerError(
          `the Amazon Bedrock guardrail ${opts.guardrail?.id ?? ''} blocked the prompt or the model's answer: nothing to suggest`,
        );
      if (res.stopReason === 'content_filtered')
        throw new ModelAnswerError(`model ${opts.modelId}'s content filter withheld its answer`);
      const message = res.output && 'message' in res.output ? res.output.message : undefined;
      const text = (message?.content ?? []).map((block) => block.text ?? '').join('');
      if (!text.trim()) throw new ModelAnswerError(`model ${opts.modelId} answered no text`);
      return {
        text,
        inputTokens: res.usage?.inputTokens ?? estimateTokens(req.system + req.user),
        outputTokens: res.usage?.outputTokens ?? estimateTokens(text),
      };
    },
  };
}
