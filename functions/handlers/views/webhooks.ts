import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import { EVENT_TYPES, type EventType } from '#core/webhooks';
import type {
  DeliveryView,
  EndpointDetail,
  EndpointListItem,
  EndpointView,
  WebhookField,
} from '#usecases/console-webhooks';
import { choices, copyable, errorSummary, type FieldError, textInput } from './forms.ts';
import { type Frame, layout, live, when } from './layout.ts';
import { dataTable } from './table.ts';

// Webhook endpoints: the list with each one's state and latest delivery, the create form, an
// endpoint's page (its state and why, the delivery log, the edit form and its acts), the secret
// shown once after creation and rotation, and the confirmations before rotating and deleting.
// Secrets appear only on the two pages that answer an owner's or admin's act, never in a list.

export const WEBHOOKS_PATH = `${CONSOLE_PATH}/webhooks`;
const endpointPath = (id: string) => `${WEBHOOKS_PATH}/${encodeURIComponent(id)}`;

const EVENT_HINTS: Record<EventType, string> = {
  'post.published': 'A post is published on all its channels.',
  'post.failed': 'A post failed to publish.',
  'delivery.failed': 'A post’s delivery to one channel failed.',
  'channel.connected': 'A channel is connected or reconnected.',
  'channel.reauth_required': 'A channel needs to be connected again.',
  'post.unpublished': 'A post was taken down from its platforms (unpublish).',
  'inbox.received': 'A new comment, mention or message reached a channel’s inbox.',
};

/** The form's field ids (the error summary links to them). */
export const WEBHOOK_FIELDS: Record<WebhookField, string> = {
  url: 'webhook-url',
  description: 'webhook-description',
  event_types: 'webhook-event-post-published',
};

export interface EndpointFormValues {
  url: string;
  description: string;
  eventTypes: readonly string[];
  enabled?: boolean;
  errors: readonly FieldError[];
}

const STATE_TAGS: Record<EndpointView['state'], SafeHtml> = {
  active: html`<span class="tag tag--green">Active</span>`,
  warning: html`<span class="tag tag--yellow">Failing: warned</span>`,
  auto_disabled: html`<span class="tag tag--red">Auto-disabled</span>`,
  disabled: html`<span class="tag tag--grey">Disabled</span>`,
};

/** The state in words (never colour alone); an active endpoint already failing says so. */
function stateTag(e: EndpointView): SafeHtml {
  if (e.state === 'active' && e.failure.failing_since)
    return html`<span class="tag tag--yellow">Active, failing</span>`;
  return STATE_TAGS[e.state];
}

const DELIVERY_TAGS: Record<string, SafeHtml> = {
  delivered: html`<span class="tag tag--green">Delivered</span>`,
  failed: html`<span class="tag tag--red">Failed</span>`,
  pending: html`<span class="tag tag--yellow">Retrying</span>`,
  skipped: html`<span class="tag tag--grey">Skipped</span>`,
};
const deliveryTag = (status: string) => DELIVERY_TAGS[status] ?? html`<span class="tag">${status}</span>`;

/** What the receiver answered the last attempt: its HTTP status, or why there was none. */
function answerOf(d: DeliveryView): SafeHtml {
  const last = d.attempts.at(-1);
  if (!last) return html`<span class="muted">Not attempted yet</span>`;
  return html`${when(last.attempted_at)}: ${last.status_code === null ? html`no answer` : html`HTTP ${last.status_code}`}${last.error && last.status_code === null ? html` (${last.error})` : ''}`;
}

const eventList = (types: readonly string[]) =>
  html`<ul class="plain">${types.map((t) => html`<li><code>${t}</code></li>`)}</ul>`;

