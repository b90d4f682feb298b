import { createHash } from 'node:crypto';
import { CONNECTION_FAILURES } from '#core/connections';
import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import type {
  ChannelsOverview,
  ChannelView,
  ConnectField,
  ConnectForm,
  ConnectionView,
  DisconnectPreview,
  ListedChannel,
} from '#usecases/console-channels';
import { choices, errorSummary, type FieldError, textInput } from './forms.ts';
import { platformName } from './home.ts';
import { type Frame, layout, live, when } from './layout.ts';
import { dataTable } from './table.ts';

// Channels: the list (avatar, handle, platform, status, followers, last sync, last error), the
// connect forms (OAuth platforms, Mastodon's server, Bluesky's app password), a connection session
// from the platform's consent to its outcome (and the account choice), the reconnect form of the
// platforms that need one, and the confirmation before a disconnect.

export const CHANNELS_PATH = `${CONSOLE_PATH}/channels`;
const connectionPath = (id: string) => `${CHANNELS_PATH}/connections/${encodeURIComponent(id)}`;
const actPath = (id: string, act: 'reconnect' | 'disconnect') =>
  `${CHANNELS_PATH}/${encodeURIComponent(id)}/${act}`;

/** The connect forms' field ids (the error summary links to them). */
export const CONNECT_FIELDS: Record<ConnectField, string> = {
  platform: 'connect-platform',
  instance: 'mastodon-instance',
  identifier: 'bluesky-identifier',
  app_password: 'bluesky-app-password',
  service: 'bluesky-service',
  account: 'account',
};

export interface ConnectState {
  form: ConnectForm;
  errors: readonly FieldError[];
}

const STATUS_TAGS: Record<ChannelView['status'], SafeHtml> = {
  live: html`<span class="tag tag--green">Live</span>`,
  reauth_required: html`<span class="tag tag--yellow">Needs reconnecting</span>`,
  error: html`<span class="tag tag--red">Error</span>`,
  disconnected: html`<span class="tag tag--grey">Disconnected</span>`,
};

const number = (n: number) => n.toLocaleString('en-GB');

/**
 * A channel's avatar. The console's CSP loads images from its own origin only, so a platform's
 * avatar URL (another origin) is never requested: the channel's initials, drawn as an inline SVG
 * (a data: URL), stand in. An avatar served from the console's own origin is shown as it is.
 */
export function avatar(c: Pick<ChannelView, 'handle' | 'avatar_url'>, origin: string): SafeHtml {
  const alt = `Avatar of ${c.handle}`;
  if (c.avatar_url?.startsWith(`${origin}/`))
    return html`<img class="avatar" src="${c.avatar_url}" alt="${alt}" width="32" height="32">`;
  const letters = (c.handle.replace(/[^A-Za-z0-9]/g, '').slice(0, 2) || '?').toUpperCase();
  const hue = createHash('sha256').update(c.handle).digest()[0] ?? 0;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32" viewBox="0 0 32 32"><rect width="32" height="32" rx="16" fill="hsl(${Math.round((hue / 255) * 360)},45%,32%)"/><text x="16" y="21" text-anchor="middle" font-family="Arial,sans-serif" font-size="13" font-weight="700" fill="#fff">${letters}</text></svg>`;
  return html`<img class="avatar" src="data:image/svg+xml,${encodeURIComponent(svg)}" alt="${alt}" width="32" height="32">`;
}

export function channelsPage(o: {
  frame: Frame;
  origin: string;
  overview: ChannelsOverview;
  canManage: boolean;
  message?: string | null;
  connect?: ConnectState;
}): SafeHtml {
  const state = o.connect ?? { form: { platform: '' }, errors: [] };
  return layout({
    title: state.errors.length ? 'Error: Channels' : 'Channels',
    frame: o.frame,
    section: 'channels',
    message: o.message ?? null,
    body: html`${errorSummary(state.errors)}
<h1 class="heading">Channels</h1>
<p class="lead">The social accounts this workspace publishes to. A channel that needs reconnecting publishes nothing until an owner or admin signs in to the platform again.</p>
${live({ id: 'channel-list', url: CHANNELS_PATH, seconds: 10, body: channelList(o.overview.channels, o.canManage, o.origin) })}
${o.canManage ? connectForms(o.overview, state) : html`<p class="inset">Owners and admins connect, reconnect and disconnect channels.</p>`}`,
  });
}

