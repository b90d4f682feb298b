import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { Approvals } from '#usecases/post-acts';
import { type Frame, layout, live, when } from './layout.ts';
import { channelName, createdBy, postLabel, postPath } from './posts.ts';
import { dataTable } from './table.ts';

// Approvals: the posts waiting for a person — who created them (the key, and whether through the
// REST API or MCP), what they will publish where, and when — with approve and reject for owners
// and admins. The list keeps itself current (htmx), so a post approved in another tab leaves it.

const APPROVALS_PATH = `${CONSOLE_PATH}/approvals`;

/** When an approved post publishes: at its time, or at once (asked so, or its time has passed). */
function publishes(p: Approvals['posts'][number], now: Date): SafeHtml {
  if (p.approval?.mode !== 'schedule' || !p.scheduled_at) return html`As soon as it is approved`;
  if (Date.parse(p.scheduled_at) <= now.getTime())
    return html`Asked for ${when(p.scheduled_at)}, now passed: publishes when approved`;
  return html`At ${when(p.scheduled_at)}`;
}

export function approvalsPage(o: {
  frame: Frame;
  approvals: Approvals;
  canApprove: boolean;
  paged: boolean;
  now: Date;
  message?: string | null;
}): SafeHtml {
  const { posts, channels, keys, next } = o.approvals;
  const list = posts.length
    ? dataTable({
        id: 'approvals',
        caption: o.paged ? 'Older posts waiting for approval' : 'Posts waiting for approval',
        columns: [
          { label: 'Post' },
          { label: 'Created by' },
          { label: 'Publishes' },
          ...(o.canApprove ? [{ label: 'Actions', hidden: true }] : []),
        ],
        rows: posts.map((p) => [
          html`<a href="${postPath(p.id)}">${postLabel(p)}</a>`,
          html`${createdBy(p, keys)}<br><span class="muted">${when(p.created_at)}</span>`,
          html`<ul class="plain">${p.variants.map(
            (v) =>
              html`<li><strong>${channelName(channels, v.channel_id)}</strong>: ${v.body.length > 140 ? `${v.body.slice(0, 139)}…` : v.body}${v.media.length ? html` <span class="muted">(+${v.media.length} media)</span>` : ''}</li>`,
          )}</ul>
<p>${publishes(p, o.now)}</p>`,
          ...(o.canApprove
            ? [
                html`<form method="post" action="${postPath(p.id)}/approve" class="inline-form">
<input type="hidden" name="version" value="${p.version}"><input type="hidden" name="status" value="${p.status}">
<button type="submit" class="button button--small">Approve<span class="visually-hidden"> ${postLabel(p)}</span></button>
<a href="${postPath(p.id)}?act=reject">Reject…<span class="visually-hidden"> ${postLabel(p)}</span></a>
</form>`,
              ]
            : []),
        ]),
      })
    : html`<p>No post waits for approval${o.paged ? ' on this page' : ''}.</p>`;
  return layout({
    title: 'Approvals',
    frame: o.frame,
    section: 'approvals',
    message: o.message ?? null,
    body: html`<h1 class="heading">Approvals</h1>
<p class="lead">While “approval required” is on, posts that API keys and agents schedule or publish wait here for a person. Approving lets them publish as asked; rejecting sends them back to draft, with your reason.</p>
${!o.canApprove && html`<p class="inset">Owners and admins approve and reject posts.</p>`}
${o.paged ? html`<div id="approval-list">${list}</div>` : live({ id: 'approval-list', url: APPROVALS_PATH, seconds: 10, body: list })}
<nav class="pager" aria-label="Approval pages">
${o.paged && html`<a href="${APPROVALS_PATH}">Newest</a>`}
${next && html`<a href="${APPROVALS_PATH}?cursor=${encodeURIComponent(next)}" rel="next">Older</a>`}
</nav>`,
  });
}