export function webhooksPage(o: {
  frame: Frame;
  endpoints: readonly EndpointListItem[];
  canManage: boolean;
  included: boolean;
  plan: string;
  message?: string | null;
  form?: EndpointFormValues;
}): SafeHtml {
  const form = o.form ?? { url: '', description: '', eventTypes: [], errors: [] };
  return layout({
    title: o.form?.errors.length ? 'Error: Webhooks' : 'Webhooks',
    frame: o.frame,
    section: 'webhooks',
    message: o.message ?? null,
    body: html`${errorSummary(form.errors)}
<h1 class="heading">Webhooks</h1>
<p class="lead">Herald sends signed events to these addresses as they happen. An endpoint that keeps failing is warned after a day and turned off after three; open it to see its deliveries.</p>
${!o.included && html`<p class="inset">The ${o.plan} plan does not include webhooks: endpoints can be neither added nor changed, and no events are sent.</p>`}
${live({ id: 'endpoints', url: WEBHOOKS_PATH, seconds: 10, body: endpointList(o.endpoints, o.canManage) })}
${
  o.canManage && o.included
    ? createForm(form)
    : o.included && html`<p class="inset">Owners and admins add, change, test and delete endpoints.</p>`
}`,
  });
}

/**
 * A receiver's URL as someone who may not manage endpoints sees it: scheme, host and port, the path
 * and query masked. Receivers' URLs often carry their credential (a token in the query; for
 * Slack-style hooks the path itself), and members only read.
 */
export function maskedUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname.length > 1 ? '/…' : '/'}${u.search ? '?…' : ''}`;
  } catch {
    return '…';
  }
}

const shownUrl = (url: string, canManage: boolean) => (canManage ? url : maskedUrl(url));

function endpointList(endpoints: readonly EndpointListItem[], canManage: boolean): SafeHtml {
  if (!endpoints.length) return html`<p>No endpoints yet.</p>`;
  return dataTable({
    id: 'webhook-endpoints',
    caption: 'Endpoints of this workspace',
    columns: [{ label: 'Endpoint' }, { label: 'Events' }, { label: 'State' }, { label: 'Last delivery' }],
    rows: endpoints.map((e) => [
      html`<a href="${endpointPath(e.id)}"><code>${shownUrl(e.url, canManage)}</code></a>${e.description && html`<br><span class="muted">${e.description}</span>`}`,
      eventList(e.event_types),
      stateTag(e),
      e.last_delivery
        ? html`${deliveryTag(e.last_delivery.status)} <code>${e.last_delivery.event_type}</code><br>${answerOf(e.last_delivery)}`
        : html`<span class="muted">None yet</span>`,
    ]),
  });
}

function fields(form: EndpointFormValues): SafeHtml {
  return html`${textInput({
    id: WEBHOOK_FIELDS.url,
    name: 'url',
    label: 'URL',
    hint: 'Where Herald sends events, like https://hooks.example.com/herald. Addresses in private networks are refused.',
    value: form.url,
    maxlength: 2048,
    errors: form.errors,
  })}
${textInput({
  id: WEBHOOK_FIELDS.description,
  name: 'description',
  label: 'Description (optional)',
  hint: 'What receives these events, so you can tell endpoints apart.',
  value: form.description,
  maxlength: 500,
  errors: form.errors,
})}
${choices({
  kind: 'checkbox',
  idPrefix: 'webhook-event',
  name: 'event_types',
  legend: 'Events',
  hint: 'Which events to send. Choose at least one.',
  items: EVENT_TYPES.map((t) => ({
    value: t,
    label: t,
    hint: EVENT_HINTS[t],
    checked: form.eventTypes.includes(t),
  })),
  errors: form.errors,
})}`;
}

function createForm(form: EndpointFormValues): SafeHtml {
  return html`<h2 class="heading heading--m">Add an endpoint</h2>
