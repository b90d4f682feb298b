import { html, type SafeHtml } from '#core/html';

// The block that runs a passkey ceremony (console.js): its options and answer endpoints, a button
// that appears once the script knows the browser can use passkeys, and live regions for progress
// and errors. Nothing here works without script; the noscript text says so.

export type CeremonyKind = 'sign-in' | 'enroll' | 'add-passkey';

export function ceremony(o: {
  kind: CeremonyKind;
  /** POST here for the options (JSON). */
  options: string;
  /** POST the browser's answer here (JSON); it answers `{redirect}`. */
  finish: string;
  button: string;
  /** A field whose value is sent with the answer (the new passkey's name). */
  before?: SafeHtml;
}): SafeHtml {
  return html`<div class="ceremony" data-ceremony="${o.kind}" data-options="${o.options}" data-finish="${o.finish}">
${o.before}
<p class="ceremony__unsupported inset" hidden>This browser cannot use passkeys. Use an up-to-date browser, on a device with a screen lock or a security key.</p>
<button type="button" class="button" data-ceremony-start hidden>${o.button}</button>
<p class="ceremony__status" data-ceremony-status role="status"></p>
<div class="error-summary" data-ceremony-error role="alert" tabindex="-1" hidden>
<h2 class="error-summary__title">There is a problem</h2>
<p data-ceremony-error-text></p>
</div>
<noscript><p class="inset">Passkeys need JavaScript: allow it for this site.</p></noscript>
</div>`;
}
