import type { Context } from 'aws-lambda';
import { anyRole } from '#core/accounts';
import { isId } from '#core/ids';
import { ActError, type Actor } from '#core/people';
import { effectiveLimits } from '#core/plans';
import { authorizeInbox, NO_SUCH_ITEM, personal } from '#usecases/console-inbox';
import { NO_SUCH_MEDIA } from '#usecases/console-media';
import { createGeneration } from '#usecases/create-generation';
import { type Authorized, authorizeAct } from '#usecases/support/acts';

// The console's suggestions, "Suggest a reply" and "Suggest alt text": a module (and a function)
// of their own, so the inbox's and the media library's pages do not load the generation engines
// (BENCHMARKS.md, AI generation).

export interface AltTextSuggestion {
  alt: string;
  /** "rules": Herald's rule-based engine, not a language model. */
  model: string;
}

type Lambda = Pick<Context, 'getRemainingTimeInMillis'>;

/**
 * createGeneration as the API runs it (the plan's `ai` feature, the `ai_credits` meter) but for a
 * person: nothing to admit, nothing metered as an API request; refusals in a person's words.
 */
function generateFor(
  by: Authorized,
  orgId: string,
  input: Parameters<typeof createGeneration>[1],
  now: Date,
  lambda: Lambda,
) {
  const auth = {
    orgId,
    keyId: '',
    scopes: new Set<never>(),
    plan: by.org.plan,
    limits: effectiveLimits(by.org.plan, by.org.limits),
  };
  return personal(() => createGeneration(auth, input, now, lambda, async () => undefined));
}

export interface ReplySuggestion {
  bodies: string[];
  /** "rules": Herald's rule-based engine, not a language model. */
  model: string;
}

/**
 * Suggested replies to an item (every member), through createGeneration as the API runs it (the
 * plan's `ai` feature, the `ai_credits` meter) but not metered as an API request. Nothing is sent:
 * the suggestion only fills the reply form.
 */
export async function suggestReplyForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  now: Date;
  lambda: Lambda;
}): Promise<ReplySuggestion> {
  const by = await authorizeInbox(a.orgId, a.actor, anyRole, 'suggesting a reply');
  if (!isId('inbox', a.id)) throw new ActError(NO_SUCH_ITEM, 'not_found');
  const generation = await generateFor(by, a.orgId, { task: 'reply', inbox_item_id: a.id }, a.now, a.lambda);
  return {
    bodies: generation.suggestions.flatMap((s) => ('body' in s ? [s.body] : [])),
    model: generation.model,
  };
}

/**
 * Suggested alt text for a ready image (every member), through createGeneration's `alt_text` task
 * as suggestReplyForPerson does. Nothing is saved: alt text is set on a post's media when the post
 * is written. An asset that is not a ready image is refused (invalid), another workspace's is not
 * found.
 */
export async function suggestAltTextForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  now: Date;
  lambda: Lambda;
}): Promise<AltTextSuggestion> {
  const by = await authorizeAct(a.orgId, a.actor, anyRole, 'suggesting alt text');
  if (!isId('media', a.id)) throw new ActError(NO_SUCH_MEDIA, 'not_found');
  const generation = await generateFor(by, a.orgId, { task: 'alt_text', media_id: a.id }, a.now, a.lambda);
  const alt = generation.suggestions.flatMap((s) => ('alt' in s ? [s.alt] : []))[0];
  if (alt === undefined)
    throw new ActError('The engine suggested no alt text for this image; try again.', 'conflict');
  return { alt, model: generation.model };
}
