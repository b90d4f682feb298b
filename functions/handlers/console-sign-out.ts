import { consolePage } from '#handlers/support/console';
import { withMessage } from '#handlers/views/layout';
import { clearedSessionCookie, redirectAnswer, SIGN_IN_PATH } from '#shared/console';
import { signOut } from '#usecases/console-sessions';

// Sign-out ends the session at once (its item is deleted), whatever state it was in; the browser
// forgets the cookie too. Anyone may post it: an expired session still clears its cookie.

export const { handler } = consolePage('consoleSignOut', {
  'POST /console/sign-out': {
    who: 'anyone',
    run: async ({ cookies, site, now }) => {
      await signOut(cookies[site.sessionCookie], now);
      return redirectAnswer(withMessage(SIGN_IN_PATH, 'signed_out'), {
        cookies: [clearedSessionCookie(site)],
      });
    },
  },
});
