import { consolePage, frameOf } from '#handlers/support/console';
import { homePage } from '#handlers/views/home';
import { messageOf } from '#handlers/views/layout';
import { pageAnswer } from '#shared/console';

// The console's front page: where a signed-in person lands (and a signed-out one is sent to sign in).

export const { handler } = consolePage('consoleHome', {
  'GET /console': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const frame = await frameOf(signedIn);
      return pageAnswer(homePage({ frame, role: signedIn.user.role, message: messageOf(query) }));
    },
  },
});
