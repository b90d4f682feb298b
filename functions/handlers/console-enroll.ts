import { ActError } from '#core/people';
import { ceremonyIdOf, consolePage, fieldOf, signedInAnswer } from '#handlers/support/console';
import { withMessage } from '#handlers/views/layout';
import { enrollPage } from '#handlers/views/sign-in';
import { ceremonyCookie, jsonAnswer, pageAnswer } from '#shared/console';
import { beginEnrollment, finishEnrollment } from '#usecases/passkeys';

// Enrollment: the page an enrollment link opens (its token stays in the fragment, out of every log,
// until the page's script sends it), the options for a new passkey, and the browser's answer,
// which spends the link, saves the passkey and starts a session.

export const { handler } = consolePage('consoleEnroll', {
  'GET /console/enroll': {
    who: 'anyone',
    run: async () => pageAnswer(enrollPage()),
  },
  'POST /console/enroll/options': {
    who: 'anyone',
    body: 'json',
    run: async ({ json, site, sourceIp, now }) => {
      const token = fieldOf(json, 'token');
      if (typeof token !== 'string' || token === '')
        throw new ActError(
          'This page needs the whole enrollment link, including the part after “#”. Open the link again.',
          'invalid',
        );
      const started = await beginEnrollment({ token, rp: site.rp, source: sourceIp, now });
      return jsonAnswer(
        { options: started.options, email: started.email, orgName: started.orgName },
        { cookies: [ceremonyCookie(site, started.ceremonyId)] },
      );
    },
  },
  'POST /console/enroll': {
    who: 'anyone',
    body: 'json',
    run: async ({ json, cookies, site, sourceIp, now }) => {
      const session = await finishEnrollment({
        ceremonyId: ceremonyIdOf(cookies),
        response: fieldOf(json, 'response'),
        rp: site.rp,
        source: sourceIp,
        now,
      });
      return signedInAnswer(site, session, withMessage('/console', 'enrolled'));
    },
  },
});
