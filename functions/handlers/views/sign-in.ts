import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import { ceremony } from './ceremony.ts';
import { layout } from './layout.ts';

// Signing in and enrolling: no user name to type — the passkey says who it is.

export function signInPage(o: { message: string | null; next?: string | null }): SafeHtml {
  return layout({
    title: 'Sign in',
    frame: { signedIn: null },
    message: o.message,
    webauthn: true,
    body: html`<h1 class="heading">Sign in</h1>
<p class="lead">Sign in to your workspace with a passkey on this device, a phone nearby or a security key.</p>
${ceremony({
  kind: 'sign-in',
  options: `${CONSOLE_PATH}/sign-in/options`,
  // The page to return to rides on the answer's URL (checked again by the server).
  finish: o.next ? `${CONSOLE_PATH}/sign-in?next=${encodeURIComponent(o.next)}` : `${CONSOLE_PATH}/sign-in`,
  button: 'Sign in with a passkey',
})}
<h2 class="heading heading--s">No passkey yet?</h2>
<p>Ask an owner of your workspace to invite you: you get a link to register one. If you lost the device your passkey was on, ask the operator for a fresh link.</p>`,
  });
}

export function enrollPage(): SafeHtml {
  return layout({
    title: 'Register your passkey',
    frame: { signedIn: null },
    webauthn: true,
    body: html`<h1 class="heading">Register your passkey</h1>
<p class="lead">You were invited to a Herald workspace. Create a passkey to sign in from now on: your device asks for your fingerprint, face, PIN or security key.</p>
<p>This link works once, for 30 minutes after it was issued.</p>
${ceremony({
  kind: 'enroll',
  options: `${CONSOLE_PATH}/enroll/options`,
  finish: `${CONSOLE_PATH}/enroll`,
  button: 'Create a passkey',
})}`,
  });
}
