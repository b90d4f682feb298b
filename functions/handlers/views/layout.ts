import type { Role } from '#core/accounts';
import { type HtmlValue, html, type SafeHtml } from '#core/html';
import { INBOX_UNREAD_CAP } from '#core/inbox';
import type { SignedIn } from '#core/people';
import { CONSOLE_PATH } from '#core/vocabulary';
import { assetUrl } from '#shared/console';

// The frame of every console page: a skip link, the header (workspace, who is signed in and their
// role, their passkeys, sign-out), the navigation, a messages area saying what just happened, and
// the main landmark. Signed-out pages (sign-in, enrollment, errors) get the same frame without the
// person. On a phone the person and the navigation fold into a Menu (<details>: no script needed),
// so the page starts right under the brand; the wide header and the menu are both rendered, and
// the style sheet shows one of them.

/** Who is looking, and at which workspace. */
export interface Frame {
  signedIn: SignedIn | null;
  /** The workspace's name; absent on status pages, which read nothing more. */
  orgName?: string | undefined;
  /** Unread inbox items (at most INBOX_UNREAD_CAP + 1), by the navigation's Inbox; null or absent: no count. */
  inboxUnread?: number | null | undefined;
}

export type Section =
  | 'home'
  | 'channels'
  | 'posts'
  | 'approvals'
  | 'webhooks'
  | 'keys'
  | 'members'
  | 'settings'
  | 'audit'
  | 'passkeys'
  | 'inbox'
  | 'media';

const SECTIONS: ReadonlyArray<{
  id: Section;
  label: string;
  path: string;
  roles?: readonly Role[];
  /** The person's own, not the workspace's: by their name in the header rather than in the navigation. */
  personal?: boolean;
}> = [
  { id: 'home', label: 'Overview', path: CONSOLE_PATH },
  { id: 'channels', label: 'Channels', path: `${CONSOLE_PATH}/channels` },
  { id: 'posts', label: 'Posts', path: `${CONSOLE_PATH}/posts` },
  { id: 'approvals', label: 'Approvals', path: `${CONSOLE_PATH}/approvals` },
  { id: 'inbox', label: 'Inbox', path: `${CONSOLE_PATH}/inbox` },
  { id: 'media', label: 'Media', path: `${CONSOLE_PATH}/media` },
  { id: 'webhooks', label: 'Webhooks', path: `${CONSOLE_PATH}/webhooks` },
  { id: 'keys', label: 'API keys', path: `${CONSOLE_PATH}/keys` },
  { id: 'members', label: 'Members', path: `${CONSOLE_PATH}/members` },
  { id: 'settings', label: 'Settings', path: `${CONSOLE_PATH}/settings` },
  // Owners only: hidden from the others, and refused to them by the server anyway.
  { id: 'audit', label: 'Audit log', path: `${CONSOLE_PATH}/audit`, roles: ['owner'] },
  { id: 'passkeys', label: 'Your passkeys', path: `${CONSOLE_PATH}/passkeys`, personal: true },
];

/**
 * What the redirect after an act says (`?msg=<code>`): a fixed set of codes, so a link cannot make
 * the console say anything else.
 */
export const MESSAGES = {
  signed_out: 'You are signed out.',
  signed_out_everywhere: 'You are signed out on every device, this one too.',
  session_ended: 'Your session has ended. Sign in again to carry on.',
  enrolled: 'Your passkey is registered and you are signed in.',
  passkey_added: 'The passkey is added. You can sign in with it from now on.',
  passkey_removed: 'The passkey is removed. It can no longer sign you in.',
  key_revoked: 'The key is revoked: its next request will be refused.',
  role_changed: 'The role is changed.',
  member_removed: 'The member is removed, and signed out everywhere.',
  settings_saved: 'Settings saved. The API and the MCP server apply them from their next request.',
  post_approved: 'The post is approved: it publishes as it asked.',
  post_rejected: 'The post is rejected: it is back to draft and will not publish.',
  post_rescheduled: 'The post is rescheduled.',
  post_publishing: 'The post is publishing now.',
  post_deleted: 'The post is deleted.',
  post_edited: 'The post is saved with its new text.',
  post_unpublishing: 'The post is being taken down from its platforms: each channel shows its outcome below.',
  webhook_updated: 'The endpoint is saved. Deliveries from now on use it as it is now.',
  webhook_enabled: 'The endpoint is on again: its failures are cleared and new events are delivered to it.',
  webhook_deleted: 'The endpoint is deleted. Deliveries still pending to it stop.',
  webhook_test_delivered: 'The test event was delivered. Its attempt is at the top of the delivery log.',
  webhook_test_failed: 'The test event was not delivered. The delivery log says what the endpoint answered.',
  channel_connected: 'The channel is connected: posts to it are published.',
  channel_reconnected: 'The channel is reconnected: posts to it are published again.',
  channel_disconnected:
    'The channel is disconnected and its tokens erased. Its scheduled posts fail to publish to it until it is connected again.',
  inbox_read: 'Marked as read.',
  inbox_unread: 'Marked as unread.',
  inbox_archived: 'Archived: it stays out of the unread count, and Move back to the inbox brings it back.',
  inbox_reply_queued:
    'The reply is queued: it is published on the platform in a moment, and its stage shows below.',
} as const;
export type MessageCode = keyof typeof MESSAGES;

/** The message a `msg` code stands for; unknown codes say nothing. */
export function messageOf(query: URLSearchParams): string | null {
  const code = query.get('msg');
  return code !== null && Object.hasOwn(MESSAGES, code) ? MESSAGES[code as MessageCode] : null;
}

