import { ActError } from '#core/people';
import { ceremonyIdOf, consolePage, fieldOf, frameOf } from '#handlers/support/console';
import { messageOf, withMessage } from '#handlers/views/layout';
import { passkeysPage, removePasskeyPage } from '#handlers/views/passkeys';
import {
  ceremonyCookie,
  clearedCeremonyCookie,
  clearedSessionCookie,
  jsonAnswer,
  pageAnswer,
  redirectAnswer,
  SIGN_IN_PATH,
} from '#shared/console';
import {
  beginAddPasskey,
  finishAddPasskey,
  listPasskeys,
  removePasskey,
  signOutEverywhere,
} from '#usecases/passkeys';

// A person's own passkeys: the list, another one added (options, then the browser's answer, both
// fetched as JSON), one removed (never the last: the use case refuses it), and every session of the
// person ended at once.

export const { handler } = consolePage('consolePasskeys', {
  'GET /console/passkeys': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const [frame, passkeys] = await Promise.all([frameOf(signedIn), listPasskeys(signedIn)]);
      const removing = query.get('remove');
      if (removing === null) return pageAnswer(passkeysPage({ frame, passkeys, message: messageOf(query) }));
      const passkey = passkeys.find((p) => p.id === removing);
      if (!passkey) throw new ActError('You have no such passkey.', 'not_found');
      return pageAnswer(removePasskeyPage({ frame, passkey }));
    },
  },
  'POST /console/passkeys/options': {
    who: 'person',
    body: 'json',
    run: async ({ signedIn, site, now }) => {
      const { ceremonyId, options } = await beginAddPasskey({ signedIn, rp: site.rp, now });
      return jsonAnswer({ options }, { cookies: [ceremonyCookie(site, ceremonyId)] });
    },
  },
  'POST /console/passkeys': {
    who: 'person',
    body: 'json',
    run: async ({ signedIn, json, cookies, site, now }) => {
      const name = fieldOf(json, 'name');
      await finishAddPasskey({
        signedIn,
        ceremonyId: ceremonyIdOf(cookies),
        response: fieldOf(json, 'response'),
        rp: site.rp,
        name: typeof name === 'string' && name.trim() ? name.trim() : undefined,
        now,
      });
      return jsonAnswer(
        { redirect: withMessage('/console/passkeys', 'passkey_added') },
        { cookies: [clearedCeremonyCookie(site)] },
      );
    },
  },
  'POST /console/passkeys/{id}/remove': {
    who: 'person',
    run: async ({ signedIn, params, now }) => {
      await removePasskey(signedIn, params.id ?? '', now);
      return redirectAnswer(withMessage('/console/passkeys', 'passkey_removed'));
    },
  },
  'POST /console/passkeys/sign-out-everywhere': {
    who: 'person',
    run: async ({ signedIn, site, now }) => {
      await signOutEverywhere(signedIn, now);
      return redirectAnswer(withMessage(SIGN_IN_PATH, 'signed_out_everywhere'), {
        cookies: [clearedSessionCookie(site)],
      });
    },
  },
});
