import { ActError } from '#core/people';
import { actorOf, consolePage, orgOf } from '#handlers/support/console';
import { itemAnswer } from '#handlers/support/inbox-item';
import { suggestReplyForPerson } from '#usecases/console-suggest';

// "Suggest a reply" on an inbox item's page: createGeneration's `reply` task for every member, the
// suggestion shown in the reply form, editable; nothing is sent until the person sends it. A
// function of its own, so the inbox's other pages do not load the generation engines.

/** A refused suggestion's page status (a model that could not answer is the server's side). */
const SUGGEST_STATUS: Partial<Record<ActError['kind'], number>> = {
  forbidden: 403,
  rate_limited: 429,
  invalid: 400,
  conflict: 503,
};

export const { handler } = consolePage('consoleSuggest', {
  'POST /console/inbox/{id}/suggest/reply': {
    who: 'person',
    run: async ({ signedIn, params, now, site, lambda }) => {
      const id = params.id ?? '';
      try {
        const suggested = await suggestReplyForPerson({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          id,
          now,
          lambda,
        });
        return itemAnswer(signedIn, site.origin, id, { suggested });
      } catch (err) {
        if (!(err instanceof ActError) || err.kind === 'not_found') throw err;
        return itemAnswer(signedIn, site.origin, id, {
          refused: err.message,
          status: SUGGEST_STATUS[err.kind] ?? 409,
        });
      }
    },
  },
});
