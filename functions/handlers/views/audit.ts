import { html, type SafeHtml } from '#core/html';
import type { AuditAction, AuditEntry } from '#core/people';
import { CONSOLE_PATH } from '#core/vocabulary';
import { type Frame, layout, when } from './layout.ts';
import { dataTable, idCode } from './table.ts';

// The audit log (owners): who did what and when, newest first, a page at a time.

const AUDIT_PATH = `${CONSOLE_PATH}/audit`;

const ACTIONS: Record<AuditAction, string> = {
  org_created: 'Workspace created',
  member_invited: 'Member invited',
  member_role_changed: 'Role changed',
  member_removed: 'Member removed',
  enrollment_issued: 'Enrollment link issued',
  passkey_added: 'Passkey added',
  passkey_removed: 'Passkey removed',
  signed_in: 'Signed in',
  signed_out: 'Signed out',
  signed_out_everywhere: 'Signed out everywhere',
  act_refused: 'Act refused (role)',
  key_minted: 'API key minted',
  key_revoked: 'API key revoked',
  settings_changed: 'Settings changed',
  plan_changed: 'Plan changed',
  post_approved: 'Post approved',
  post_rejected: 'Post rejected',
  post_rescheduled: 'Post rescheduled',
  post_published: 'Post published now',
  post_deleted: 'Post deleted',
  post_edited: 'Post edited',
  post_unpublished: 'Post unpublished from its platforms',
  inbox_replied: 'Inbox item answered',
  channel_connected: 'Channel connected',
  channel_reconnected: 'Channel reconnected',
  channel_disconnected: 'Channel disconnected',
  webhook_created: 'Webhook endpoint created',
  webhook_updated: 'Webhook endpoint changed',
  webhook_tested: 'Webhook test event sent',
  webhook_secret_rotated: 'Webhook secret rotated',
  webhook_enabled: 'Webhook endpoint re-enabled',
  webhook_deleted: 'Webhook endpoint deleted',
};

function who(actor: AuditEntry['actor']): SafeHtml {
  const person = actor.email ?? actor.user_id;
  if (actor.kind === 'person') return html`${person ?? 'Someone'}`;
  return person
    ? html`Operator <span class="muted">(CLI, for ${person})</span>`
    : html`Operator <span class="muted">(CLI)</span>`;
}

function detail(d: AuditEntry['detail']): SafeHtml {
  const entries = Object.entries(d);
  if (!entries.length) return html``;
  return html`<dl class="details">${entries.map(
    ([k, v]) =>
      html`<div><dt>${k.replaceAll('_', ' ')}</dt><dd>${v === null ? '–' : Array.isArray(v) ? v.join(', ') || '–' : String(v)}</dd></div>`,
  )}</dl>`;
}

export function auditPage(o: {
  frame: Frame;
  entries: readonly AuditEntry[];
  nextCursor: string | null;
  paged: boolean;
}): SafeHtml {
  return layout({
    title: 'Audit log',
    frame: o.frame,
    section: 'audit',
    body: html`<h1 class="heading">Audit log</h1>
<p class="lead">Who did what in this workspace, newest first: people in the console, and the operator's command line.</p>
${
  o.entries.length
    ? dataTable({
        id: 'audit',
        caption: o.paged ? 'Older entries' : 'Latest entries',
        columns: [
          { label: 'What' },
          { label: 'When' },
          { label: 'Who' },
          { label: 'On' },
          { label: 'Details' },
        ],
        rows: o.entries.map((e) => [
          ACTIONS[e.action] ?? e.action,
          when(e.at),
          who(e.actor),
          e.target ? idCode(e.target) : html`<span class="muted">The workspace</span>`,
          detail(e.detail),
        ]),
      })
    : html`<p>Nothing recorded${o.paged ? ' before these' : ' yet'}.</p>`
}
<nav class="pager" aria-label="Audit log pages">
${o.paged && html`<a href="${AUDIT_PATH}">Newest entries</a>`}
${o.nextCursor && html`<a href="${AUDIT_PATH}?cursor=${encodeURIComponent(o.nextCursor)}" rel="next">Older entries</a>`}
</nav>`,
  });
}
