import { ActError } from '#core/people';
import { actorOf, consolePage, orgOf } from '#handlers/support/console';
import { itemAnswer } from '#handlers/support/inbox-item';
import { mediaAnswer } from '#handlers/support/media-item';
import { suggestAltTextForPerson, suggestReplyForPerson } from '#usecases/console-suggest';

// The console's suggestions, createGeneration's tasks for every member: "Suggest a reply" on an
// inbox item's page (the suggestion in the reply form, editable; nothing is sent until the person
// sends it) and "Suggest alt text" on a ready image's page (shown to copy; nothing is saved). One
// function of their own, so the inbox's and the media library's pages do not load the engines.

/** A refused suggestion's page status (a model that could not answer is the server's side). */
const SUGGEST_STATUS: Partial<Record<ActError['kind'], number>> = {
  forbidden: 403,
  rate_limited: 429,
  invalid: 400,
  conflict: 503,
};

/** A refusal's message and status for the page shown again; not found (another workspace's id) stays the 404 page. */
function refusalOf(err: unknown): { refused: string; status: number } {
  if (!(err instanceof ActError) || err.kind === 'not_found') throw err;
  return { refused: err.message, status: SUGGEST_STATUS[err.kind] ?? 409 };
}

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
        return itemAnswer(signedIn, site.origin, id, refusalOf(err));
      }
    },
  },
  'POST /console/media/{id}/suggest/alt-text': {
    who: 'person',
    run: async ({ signedIn, params, now, lambda }) => {
      const id = params.id ?? '';
      try {
        const suggested = await suggestAltTextForPerson({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          id,
          now,
          lambda,
        });
        return mediaAnswer(signedIn, id, { suggested });
      } catch (err) {
        return mediaAnswer(signedIn, id, refusalOf(err));
      }
    },
  },
});