<form method="post" action="${WEBHOOKS_PATH}" novalidate>
${fields(form)}
<button type="submit" class="button">Add endpoint</button>
</form>`;
}

/** Why the endpoint is in its state: the failure ladder's story, with its dates. */
function stateStory(e: EndpointView, ladder: EndpointDetail['ladder']): SafeHtml {
  const f = e.failure;
  const last = html`${f.consecutive_failures} failed ${f.consecutive_failures === 1 ? 'attempt' : 'attempts'} in a row${f.last_status_code !== null ? html`, the last answered HTTP ${f.last_status_code}` : ''}${f.last_error && f.last_error !== `HTTP ${f.last_status_code}` ? html` (${f.last_error})` : ''}`;
  switch (e.state) {
    case 'active':
      if (!f.failing_since) return html`<p>Events are delivered to it. No failures.</p>`;
      return html`<p>Failing since ${when(f.failing_since)}: ${last}. ${ladder && html`If no delivery succeeds, the owner is warned at ${when(ladder.warn_at)} and the endpoint is turned off at ${when(ladder.disable_at)}.`}</p>`;
    case 'warning':
      return html`<p>Failing since ${when(f.failing_since)}: ${last}. The owner was warned at ${when(f.warned_at)}. ${ladder && html`If no delivery succeeds, it is turned off at ${when(ladder.disable_at)}.`}</p>`;
    case 'auto_disabled':
      return html`<p>Turned off by the failure ladder at ${when(f.disabled_at)}, after failing since ${when(f.failing_since)}: ${last}. New events are not sent to it. Re-enable it once the receiver works again.</p>`;
    case 'disabled':
      return html`<p>Turned off by a person. New events are not sent to it.</p>`;
  }
}

function deliveryLog(d: EndpointDetail['deliveries'], paged: boolean): SafeHtml {
  if (!d.data.length) return html`<p>No deliveries${paged ? ' before these' : ' yet'}.</p>`;
  return dataTable({
    id: 'webhook-deliveries',
    caption: paged ? 'Older deliveries' : 'Deliveries, most recently attempted first',
    columns: [
      { label: 'Event' },
      { label: 'Status' },
      { label: 'Attempts' },
      { label: 'Last attempt' },
      { label: 'Next retry' },
    ],
    rows: d.data.map((x) => [
      html`<code>${x.event_type}</code><br><span class="muted"><code>${x.event_id}</code></span>`,
      deliveryTag(x.status),
      String(x.attempts.length),
      answerOf(x),
      when(x.next_attempt_at, 'None'),
    ]),
  });
}

export function endpointPage(o: {
  frame: Frame;
  detail: EndpointDetail;
  canManage: boolean;
  /** The delivery log's cursor, when this is a later page of it. */
  after?: string | null;
  message?: string | null;
  form?: EndpointFormValues;
  status?: 'stale';
}): SafeHtml {
  const { endpoint: e, ladder, deliveries } = o.detail;
  const path = endpointPath(e.id);
  const form: EndpointFormValues = o.form ?? {
    url: e.url,
    description: e.description ?? '',
    eventTypes: e.event_types,
    enabled: e.enabled,
    errors: [],
  };
  const stopped = e.state === 'auto_disabled' || e.state === 'disabled';
  const state = html`<dl class="summary">
<div class="summary__row"><dt>State</dt><dd>${stateTag(e)}${stateStory(e, ladder)}</dd></div>
<div class="summary__row"><dt>Events</dt><dd>${eventList(e.event_types)}</dd></div>
${e.description && html`<div class="summary__row"><dt>Description</dt><dd>${e.description}</dd></div>`}
<div class="summary__row"><dt>Created</dt><dd>${when(e.created_at)}; last changed ${when(e.updated_at)}</dd></div>
</dl>
${
  o.canManage &&
  stopped &&
  html`<form method="post" action="${path}/enable" class="actions">
<input type="hidden" name="version" value="${o.detail.version}">
<button type="submit" class="button">Re-enable endpoint</button>
</form>`
}
<h2 class="heading heading--m" id="deliveries">Delivery log</h2>
${deliveryLog(deliveries, Boolean(o.after))}
<nav class="pager" aria-label="Delivery log pages">
${o.after && html`<a href="${path}#deliveries">Newest deliveries</a>`}
${deliveries.next_cursor && html`<a href="${path}?after=${encodeURIComponent(deliveries.next_cursor)}#deliveries" rel="next">Older deliveries</a>`}
</nav>`;
  return layout({
    title: o.form?.errors.length ? 'Error: Webhook endpoint' : 'Webhook endpoint',
    frame: o.frame,
    section: 'webhooks',
    message: o.message ?? null,
    body: html`${errorSummary(form.errors)}
<p><a href="${WEBHOOKS_PATH}">All endpoints</a></p>
<h1 class="heading">Webhook endpoint <code>${shownUrl(e.url, o.canManage)}</code></h1>
${o.after ? state : live({ id: 'endpoint', url: path, seconds: 5, body: state })}
${o.canManage ? manage(path, e, o.detail.version, form) : o.detail.webhooks && html`<p class="inset">Owners and admins change, test and delete endpoints.</p>`}`,
  });
}

function manage(path: string, e: EndpointView, version: number, form: EndpointFormValues): SafeHtml {
  return html`<h2 class="heading heading--m">Test and secret</h2>
