import { kmsDecrypt } from '#adapters/kms-decrypt';
import { estimateTokens } from '#core/generation';
import { OPENAI_KEY_CONTEXT } from '#shared/ai-settings';
import {
  deadlineOf,
  isAbort,
  type ModelAnswer,
  ModelAnswerError,
  type ModelClient,
  ModelError,
  type ModelRequest,
} from './model-port.ts';

export { OPENAI_KEY_CONTEXT };

// Any OpenAI-compatible chat endpoint (a hosted API, or Ollama, vLLM, llama.cpp's server in the
// operator's own network): POST {base}/chat/completions. The base URL is the operator's setting,
// never a caller's, so it is called as given; the deadline bounds it.

export interface OpenAiCompatibleOptions {
  /** e.g. https://api.example.com/v1, http://127.0.0.1:11434/v1 (Ollama). */
  baseUrl: string;
  model: string;
  /** The bearer key: as given (local), or KMS ciphertext (base64) opened once per container; none for a keyless server. */
  key?: { plain: string } | { ciphertext: string } | undefined;
  acceptsImages: boolean;
  timeoutMs: number;
  /** Opens the ciphertext (KMS Decrypt under the key's context); tests hand in their own. */
  decrypt?: (ciphertextBase64: string, context: Record<string, string>) => Promise<Uint8Array>;
}

/** As Bedrock's: varied suggestions that still keep to the asked JSON. */
const TEMPERATURE = 0.4;

interface ChatCompletion {
  choices?: Array<{ message?: { content?: unknown }; finish_reason?: string }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
}

function keyOf(opts: OpenAiCompatibleOptions): () => Promise<string | undefined> {
  const key = opts.key;
  if (!key) return async () => undefined;
  if ('plain' in key) return async () => key.plain;
  let opened: Promise<string> | undefined;
  return () => {
    // Once per container; a failed open is tried again on the next call.
    opened ??= (async () => {
      const plaintext = await (opts.decrypt ?? kmsDecrypt)(key.ciphertext, { ...OPENAI_KEY_CONTEXT });
      return Buffer.from(plaintext).toString('utf8').trim();
    })().catch((err: unknown) => {
      opened = undefined;
      throw new ModelError(
        'access_denied',
        `the OpenAI-compatible endpoint's key could not be opened with KMS: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    return opened;
  };
}

/** The request body (exported for the tests). */
export function chatBody(opts: Pick<OpenAiCompatibleOptions, 'model'>, req: ModelRequest): unknown {
  const user = req.image
    ? [
        { type: 'text', text: req.user },
        {
          type: 'image_url',
          image_url: {
            url: `data:image/${req.image.format};base64,${Buffer.from(req.image.bytes).toString('base64')}`,
          },
        },
      ]
    : req.user;
  return {
    model: opts.model,
    messages: [
      { role: 'system', content: req.system },
      { role: 'user', content: user },
    ],
    max_tokens: req.maxTokens,
    temperature: TEMPERATURE,
  };
}

function statusError(status: number, detail: string): ModelError {
  const said = detail ? `: ${detail.slice(0, 300)}` : '';
  if (status === 429) return new ModelError('throttled', `the model endpoint is throttling (429)${said}`);
  if (status === 401 || status === 403)
    return new ModelError(
      'access_denied',
      `the model endpoint refused the key (${status}): check the endpoint's key and that it may use the model${said}`,
    );
  if (status >= 400 && status < 500)
    return new ModelError('invalid_request', `the model endpoint refused the request (${status})${said}`);
  return new ModelError('unavailable', `the model endpoint failed (${status})${said}`);
}

export function openAiCompatibleClient(opts: OpenAiCompatibleOptions): ModelClient {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const key = keyOf(opts);
  return {
    model: opts.model,
    acceptsImages: opts.acceptsImages,
    async converse(req: ModelRequest): Promise<ModelAnswer> {
      const bearer = await key();
      const signal = deadlineOf(opts.timeoutMs, req.signal);
      let body: ChatCompletion;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
          },
          body: JSON.stringify(chatBody(opts, req)),
          signal,
          redirect: 'error',
        });
        if (!res.ok) throw statusError(res.status, await res.text().catch(() => ''));
        body = (await res.json().catch(() => {
          throw new ModelError('unavailable', 'the model endpoint answered something that is not JSON');
        })) as ChatCompletion;
      } catch (err) {
        if (err instanceof ModelError) throw err;
        if (isAbort(err) || signal.aborted)
          throw new ModelError('timeout', `the model endpoint did not answer within ${opts.timeoutMs} ms`);
        const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : '';
        throw new ModelError(
          'unavailable',
          `the model endpoint could not be reached: ${err instanceof Error ? err.message : String(err)}${cause}`,
        );
      }
      const choice = body.choices?.[0];
      if (choice?.finish_reason === 'content_filter')
        throw new ModelAnswerError(`model ${opts.model}'s content filter withheld its answer`);
      const text = typeof choice?.message?.content === 'string' ? choice.message.content : '';
      if (!text.trim()) throw new ModelAnswerError(`model ${opts.model} answered no text`);
      return {
        text,
        inputTokens: body.usage?.prompt_tokens ?? estimateTokens(req.system + req.user),
        outputTokens: body.usage?.completion_tokens ?? estimateTokens(text),
      };
    },
  };
}