/** A path with a message code for the page it redirects to. */
export const withMessage = (path: string, code: MessageCode) => `${path}?msg=${code}`;

export interface PageOptions {
  title: string;
  frame: Frame;
  /** The navigation entry to mark as current. */
  section?: Section;
  /** What just happened (a `msg` code's text); shown in the messages area. */
  message?: string | null;
  /** Pages that run a passkey ceremony load the WebAuthn browser library. */
  webauthn?: boolean;
  body: HtmlValue;
}

export function layout({ title, frame, section, message, webauthn, body }: PageOptions): SafeHtml {
  const { signedIn, orgName } = frame;
  const place = orgName ? `${orgName} · Herald console` : 'Herald console';
  return html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} – ${place}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetUrl('console.css')}">
${webauthn && html`<script src="${assetUrl('webauthn.js')}" defer></script>`}
${
  signedIn &&
  html`<meta name="htmx-config" content="${HTMX_CONFIG}">
<script src="${assetUrl('htmx.js')}" defer></script>`
}
<script src="${assetUrl('console.js')}" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to main content</a>
<header class="header">
<div class="header__bar">
<a class="header__brand" href="${CONSOLE_PATH}">Herald console</a>
${signedIn && person(signedIn, orgName, section)}
${signedIn && menu(signedIn, orgName, section, frame.inboxUnread)}
</div>
${signedIn && navigation(signedIn.user.role, section, frame.inboxUnread)}
</header>
<main id="main" class="main" tabindex="-1">
<div class="messages" role="status">${message && html`<p class="notice">${message}</p>`}</div>
${body}
</main>
<footer class="footer"><p>Herald: your workspace's social publishing API.</p></footer>
</body>
</html>`;
}

const current = (id: Section, section: Section | undefined) =>
  id === section ? html` aria-current="page"` : '';

const sectionsOf = (role: Role) => SECTIONS.filter((s) => !s.roles || s.roles.includes(role));

const who = (signedIn: SignedIn, orgName: string | undefined, cls: string) =>
  html`<p class="${cls}">${orgName && html`<span class="header__org">${orgName}</span>`}
<span class="header__email">${signedIn.user.email}</span>
<span class="tag">${signedIn.user.role}</span></p>`;

const signOut = html`<form method="post" action="${CONSOLE_PATH}/sign-out" class="header__sign-out">
<button type="submit" class="button button--secondary">Sign out</button>
</form>`;

/** Wide screens: who is signed in, their own pages, sign-out. */
function person(signedIn: SignedIn, orgName: string | undefined, section: Section | undefined): SafeHtml {
  const own = sectionsOf(signedIn.user.role).filter((s) => s.personal);
  return html`<div class="header__person">
${who(signedIn, orgName, 'header__who')}
${own.map((s) => html`<a href="${s.path}"${current(s.id, section)}>${s.label}</a>`)}
${signOut}
</div>`;
}

/** Wide screens: the workspace's pages, in one row. */
function navigation(role: Role, section: Section | undefined, unread?: number | null): SafeHtml {
  const items = sectionsOf(role).filter((s) => !s.personal);
  return html`<nav class="nav" aria-label="Console">
<ul>${items.map((s) => html`<li><a href="${s.path}"${current(s.id, section)}>${s.label}${s.id === 'inbox' && unreadCount(unread)}</a></li>`)}</ul>
</nav>`;
}

/** Phones: the same, folded into one Menu. */
function menu(
  signedIn: SignedIn,
  orgName: string | undefined,
  section: Section | undefined,
  unread?: number | null,
): SafeHtml {
  const items = sectionsOf(signedIn.user.role);
  return html`<details class="menu">
<summary class="menu__button">Menu</summary>
<div class="menu__body">
${who(signedIn, orgName, 'header__who menu__who')}
<nav class="menu__nav" aria-label="Console">
<ul>${items.map((s) => html`<li><a href="${s.path}"${current(s.id, section)}>${s.label}${s.id === 'inbox' && unreadCount(unread)}</a></li>`)}</ul>
</nav>
${signOut}
</div>
</details>`;
}

/** The unread count by the Inbox entry ("99+" past the cap); nothing when none is unread or it is not read. */
function unreadCount(unread: number | null | undefined): SafeHtml | '' {
  if (!unread) return '';
  const shown = unread > INBOX_UNREAD_CAP ? `${INBOX_UNREAD_CAP}+` : String(unread);
  return html` <span class="count">${shown}<span class="visually-hidden"> unread</span></span>`;
}

/**
 * htmx under the console's CSP: no injected indicator styles (style-src 'self'), no eval, no
 * scripts from responses, requests to this origin only, and no page snapshots in localStorage
 * (pages that show a secret once must not be kept anywhere).
 */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  selfRequestsOnly: true,
  historyEnabled: false,
  historyCacheSize: 0,
});

/**
 * A region of a page that keeps itself current: every `seconds`, htmx GETs `url` (the page it is
 * on) and swaps in the region of the same id from the answer. Without script it is simply the
 * region as rendered; a reload shows the same.
 */
export function live(o: { id: string; url: string; seconds?: number; body: HtmlValue }): SafeHtml {
  return html`<div id="${o.id}" hx-get="${o.url}" hx-trigger="every ${o.seconds ?? 5}s" hx-select="#${o.id}" hx-swap="outerHTML">${o.body}</div>`;
}

/** A date for people: the ISO time, shown in UTC to the minute (the machine-readable value kept). */
export function when(iso: string | null | undefined, never = 'Never'): SafeHtml {
  if (!iso) return html`${never}`;
  const shown = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return html`<time datetime="${iso}">${shown}</time>`;
}
