import { ceremonyIdOf, consolePage, fieldOf, signedInAnswer } from '#handlers/support/console';
import { messageOf } from '#handlers/views/layout';
import { signInPage } from '#handlers/views/sign-in';
import { ceremonyCookie, jsonAnswer, pageAnswer, returnPath } from '#shared/console';
import { beginSignIn, finishSignIn } from '#usecases/passkeys';

// Sign-in with a discoverable passkey: the page, its options (a ceremony, remembered in a cookie)
// and the browser's answer, which starts a session. Attempts are counted per source address by
// the use case and throttled per route by the gateway.

export const { handler } = consolePage('consoleSignIn', {
  'GET /console/sign-in': {
    who: 'anyone',
    run: async ({ query }) =>
      pageAnswer(signInPage({ message: messageOf(query), next: returnPath(query.get('next')) })),
  },
  'POST /console/sign-in/options': {
    who: 'anyone',
    body: 'json',
    run: async ({ site, sourceIp, now }) => {
      const { ceremonyId, options } = await beginSignIn({ rp: site.rp, source: sourceIp, now });
      return jsonAnswer({ options }, { cookies: [ceremonyCookie(site, ceremonyId)] });
    },
  },
  'POST /console/sign-in': {
    who: 'anyone',
    body: 'json',
    run: async ({ json, cookies, query, site, sourceIp, now }) => {
      const session = await finishSignIn({
        ceremonyId: ceremonyIdOf(cookies),
        response: fieldOf(json, 'response'),
        rp: site.rp,
        source: sourceIp,
        now,
      });
      return signedInAnswer(site, session, returnPath(query.get('next')) ?? '/console');
    },
  },
});