function channelList(channels: readonly ListedChannel[], canManage: boolean, origin: string): SafeHtml {
  if (!channels.length) return html`<p>No channels yet.</p>`;
  return dataTable({
    id: 'channels',
    caption: 'Channels of this workspace',
    columns: [
      { label: 'Channel' },
      { label: 'Platform' },
      { label: 'Status' },
      { label: 'Can publish' },
      { label: 'Followers' },
      { label: 'Last sync' },
      { label: 'Last error' },
      ...(canManage ? [{ label: 'Actions', hidden: true }] : []),
    ],
    rows: channels.map((c) => [
      html`<span class="channel" id="channel-${c.id}">${avatar(c, origin)} <span>${c.handle}</span></span>`,
      platformName(c.platform),
      STATUS_TAGS[c.status],
      capabilityList(c),
      number(c.followers),
      when(c.last_sync_at),
      c.last_error ?? html`<span class="muted">None</span>`,
      ...(canManage ? [actions(c)] : []),
    ]),
  });
}

const PARTS = [
  ['thread', 'Threads'],
  ['first_comment', 'First comments'],
  ['unpublish', 'Unpublishing'],
] as const;

/**
 * What Herald does on the channel beyond one post, and for a part its grant lacks what to do:
 * reconnect (the person consents to the missing grant).
 */
function capabilityList(c: ListedChannel): SafeHtml {
  const caps = c.capabilities;
  const items: SafeHtml[] = [html`<li>Posts</li>`];
  for (const [part, label] of PARTS) if (caps[part]) items.push(html`<li>${label}</li>`);
  for (const part of ['thread', 'first_comment'] as const) {
    const scope = caps.missing[part];
    if (!scope) continue;
    const label = part === 'thread' ? 'Threads' : 'First comments';
    items.push(
      html`<li><span class="tag tag--yellow">Reconnect</span> ${label}: needs the grant <code>${scope}</code>, which this channel was connected without.</li>`,
    );
  }
  return html`<ul class="plain">${items}</ul>`;
}

function actions(c: ChannelView): SafeHtml {
  const name = html`<span class="visually-hidden"> ${c.handle} (${platformName(c.platform)})</span>`;
  // Bluesky needs a new app password and Mastodon its server: they reconnect through a form.
  const reconnect =
    c.status === 'live'
      ? null
      : c.platform === 'bluesky' || c.platform === 'mastodon'
        ? html`<a href="${CHANNELS_PATH}?reconnect=${encodeURIComponent(c.id)}">Reconnect${name}</a>`
        : html`<form method="post" action="${actPath(c.id, 'reconnect')}" class="inline-form"><button type="submit" class="button button--secondary button--small">Reconnect${name}</button></form>`;
  const disconnect =
    c.status === 'disconnected'
      ? null
      : html`<a href="${CHANNELS_PATH}?disconnect=${encodeURIComponent(c.id)}">Disconnect${name}</a>`;
  return html`<ul class="plain">${[reconnect, disconnect].map((a) => a && html`<li>${a}</li>`)}</ul>`;
}

function connectForms(overview: ChannelsOverview, state: ConnectState): SafeHtml {
  const ready = overview.oauth.filter((p) => p.ready);
  const missing = overview.oauth.filter((p) => !p.ready);
  const errors = state.errors;
  const chosen = state.form.platform;
  return html`<h2 class="heading heading--m" id="connect" tabindex="-1">Connect an account</h2>
<p>You sign in at the platform itself and allow Herald to publish; Herald never sees your password there.</p>
<h3 class="heading heading--s">X, LinkedIn, Facebook and the other platforms</h3>
${
  ready.length
    ? html`<form method="post" action="${CHANNELS_PATH}" novalidate>
${choices({
  kind: 'radio',
  idPrefix: CONNECT_FIELDS.platform,
  name: 'platform',
  legend: 'Platform',
  hint: 'You go to the platform’s own page to allow Herald, then come back here.',
  items: ready.map((p) => ({
    value: p.platform,
    label: platformName(p.platform),
    checked: chosen === p.platform,
  })),
  errors,
  inline: true,
})}
<button type="submit" class="button">Continue to the platform</button>
</form>`
    : html``
}
${
  missing.length
    ? html`<p class="inset">Not set up by your operator: ${missing.map((p, i) => html`${i > 0 && ', '}${platformName(p.platform)}`)}. Your operator registers each platform’s app once (<code>herald platform-app set</code>); until then these cannot be connected.</p>`
    : html``
}
${mastodonForm(chosen === 'mastodon' ? state : { form: { platform: 'mastodon' }, errors: [] })}
${blueskyForm(chosen === 'bluesky' ? state : { form: { platform: 'bluesky' }, errors: [] })}`;
}

/**
 * The id a field's error links to. A radio group's error is keyed by its first radio: the platform
 * group's first ready platform (none ready: the heading above the forms), the first account.
 */
