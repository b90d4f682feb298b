import type { Context } from 'aws-lambda';
import { ModelAnswerError, type ModelClient, ModelError, modelClient } from '#adapters/ai/model-client';
import { refundCredits, reserveCredits, settleCredits } from '#adapters/ai-credits';
import { loadGenerationContext, readAnsweredPostText } from '#adapters/generation-reads';
import { checkIdempotencyKey, idempotent } from '#adapters/idempotency';
import { readMediaObject } from '#adapters/media-read';
import type { AuthContext } from '#core/accounts';
import { ApiError, type FieldError } from '#core/errors';
import {
  creditsOf,
  estimateTokens,
  finishSuggestions,
  GenerationAnswerError,
  type GenerationFacts,
  maxOutputTokens,
  overBy,
  parseAnswer,
  promptOf,
  reservationOf,
  type Suggestion,
} from '#core/generation';
import { rulesGenerate } from '#core/generation-rules';
import { newId } from '#core/ids';
import { billingPeriod, requireFeature } from '#core/plans';
import { CAPABILITIES, channelCapabilities } from '#core/platforms';
import type { CreateGenerationInput } from '#core/requests';
import { logger } from '#shared/logger';

// createGeneration (docs/ai.md): suggestions for posts, rewrites, threads, alt text and replies,
// each within the checks createPost (or replyToInboxItem) applies; nothing is published or kept
// but the credits used and the reservation record. Primary course: one read of what the task
// names; credits reserved (the task's most); the model (or the rules engine) answers; the
// suggestions fitted; the credits settled to the model's usage. Any failure refunds them.

/** Past the function's own timeout: a reservation still open then was left by a function that died. */
const RESERVATION_MARGIN_MS = 60_000;

/** How much of the answered post a reply's prompt carries (characters). */
export const ANSWERED_POST_CHARS = 2000;

