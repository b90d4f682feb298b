import { canChangeSettings } from '#core/accounts';
import { ActError } from '#core/people';
import { actorOf, consolePage, orgOf } from '#handlers/support/console';
import { messageOf, withMessage } from '#handlers/views/layout';
import { SETTINGS_FIELDS, settingsPage } from '#handlers/views/settings';
import { pageAnswer, redirectAnswer } from '#shared/console';
import { getSettings, updateSettings } from '#usecases/settings';

// Workspace settings: everyone reads them, owners change them (the use case decides). The form
// sends the whole state (a check box left unticked turns its setting off) and the version it was
// read at, so a stale tab is refused instead of undoing a change made since.

export const { handler } = consolePage('consoleSettings', {
  'GET /console/settings': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const { org, settings, version } = await getSettings({
        orgId: orgOf(signedIn),
        actor: actorOf(signedIn),
      });
      const frame = { signedIn, orgName: org.name };
      const canChange = canChangeSettings(signedIn.user.role);
      return pageAnswer(settingsPage({ frame, settings, version, canChange, message: messageOf(query) }));
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
      // A missing or malformed version is stale by definition (NaN matches no version).
      const sent = Number(form.get('version') ?? Number.NaN);
      try {
        await updateSettings({ orgId: orgOf(signedIn), actor, patch, version: sent, now });
        return redirectAnswer(withMessage('/console/settings', 'settings_saved'));
      } catch (err) {
        if (!(err instanceof ActError && (err.kind === 'invalid' || err.kind === 'conflict'))) throw err;
        const { org, settings, version } = await getSettings({ orgId: orgOf(signedIn), actor });
        const frame = { signedIn, orgName: org.name };
        // A stale form: the settings as they are now, saying so; nothing was saved.
        if (err.kind === 'conflict')
          return pageAnswer(
            settingsPage({ frame, settings, version, canChange: true, message: err.message }),
            {
              status: 409,
            },
          );
        // A refused form is shown again as sent, with the reason by the landing origins.
        // It keeps the version it was read at: saved again, a change made since still refuses it.
        const errors = [{ field: SETTINGS_FIELDS.landingOrigins, message: err.message }];
        return pageAnswer(
          settingsPage({
            frame,
            settings: patch,
            version: Number.isSafeInteger(sent) ? sent : version,
            canChange: true,
            form: { settings: patch, landingText, errors },
          }),
          { status: 400 },
        );
      }
    },
  },
});