export function fieldId(field: ConnectField, first: string | undefined): string {
  if (field !== 'platform' && field !== 'account') return CONNECT_FIELDS[field];
  return first ? `${CONNECT_FIELDS[field]}-${first.replace(/[^a-z0-9]+/gi, '-')}` : 'connect';
}

/** A connect (or reconnect) form of a platform whose account is named here, not at an OAuth page. */
function connectForm(
  platform: 'mastodon' | 'bluesky',
  channel: ChannelView | undefined,
  labels: { heading: string; connect: string; reconnect: string },
  fields: SafeHtml,
): SafeHtml {
  return html`<h3 class="heading heading--s">${channel ? `Reconnect ${channel.handle}` : labels.heading}</h3>
<form method="post" action="${channel ? actPath(channel.id, 'reconnect') : CHANNELS_PATH}" novalidate>
<input type="hidden" name="platform" value="${platform}">
${fields}
<button type="submit" class="button">${channel ? labels.reconnect : labels.connect}</button>
</form>`;
}

function mastodonForm(state: ConnectState, channel?: ChannelView): SafeHtml {
  const labels = { heading: 'Mastodon', connect: 'Continue to Mastodon', reconnect: 'Reconnect on Mastodon' };
  return connectForm(
    'mastodon',
    channel,
    labels,
    textInput({
      id: CONNECT_FIELDS.instance,
      name: 'instance',
      label: 'Mastodon server',
      hint: 'The address of the server the account is on, e.g. https://mastodon.social.',
      value: state.form.instance,
      maxlength: 2048,
      errors: state.errors,
    }),
  );
}

function blueskyForm(state: ConnectState, channel?: ChannelView): SafeHtml {
  const labels = { heading: 'Bluesky', connect: 'Connect Bluesky', reconnect: 'Reconnect Bluesky' };
  return connectForm(
    'bluesky',
    channel,
    labels,
    html`${textInput({
      id: CONNECT_FIELDS.identifier,
      name: 'identifier',
      label: 'Handle',
      hint: 'e.g. acme.bsky.social',
      value: state.form.identifier ?? (channel ? channel.handle.replace(/^@/, '') : undefined),
      maxlength: 253,
      errors: state.errors,
    })}
${textInput({
  id: CONNECT_FIELDS.app_password,
  name: 'app_password',
  label: 'App password',
  hint: 'Create one in Bluesky under Settings → Privacy and security → App passwords. It is checked with Bluesky now and stored encrypted.',
  type: 'password',
  maxlength: 256,
  errors: state.errors,
})}
${textInput({
  id: CONNECT_FIELDS.service,
  name: 'service',
  label: 'Server (optional)',
  hint: 'Only for an account on its own server: its address, e.g. https://pds.example.com. Empty: bsky.social.',
  value: state.form.service,
  maxlength: 2048,
  errors: state.errors,
})}`,
  );
}

/** The reconnect form of a Bluesky or Mastodon channel (a new app password, or its server again). */
export function reconnectPage(o: { frame: Frame; channel: ChannelView; connect?: ConnectState }): SafeHtml {
  const state = o.connect ?? { form: { platform: o.channel.platform }, errors: [] };
  const form =
    o.channel.platform === 'bluesky' ? blueskyForm(state, o.channel) : mastodonForm(state, o.channel);
  return layout({
    title: state.errors.length ? 'Error: Reconnect a channel' : 'Reconnect a channel',
    frame: o.frame,
    section: 'channels',
    body: html`${errorSummary(state.errors)}
<h1 class="heading">Reconnect ${o.channel.handle}</h1>
<p class="lead">The channel keeps its id, its posts and its history. Sign in as the same ${platformName(o.channel.platform)} account: another account is refused.</p>
${form}
<p><a href="${CHANNELS_PATH}">Back to channels</a></p>`,
  });
}

export function disconnectPage(o: { frame: Frame; preview: DisconnectPreview }): SafeHtml {
  const { channel, scheduled } = o.preview;
  const count = `${scheduled.more ? 'At least ' : ''}${scheduled.count} scheduled post${scheduled.count === 1 ? '' : 's'}`;
  return layout({
    title: 'Disconnect this channel?',
    frame: o.frame,
    section: 'channels',
    body: html`<h1 class="heading">Disconnect ${channel.handle} (${platformName(channel.platform)})?</h1>
<p class="lead">Herald gives its access back to ${platformName(channel.platform)} and erases the channel’s tokens. The channel stays listed as disconnected and no longer counts against your plan.</p>
<div class="panel">
<h2 class="heading heading--s">What happens to its posts</h2>
<p><strong>${count}</strong> ${scheduled.count === 1 && !scheduled.more ? 'publishes' : 'publish'} to this channel. They keep their schedule, but their delivery to this channel fails until it is connected again; new posts cannot choose it.</p>
${scheduled.more && html`<p class="muted">Counted among the workspace’s next scheduled posts; there are more.</p>`}
</div>
<p>Reconnecting the same account later brings the channel back with the same id.</p>
<form method="post" action="${actPath(channel.id, 'disconnect')}" class="actions">
<button type="submit" class="button button--warning">Disconnect channel</button>
<a href="${CHANNELS_PATH}" class="link">Cancel</a>
</form>`,
  });
}

