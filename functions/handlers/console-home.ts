import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import { homePage } from '#handlers/views/home';
import { messageOf } from '#handlers/views/layout';
import { requireEnv } from '#shared/config';
import { pageAnswer } from '#shared/console';
import { getOverview } from '#usecases/overview';

// The console's front page: the workspace's state in one look (and a signed-out visitor is sent to
// sign in). Its "needs a person" region refreshes itself by GETting this same page.

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

export const { handler } = consolePage('consoleHome', {
  'GET /console': {
    who: 'person',
    run: async ({ signedIn, query, now }) => {
      const [frame, overview] = await Promise.all([
        frameOf(signedIn),
        getOverview({ orgId: orgOf(signedIn), actor: actorOf(signedIn), now, cursorSecret: CURSOR_SECRET }),
      ]);
      return pageAnswer(homePage({ frame, role: signedIn.user.role, overview, message: messageOf(query) }));
    },
  },
});
