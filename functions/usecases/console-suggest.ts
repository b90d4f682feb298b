import type { Context } from 'aws-lambda';
import { anyRole } from '#core/accounts';
import { isId } from '#core/ids';
import { ActError, type Actor } from '#core/people';
import { effectiveLimits } from '#core/plans';
import { authorizeInbox, NO_SUCH_ITEM, personal } from '#usecases/console-inbox';
import { createGeneration } from '#usecases/create-generation';

// The console's "Suggest a reply": a module (and a function) of its own, so the inbox's pages do
// not load the generation engines (BENCHMARKS.md, AI generation).

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
  lambda: Pick<Context, 'getRemainingTimeInMillis'>;
}): Promise<ReplySuggestion> {
  const { org } = await authorizeInbox(a.orgId, a.actor, anyRole, 'suggesting a reply');
  if (!isId('inbox', a.id)) throw new ActError(NO_SUCH_ITEM, 'not_found');
  const auth = {
    orgId: a.orgId,
    keyId: '',
    scopes: new Set<never>(),
    plan: org.plan,
    limits: effectiveLimits(org.plan, org.limits),
  };
  const generation = await personal(() =>
    // A person's act is not an API request: nothing to admit, nothing metered but the credits.
    createGeneration(auth, { task: 'reply', inbox_item_id: a.id }, a.now, a.lambda, async () => undefined),
  );
  return {
    bodies: generation.suggestions.flatMap((s) => ('body' in s ? [s.body] : [])),
    model: generation.model,
  };
}
