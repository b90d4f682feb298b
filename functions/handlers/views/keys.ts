import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH, SCOPES } from '#core/vocabulary';
import type { ApiKeyView } from '#usecases/api-keys';
import { choices, copyable, errorSummary, type FieldError, textInput } from './forms.ts';
import { type Frame, layout, when } from './layout.ts';
import { dataTable } from './table.ts';

// API keys: the list (no secrets: the first characters only), the mint form, the key shown once,
// and the confirmation before a revocation.

const KEYS_PATH = `${CONSOLE_PATH}/keys`;

const SCOPE_HINTS: Record<(typeof SCOPES)[number], string> = {
  'posts:read': 'List and read posts and media.',
  'posts:write': 'Create, schedule, publish and delete posts; upload media.',
  'channels:read': 'List channels and connection sessions.',
  'channels:write': 'Connect and disconnect channels.',
  'inbox:read': 'Read comments, mentions and messages.',
  'inbox:write': 'Mark and answer comments, mentions and messages.',
  'analytics:read': 'Read analytics and usage.',
  'webhooks:read': 'List webhook endpoints and deliveries.',
  'webhooks:write': 'Create, change, test and delete webhook endpoints.',
  'ai:generate': 'Generate post drafts.',
};

/** The mint form's field ids (the error summary links to them). */
export const MINT_FIELDS = { name: 'key-name', scopes: `key-scope-${SCOPES[0].replace(':', '-')}` } as const;

export interface MintForm {
  name?: string | undefined;
  scopes: readonly string[];
  errors: readonly FieldError[];
}

export function keysPage(o: {
  frame: Frame;
  keys: readonly ApiKeyView[];
  canMint: boolean;
  message?: string | null;
  form?: MintForm;
}): SafeHtml {
  const form = o.form ?? { scopes: [], errors: [] };
  return layout({
    title: o.form?.errors.length ? 'Error: API keys' : 'API keys',
    frame: o.frame,
    section: 'keys',
    message: o.message ?? null,
    body: html`${errorSummary(form.errors)}
<h1 class="heading">API keys</h1>
<p class="lead">Applications call the API and the MCP server with these keys. A key is shown once, when it is minted; here you see its first characters only.</p>
${keyList(o.keys, o.canMint)}
${o.canMint ? mintForm(form) : html`<p class="inset">Owners and admins mint and revoke keys.</p>`}`,
  });
}

function keyList(keys: readonly ApiKeyView[], canMint: boolean): SafeHtml {
  if (!keys.length) return html`<p>No keys yet.</p>`;
  return dataTable({
    id: 'keys',
    caption: 'Keys of this workspace',
    columns: [
      { label: 'Name' },
      { label: 'Key' },
      { label: 'Scopes' },
      { label: 'Created' },
      { label: 'Last used' },
      { label: 'Status' },
      ...(canMint ? [{ label: 'Actions', hidden: true }] : []),
    ],
    rows: keys.map((k) => [
      k.name ?? html`<span class="muted">Unnamed</span>`,
      html`<code>${k.prefix}…</code>`,
      html`<ul class="plain">${k.scopes.map((s) => html`<li><code>${s}</code></li>`)}</ul>`,
      html`${when(k.created_at)} <span class="muted">by ${creatorOf(k)}</span>`,
      when(k.last_used_at),
      k.revoked_at
        ? html`<span class="tag tag--grey">Revoked</span> ${when(k.revoked_at)}`
        : html`<span class="tag tag--green">Active</span>`,
      ...(canMint
        ? [
            !k.revoked_at &&
              html`<a href="${KEYS_PATH}?revoke=${encodeURIComponent(k.id)}">Revoke<span class="visually-hidden"> ${k.name ?? k.prefix}</span></a>`,
          ]
        : []),
    ]),
  });
}

/** Who minted a key, in words: a removed person's user id would tell the reader nothing. */
const creatorOf = (k: ApiKeyView) =>
  k.created_by_email ?? (k.created_by === 'operator' ? 'the operator' : 'a removed member');

function mintForm(form: MintForm): SafeHtml {
  return html`<h2 class="heading heading--m">Mint a key</h2>
<form method="post" action="${KEYS_PATH}" novalidate>
${textInput({
  id: MINT_FIELDS.name,
  name: 'name',
  label: 'Name (optional)',
  hint: 'What uses this key, so you can tell it apart later, e.g. “Newsletter scheduler”.',
  value: form.name,
  maxlength: 100,
  errors: form.errors,
})}
${choices({
  kind: 'checkbox',
  idPrefix: 'key-scope',
  name: 'scopes',
  legend: 'Scopes',
  hint: 'What the key may do. Choose at least one; give it no more than it needs.',
  items: SCOPES.map((s) => ({ value: s, label: s, hint: SCOPE_HINTS[s], checked: form.scopes.includes(s) })),
  errors: form.errors,
})}
<button type="submit" class="button">Mint key</button>
</form>`;
}

export function mintedPage(o: {
  frame: Frame;
  minted: { id: string; key: string; scopes: readonly string[]; name: string | null };
}): SafeHtml {
  return layout({
    title: 'Your new API key',
    frame: o.frame,
    section: 'keys',
    body: html`<div class="panel">
<h1 class="heading">Your new API key</h1>
<p class="lead">Copy it now and keep it somewhere safe: it is shown this once and cannot be shown again.</p>
</div>
${copyable({ id: 'minted-key', label: o.minted.name ? `Key “${o.minted.name}”` : 'Key', value: o.minted.key, autofocus: true })}
<p>Scopes: ${o.minted.scopes.map((s, i) => html`${i > 0 && ', '}<code>${s}</code>`)}.</p>
<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code>.</p>
<p><a href="${KEYS_PATH}">Back to API keys</a></p>`,
  });
}

export function revokePage(o: { frame: Frame; key: ApiKeyView }): SafeHtml {
  const label = o.key.name ?? `${o.key.prefix}…`;
  return layout({
    title: 'Revoke this key?',
    frame: o.frame,
    section: 'keys',
    body: html`<h1 class="heading">Revoke the key “${label}”?</h1>
<p class="lead">Its next request will be refused, wherever it is used. This cannot be undone: the application using it will need a new key.</p>
<form method="post" action="${KEYS_PATH}/${encodeURIComponent(o.key.id)}/revoke" class="actions">
<button type="submit" class="button button--warning">Revoke key</button>
<a href="${KEYS_PATH}" class="link">Cancel</a>
</form>`,
  });
}
