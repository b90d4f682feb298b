import { canChangeSettings } from '#core/accounts';
import { ActError } from '#core/people';
import { actorOf, consolePage, orgOf } from '#handlers/support/console';
import { messageOf, withMessage } from '#handlers/views/layout';
import { SETTINGS_FIELDS, settingsPage } from '#handlers/views/settings';
import { pageAnswer, redirectAnswer } from '#shared/console';
import { getSettings, updateSettings } from '#usecases/settings';

// Workspace settings: everyone reads them, owners change them (the use case decides). The form
// sends the whole state: a check box left unticked turns its setting off.

export const { handler } = consolePage('consoleSettings', {
  'GET /console/settings': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const { org, settings } = await getSettings({ orgId: orgOf(signedIn), actor: actorOf(signedIn) });
      const frame = { signedIn, orgName: org.name };
      const canChange = canChangeSettings(signedIn.user.role);
      return pageAnswer(settingsPage({ frame, settings, canChange, message: messageOf(query) }));
    },
  },
  'POST /console/settings': {
    who: 'person',
    run: async ({ signedIn, form, now }) => {
      const ticked = form.getAll('settings');
      const landingText = form.get('landing_origins') ?? '';
      const patch = {
        dangerous_ops: ticked.includes('dangerous_ops'),
        approval_required: ticked.includes('approval_required'),
        landing_origins: landingText
          .split(/\r?\n/)
          .map((line) => line.trim())
          .filter(Boolean),
      };
      const actor = actorOf(signedIn);
      try {
        await updateSettings({ orgId: orgOf(signedIn), actor, patch, now });
        return redirectAnswer(withMessage('/console/settings', 'settings_saved'));
      } catch (err) {
        // A refused form is shown again as sent, with the reason by the landing origins.
        if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
        const { org } = await getSettings({ orgId: orgOf(signedIn), actor });
        const errors = [{ field: SETTINGS_FIELDS.landingOrigins, message: err.message }];
        const frame = { signedIn, orgName: org.name };
        return pageAnswer(
          settingsPage({
            frame,
            settings: patch,
            canChange: true,
            form: { settings: patch, landingText, errors },
          }),
          { status: 400 },
        );
      }
    },
  },
});