const IMAGE_FORMATS: Record<string, 'jpeg' | 'png' | 'gif' | 'webp'> = {
  'image/jpeg': 'jpeg',
  'image/png': 'png',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

export interface Generation {
  id: string;
  task: CreateGenerationInput['task'];
  suggestions: Suggestion[];
  model: string;
  usage: { credits: number; input_tokens: number; output_tokens: number };
}

const invalid = (errors: FieldError[]) =>
  new ApiError('validation_failed', 'The generation request names something it cannot use.', { errors });

/** The facts the task needs, from one read; 400 / 404 for what is not this organization's to use. */
async function factsOf(orgId: string, input: CreateGenerationInput) {
  const channelIds =
    input.task === 'variants' || input.task === 'rewrite'
      ? input.channel_ids
      : input.task === 'thread'
        ? [input.channel_id]
        : [];
  const ctx = await loadGenerationContext(orgId, {
    channelIds,
    mediaId: input.task === 'alt_text' ? input.media_id : null,
    itemId: input.task === 'reply' ? input.inbox_item_id : null,
  });
  if (!ctx.org) throw new ApiError('invalid_api_key', 'The API key is not valid.');
  const errors: FieldError[] = [];
  channelIds.forEach((id, i) => {
    if (!ctx.channels.has(id))
      errors.push({
        pointer: input.task === 'thread' ? '/channel_id' : `/channel_ids/${i}`,
        code: 'unknown_channel',
        message: 'No connected channel with this id.',
      });
  });
  // A thread for a channel connected without its reply grant would be refused by createPost.
  const threadOn = input.task === 'thread' ? ctx.channels.get(input.channel_id) : undefined;
  if (
    threadOn &&
    CAPABILITIES[threadOn.platform].thread &&
    !channelCapabilities(threadOn.platform, threadOn.granted_scopes).thread
  )
    errors.push({
      pointer: '/channel_id',
      code: 'thread_unsupported',
      message: 'This channel was connected without the permission threads need: reconnect it to grant it.',
    });
  if (input.task === 'alt_text' && (ctx.media?.status !== 'ready' || ctx.media.kind !== 'image'))
    errors.push({
      pointer: '/media_id',
      code: ctx.media ? 'not_an_image' : 'unknown_media',
      message: ctx.media ? 'Alt text is written for a ready image only.' : 'No media asset with this id.',
    });
  if (errors.length) throw invalid(errors);
  if (input.task === 'reply' && !ctx.item)
    throw new ApiError('resource_not_found', 'No inbox item with this id.');
  const postText =
    input.task === 'reply' && ctx.item?.post_id
      ? await readAnsweredPostText(orgId, ctx.item.post_id, ctx.item.channel_id)
      : null;
  const facts: GenerationFacts = {
    channels: [...ctx.channels.values()].map((c) => ({ id: c.id, platform: c.platform, handle: c.handle })),
    image: ctx.media
      ? {
          id: ctx.media.id,
          content_type: ctx.media.content_type,
          width: ctx.media.width,
          height: ctx.media.height,
          size_bytes: ctx.media.size_bytes,
          filename: ctx.media.filename,
        }
      : null,
    item: ctx.item
      ? {
          id: ctx.item.id,
          channel_id: ctx.item.channel_id,
          platform: ctx.item.platform,
          kind: ctx.item.kind,
          author_handle: ctx.item.author.handle,
          text: ctx.item.text,
          // What the comment answers, its head only: enough to answer from, and a bounded prompt.
          post_text: postText === null ? null : postText.slice(0, ANSWERED_POST_CHARS),
        }
      : null,
  };
  return { facts, objectKey: ctx.media?.object_key ?? null };
}

/** The model's answer, asked once more (with how far over it was) when a suggestion did not fit. */
async function ask(
  client: ModelClient,
  input: CreateGenerationInput,
  facts: GenerationFacts,
  image: { bytes: Uint8Array; format: 'jpeg' | 'png' | 'gif' | 'webp' } | undefined,
) {
  const maxTokens = maxOutputTokens(input, facts);
  const call = (prompt: { system: string; user: string }) =>
    client.converse({ ...prompt, maxTokens, ...(image ? { image } : {}) });
  const first = await call(promptOf(input, facts));
  let suggestions = parseAnswer(input, facts, first.text);
  let inputTokens = first.inputTokens;
  let outputTokens = first.outputTokens;
  const platformOf = (id: string) => facts.channels.find((c) => c.id === id)?.platform;
  const over = suggestions.flatMap((s) => {
    if (!('channel_id' in s) || input.task === 'thread') return [];
    const p = platformOf(s.channel_id);
    const by = p ? overBy(p, s.body) : 0;
    return by > 0 ? [{ channel_id: s.channel_id, over: by }] : [];
  });
  if (over.length) {
    const again = await call(promptOf(input, facts, over));
    inputTokens += again.inputTokens;
    outputTokens += again.outputTokens;
    // A second answer Herald cannot read leaves the first one, fitted.
    try {
      suggestions = parseAnswer(input, facts, again.text);
    } catch (err) {
      if (!(err instanceof GenerationAnswerError)) throw err;
    }
  }
  return { suggestions, inputTokens, outputTokens };
}

function problemOf(err: unknown): ApiError | undefined {
  if (err instanceof ModelError)
    return new ApiError(
      'model_unavailable',
      err.kind === 'access_denied'
        ? 'The model refused access: enable access to it (in Amazon Bedrock, request model access for this account and region, or grant the inference profile) or configure another model; no credits were used.'
        : err.kind === 'throttled'
          ? 'The model is throttled; retry shortly. No credits were used.'
          : err.kind === 'timeout'
            ? 'The model did not answer in time; retry. No credits were used.'
            : 'The model could not answer; retry later. No credits were used.',
      err.kind === 'throttled' ? { headers: { 'retry-after': '5' } } : {},
    );
  if (err instanceof GenerationAnswerError || err instanceof ModelAnswerError)
    return new ApiError(
      'generation_failed',
      `The model answered something Herald cannot use (${err.message}); no credits were used.`,
    );
  return undefined;
}

export async function createGeneration(
  auth: AuthContext,
  input: CreateGenerationInput,
  now: Date,
  lambda: Pick<Context, 'getRemainingTimeInMillis'>,
  admitted: () => Promise<unknown>,
): Promise<Generation> {
  requireFeature(auth.plan, 'ai');
  // The read runs while the request is admitted; nothing is written before it is.
  const [{ facts, objectKey }] = await Promise.all([factsOf(auth.orgId, input), admitted()]);
  // Alt text from a model that cannot see the image would be invented: the rules engine describes
  // it from its file facts instead.
  const configured = modelClient();
  const format = facts.image ? IMAGE_FORMATS[facts.image.content_type] : undefined;
  const client = input.task === 'alt_text' && !(configured?.acceptsImages && format) ? null : configured;
  const prompt = promptOf(input, facts);
  const reserved = reservationOf(input, facts, `${prompt.system}\n${prompt.user}`);
  const period = billingPeriod(now.getTime());
  const id = newId('generation', now.getTime());
  const dueAt = new Date(now.getTime() + lambda.getRemainingTimeInMillis() + RESERVATION_MARGIN_MS);
  const limit = auth.limits.ai_credits;
  if (!(await reserveCredits(auth.orgId, period.id, id, reserved, limit, dueAt.toISOString(), now))) {
    // A 429: the pipeline takes the admitted request back out of api_requests.
    throw new ApiError(
      'quota_exhausted',
      `This task may need ${reserved} ai_credits and the organization has fewer left of its ${limit} for ${period.id} (used or reserved by generations running now); it resets at ${period.endsAt}.`,
      { headers: { 'retry-after': String(period.secondsLeft) } },
    );
  }
  try {
    let answer: { suggestions: Suggestion[]; inputTokens: number; outputTokens: number };
    if (client) {
      const image =
        input.task === 'alt_text' && objectKey && format
          ? { bytes: await readMediaObject(objectKey), format }
          : undefined;
      answer = await ask(client, input, facts, image);
    } else {
      const rules = rulesGenerate(input, facts);
      answer = {
        suggestions: rules.suggestions,
        inputTokens: estimateTokens(rules.inputText),
        outputTokens: estimateTokens(rules.outputText),
      };
    }
    const suggestions = finishSuggestions(input, facts, answer.suggestions);
    if (!suggestions.length) throw new GenerationAnswerError('no suggestion survived fitting');
    const credits = Math.min(reserved, creditsOf(answer.inputTokens, answer.outputTokens));
    if (!(await settleCredits(auth.orgId, period.id, id, reserved, credits)))
      logger.warn('generation settled after its reservation was refunded', {
        org_id: auth.orgId,
        generation_id: id,
      });
    return {
      id,
      task: input.task,
      suggestions,
      model: client?.model ?? 'rules',
      usage: { credits, input_tokens: answer.inputTokens, output_tokens: answer.outputTokens },
    };
  } catch (err) {
    await refundCredits(auth.orgId, period.id, id, reserved).catch((e: Error) =>
      // The sweeper refunds it once it is due.
      logger.error('generation: refund failed', { org_id: auth.orgId, generation_id: id, error: e }),
    );
    const problem = problemOf(err);
    if (problem) {
      logger.warn('generation failed', { org_id: auth.orgId, generation_id: id, error: err as Error });
      throw problem;
    }
    throw err;
  }
}

/** Recorded as JSON text, so a replay is byte for byte the first answer. */
const createGenerationIdempotent = idempotent<
  CreateGenerationInput,
  { auth: AuthContext; now: Date; lambda: Context; admitted: () => Promise<unknown> }
>('createGeneration', async (call) => {
  const c = call.context;
  return {
    status: 200,
    json: JSON.stringify(await createGeneration(c.auth, call.body, c.now, c.lambda, c.admitted)),
  };
});

/**
 * createGeneration as the API runs it: with an Idempotency-Key, once per key (a retry gets the
 * first answer byte for byte and uses no more credits); without one, every call generates.
 */
export async function createGenerationOnce(a: {
  auth: AuthContext;
  input: CreateGenerationInput;
  idempotencyKey: string | undefined;
  now: Date;
  lambda: Context;
  admitted: () => Promise<unknown>;
}): Promise<{ status: number; json: string; replayed?: boolean }> {
  const key = checkIdempotencyKey(a.idempotencyKey);
  if (key === undefined)
    return {
      status: 200,
      json: JSON.stringify(await createGeneration(a.auth, a.input, a.now, a.lambda, a.admitted)),
    };
  // Admitted before the idempotency record is written: a refused request writes nothing.
  await a.admitted();
  const context = { auth: a.auth, now: a.now, lambda: a.lambda, admitted: a.admitted };
  return createGenerationIdempotent({ org_id: a.auth.orgId, key, body: a.input, context }, a.lambda);
}
