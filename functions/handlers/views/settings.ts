import type { OrgSettings } from '#core/accounts';
import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import { choices, errorSummary, type FieldError, textArea } from './forms.ts';
import { type Frame, layout } from './layout.ts';

// The workspace settings: owners change them (the form), everyone else reads them.

export const SETTINGS_FIELDS = {
  dangerousOps: 'setting-dangerous-ops',
  approvalRequired: 'setting-approval-required',
  landingOrigins: 'landing-origins',
} as const;

const DANGEROUS_HINT =
  'Lets API keys and the MCP server publish at once and delete posts (publishPost, deletePost, and createPost with publish_now). While it is off, those calls are refused.';
const APPROVAL_HINT =
  'Posts that are scheduled or published wait as “needs approval” until an owner or admin approves them.';
const LANDING_HINT =
  'Where a channel connection may send people back once connected: one origin per line, like https://app.example.com. Loopback addresses need no entry.';

export interface SettingsForm {
  settings: Required<OrgSettings>;
  /** The text area as sent, when the form is shown again. */
  landingText?: string;
  errors: readonly FieldError[];
}

export function settingsPage(o: {
  frame: Frame;
  settings: Required<OrgSettings>;
  /** The settings' version the form sends back. */
  version: number;
  canChange: boolean;
  message?: string | null;
  form?: SettingsForm;
}): SafeHtml {
  return layout({
    title: o.form?.errors.length ? 'Error: Settings' : 'Settings',
    frame: o.frame,
    section: 'settings',
    message: o.message ?? null,
    body: html`${errorSummary(o.form?.errors ?? [])}
<h1 class="heading">Settings</h1>
<p class="lead">The API and the MCP server apply these from their next request.</p>
${o.canChange ? settingsForm(o.form ?? { settings: o.settings, errors: [] }, o.version) : readOnly(o.settings)}`,
  });
}

function settingsForm(form: SettingsForm, version: number): SafeHtml {
  const s = form.settings;
  return html`<form method="post" action="${CONSOLE_PATH}/settings" novalidate>
<input type="hidden" name="version" value="${version}">
${choices({
  kind: 'checkbox',
  idPrefix: 'setting',
  name: 'settings',
  legend: 'Workspace rules',
  items: [
    {
      value: 'dangerous_ops',
      label: 'Dangerous AI operations',
      hint: DANGEROUS_HINT,
      checked: s.dangerous_ops,
    },
    {
      value: 'approval_required',
      label: 'Approval required',
      hint: APPROVAL_HINT,
      checked: s.approval_required,
    },
  ],
  errors: form.errors,
})}
${textArea({
  id: SETTINGS_FIELDS.landingOrigins,
  name: 'landing_origins',
  label: 'Landing origins',
  hint: LANDING_HINT,
  value: form.landingText ?? s.landing_origins.join('\n'),
  rows: 4,
  errors: form.errors,
})}
<button type="submit" class="button">Save settings</button>
</form>`;
}

const onOff = (on: boolean) =>
  on ? html`<span class="tag tag--green">On</span>` : html`<span class="tag tag--grey">Off</span>`;

function readOnly(s: Required<OrgSettings>): SafeHtml {
  return html`<dl class="summary">
<div class="summary__row"><dt>Dangerous AI operations</dt><dd>${onOff(s.dangerous_ops)}<p class="hint">${DANGEROUS_HINT}</p></dd></div>
<div class="summary__row"><dt>Approval required</dt><dd>${onOff(s.approval_required)}<p class="hint">${APPROVAL_HINT}</p></dd></div>
<div class="summary__row"><dt>Landing origins</dt><dd>${
    s.landing_origins.length
      ? html`<ul class="plain">${s.landing_origins.map((o) => html`<li><code>${o}</code></li>`)}</ul>`
      : 'None'
  }</dd></div>
</dl>
<p class="inset">Owners change the settings.</p>`;
}