<div class="actions">
<form method="post" action="${path}/test">
<button type="submit" class="button button--secondary">Send a test event</button>
</form>
<a href="${path}?confirm=rotate" class="button button--secondary">Rotate signing secret</a>
</div>
<h2 class="heading heading--m">Change the endpoint</h2>
<form method="post" action="${path}/edit" novalidate>
<input type="hidden" name="version" value="${version}">
<input type="hidden" name="was_enabled" value="${e.enabled ? 'true' : 'false'}">
${fields(form)}
${choices({
  kind: 'checkbox',
  idPrefix: 'webhook-enabled',
  name: 'enabled',
  legend: 'Deliveries',
  items: [
    {
      value: 'on',
      label: 'On: send events to this endpoint',
      hint: 'Turning an auto-disabled endpoint on clears its failures.',
      checked: form.enabled ?? e.enabled,
    },
  ],
  errors: form.errors,
})}
<button type="submit" class="button">Save changes</button>
</form>
<h2 class="heading heading--m">Delete</h2>
<p><a href="${path}?confirm=delete" class="button button--warning">Delete endpoint</a></p>`;
}

export function createdPage(o: { frame: Frame; endpoint: EndpointView; secret: string }): SafeHtml {
  return layout({
    title: 'Endpoint added',
    frame: o.frame,
    section: 'webhooks',
    body: html`<div class="panel">
<h1 class="heading">Endpoint added</h1>
<p class="lead">Copy its signing secret now and give it to your receiver: it is shown this once and cannot be shown again.</p>
</div>
<p>Herald signs every event to <code>${o.endpoint.url}</code> with this secret (Standard Webhooks: the <code>webhook-signature</code> header).</p>
${copyable({ id: 'webhook-secret', label: 'Signing secret', value: o.secret })}
<p><a href="${endpointPath(o.endpoint.id)}">Go to the endpoint</a> · <a href="${WEBHOOKS_PATH}">All endpoints</a></p>`,
  });
}

export function rotatedPage(o: {
  frame: Frame;
  endpoint: EndpointView;
  secret: string;
  previousUntil: string;
}): SafeHtml {
  return layout({
    title: 'New signing secret',
    frame: o.frame,
    section: 'webhooks',
    body: html`<div class="panel">
<h1 class="heading">New signing secret</h1>
<p class="lead">Copy it now: it is shown this once and cannot be shown again.</p>
</div>
${copyable({ id: 'webhook-secret', label: 'Signing secret', value: o.secret })}
<p>Until ${when(o.previousUntil)} every event to <code>${o.endpoint.url}</code> carries two signatures, one with the previous secret and one with this one; after that, only this one. Switch your receiver over before then.</p>
<p><a href="${endpointPath(o.endpoint.id)}">Back to the endpoint</a></p>`,
  });
}

export function confirmPage(o: { frame: Frame; endpoint: EndpointView; act: 'delete' | 'rotate' }): SafeHtml {
  const path = endpointPath(o.endpoint.id);
  const url = html`<code>${o.endpoint.url}</code>`;
  const [title, heading, lead, button, style] =
    o.act === 'delete'
      ? [
          'Delete this endpoint?',
          html`Delete the endpoint ${url}?`,
          'New events are no longer sent to it and deliveries still pending stop. Its delivery log can no longer be read. This cannot be undone.',
          'Delete endpoint',
          'button--warning',
        ]
      : [
          'Rotate the signing secret?',
          html`Rotate the signing secret of ${url}?`,
          'A new secret is made and shown once. For 24 hours every event is signed with both the previous secret and the new one; after that, with the new one only. Your receiver must switch over within that time.',
          'Rotate secret',
          '',
        ];
  return layout({
    title,
    frame: o.frame,
    section: 'webhooks',
    body: html`<h1 class="heading">${heading}</h1>
<p class="lead">${lead}</p>
<form method="post" action="${path}/${o.act}" class="actions">
<button type="submit" class="button ${style}">${button}</button>
<a href="${path}" class="link">Cancel</a>
</form>`,
  });
}