/** Words for a session that failed, by its code; the platform's own words follow. */
const FAILED_TITLES: Partial<Record<keyof typeof CONNECTION_FAILURES, string>> = {
  consent_denied: 'You did not allow Herald',
  account_mismatch: 'That is another account',
  channel_limit: 'Your plan has no room for another channel',
};

export function connectionPage(o: {
  frame: Frame;
  session: ConnectionView;
  canManage: boolean;
  errors?: readonly FieldError[];
}): SafeHtml {
  const s = o.session;
  const name = platformName(s.platform);
  const page = (title: string, body: SafeHtml) =>
    layout({
      title: o.errors?.length ? `Error: ${title}` : title,
      frame: o.frame,
      section: 'channels',
      body: html`${errorSummary(o.errors ?? [])}${body}
<p><a href="${CHANNELS_PATH}">Back to channels</a></p>`,
    });
  switch (s.status) {
    case 'awaiting_authorization':
      return page(
        `Continue to ${name}`,
        html`<h1 class="heading">Continue to ${name}</h1>
<p class="lead">${name} asks you to sign in and allow Herald to publish. Afterwards ${name} sends you back here.</p>
${s.authorize_url && html`<p><a class="button" href="${s.authorize_url}">Continue to ${name}</a></p>`}
<p class="muted">This link works until ${when(s.expires_at)}.</p>`,
      );
    case 'selecting_account':
      return page(
        'Choose the account to connect',
        html`<h1 class="heading">Choose the account to connect</h1>
<p class="lead">Your ${name} grant covers ${s.accounts?.length ?? 0} accounts. Herald connects the one you choose as a channel.</p>
${
  o.canManage
    ? html`<form method="post" action="${connectionPath(s.id)}" novalidate>
${choices({
  kind: 'radio',
  idPrefix: CONNECT_FIELDS.account,
  name: 'account_id',
  legend: 'Account',
  items: (s.accounts ?? []).map((a) => ({
    value: a.id,
    label: a.name && a.name !== a.handle ? `${a.name} (${a.handle})` : a.handle,
    hint: `${number(a.followers)} followers`,
  })),
  errors: o.errors ?? [],
})}
<button type="submit" class="button">Connect this account</button>
</form>
<p class="muted">Choose before ${when(s.expires_at)}; after that, start again.</p>`
    : html`<p class="inset">Owners and admins choose the account.</p>`
}`,
      );
    case 'connected': {
      const c = s.channel as ChannelView | null;
      return page(
        `${name} is connected`,
        html`<h1 class="heading">${name} is connected</h1>
<p class="lead">${c ? html`<a href="${CHANNELS_PATH}#channel-${c.id}">${c.handle}</a> is live: posts to it are published.` : 'The channel is live.'}</p>`,
      );
    }
    case 'expired':
      return page(
        'This connection expired',
        html`<h1 class="heading">This connection expired</h1>
<p class="lead">It was not finished within 10 minutes. Nothing was connected; start again from Channels.</p>`,
      );
    default: {
      const code = s.error?.code;
      const title = (code && FAILED_TITLES[code]) ?? `${name} was not connected`;
      const why =
        code === 'consent_denied'
          ? `You declined at ${name}, or left its page without allowing Herald. Nothing was connected.`
          : code
            ? CONNECTION_FAILURES[code]
            : 'The connection did not finish.';
      return page(
        title,
        html`<h1 class="heading">${title}</h1>
<p class="lead">${why}</p>
${s.error && code !== 'consent_denied' && html`<p>${name} said: ${s.error.message}</p>`}
<p>Nothing was connected. You can start again from Channels.</p>`,
      );
    }
  }
}

/**
 * Where the platform's consent comes back to: a bare page that continues to the session's page at
 * once. The browser arrives from the platform's site, so the SameSite=Strict session cookie is not
 * sent with this request; the refresh is a navigation of the console's own page, which carries it.
 */
export function returnPage(connectionId: string): SafeHtml {
  const to = connectionPath(connectionId);
  return html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="0; url=${to}">
<title>Back from the platform – Herald console</title>
</head>
<body>
<main>
<h1>Back from the platform</h1>
<p><a href="${to}">Continue to the console</a></p>
</main>
</body>
</html>`;
}
