import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import { mediaAnswer } from '#handlers/support/media-item';
import { messageOf } from '#handlers/views/layout';
import { mediaPage } from '#handlers/views/media';
import { requireEnv } from '#shared/config';
import { pageAnswer } from '#shared/console';
import { listMediaForPerson } from '#usecases/console-media';

// The media library: the list and an asset's page, for every member. "Suggest alt text" is in the
// console's suggestion function (console-suggest.ts), with the engines.

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler } = consolePage('consoleMedia', {
  'GET /console/media': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const cursor = query.get('cursor') || undefined;
      const [frame, list] = await Promise.all([
        frameOf(signedIn),
        listMediaForPerson({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          cursor,
          cursorSecret: CURSOR_SECRET,
        }),
      ]);
      return pageAnswer(mediaPage({ frame, list, paged: cursor !== undefined, message: messageOf(query) }));
    },
  },
  'GET /console/media/{id}': {
    who: 'person',
    run: ({ signedIn, params, query }) =>
      mediaAnswer(signedIn, params.id ?? '', { message: messageOf(query) }),
  },
});
