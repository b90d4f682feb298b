import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { PasskeyView } from '#usecases/passkeys';
import { ceremony } from './ceremony.ts';
import { textInput } from './forms.ts';
import { type Frame, layout, when } from './layout.ts';
import { dataTable } from './table.ts';

// Your passkeys: the list, another one added (a ceremony), one removed after a confirmation.

const PASSKEYS_PATH = `${CONSOLE_PATH}/passkeys`;

export function passkeysPage(o: {
  frame: Frame;
  passkeys: readonly PasskeyView[];
  message?: string | null;
}): SafeHtml {
  return layout({
    title: 'Your passkeys',
    frame: o.frame,
    section: 'passkeys',
    message: o.message ?? null,
    webauthn: true,
    body: html`<h1 class="heading">Your passkeys</h1>
<p class="lead">Each of these signs you in. Add one on every device you use, so losing one does not lock you out.</p>
${dataTable({
  id: 'passkeys',
  caption: `Passkeys of ${o.frame.signedIn?.user.email ?? 'yours'}`,
  columns: [
    { label: 'Name' },
    { label: 'Added' },
    { label: 'Last used' },
    { label: 'Actions', hidden: true },
  ],
  rows: o.passkeys.map((p) => [
    p.name,
    when(p.created_at),
    when(p.last_used_at),
    o.passkeys.length > 1 &&
      html`<a href="${PASSKEYS_PATH}?remove=${encodeURIComponent(p.id)}">Remove<span class="visually-hidden"> ${p.name}</span></a>`,
  ]),
})}
<h2 class="heading heading--m">Add a passkey</h2>
${ceremony({
  kind: 'add-passkey',
  options: `${PASSKEYS_PATH}/options`,
  finish: PASSKEYS_PATH,
  button: 'Add a passkey',
  before: textInput({
    id: 'passkey-name',
    name: 'name',
    label: 'Name (optional)',
    hint: 'To tell it apart, e.g. “Work laptop” or “Phone”.',
    maxlength: 60,
  }),
})}
<h2 class="heading heading--m">Sign out everywhere</h2>
<p>Ends every session of yours, on every device and in this browser. Your passkeys stay: sign in again with any of them.</p>
<form method="post" action="${PASSKEYS_PATH}/sign-out-everywhere" class="actions">
<button type="submit" class="button button--secondary">Sign out everywhere</button>
</form>`,
  });
}

export function removePasskeyPage(o: { frame: Frame; passkey: PasskeyView }): SafeHtml {
  return layout({
    title: 'Remove this passkey?',
    frame: o.frame,
    section: 'passkeys',
    body: html`<h1 class="heading">Remove the passkey “${o.passkey.name}”?</h1>
<p class="lead">It will no longer sign you in, and a browser it signed you in on is signed out. Remove it from the device or password manager too.</p>
<form method="post" action="${PASSKEYS_PATH}/${encodeURIComponent(o.passkey.id)}/remove" class="actions">
<button type="submit" class="button button--warning">Remove passkey</button>
<a href="${PASSKEYS_PATH}" class="link">Cancel</a>
</form>`,
  });
}
