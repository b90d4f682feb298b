import { html, type SafeHtml } from '#core/html';
import {
  INBOX_KINDS,
  INBOX_STATUSES,
  type InboxItem,
  type InboxKind,
  type InboxStatus,
  type ReplyStage,
} from '#core/inbox';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { InboxDetails, InboxList } from '#usecases/console-inbox';
import type { ReplySuggestion } from '#usecases/console-suggest';
import { avatar } from './channels.ts';
import { errorSummary, type FieldError, refusal, textArea } from './forms.ts';
import { platformName } from './home.ts';
import { type Frame, layout, live, when } from './layout.ts';
import { postPath, safeLink } from './posts.ts';
import { dataTable, tagOf } from './table.ts';

// The inbox: the comments, mentions and direct messages that came back to the workspace's channels,
// newest first, filtered by channel, kind and status in a GET form and paged by the API's cursor;
// an item with what it answers (the Herald post, the rest of its conversation), its author, its
// replies and their stages; mark read, unread, archived (everyone); reply (owners and admins). The
// list and an item's replies keep themselves current (htmx).

export const INBOX_PATH = `${CONSOLE_PATH}/inbox`;
export const inboxItemPath = (id: string) => `${INBOX_PATH}/${encodeURIComponent(id)}`;

/** The reply form's field id (the error summary links to it). */
export const REPLY_FIELD = 'reply-body';

const KIND_LABELS: Record<InboxKind, { one: string; many: string }> = {
  comment: { one: 'Comment', many: 'Comments' },
  mention: { one: 'Mention', many: 'Mentions' },
  message: { one: 'Message', many: 'Messages' },
};

const STATUS: Record<InboxStatus, { label: string; tag: string }> = {
  unread: { label: 'Unread', tag: 'tag--yellow' },
  read: { label: 'Read', tag: 'tag--grey' },
  archived: { label: 'Archived', tag: 'tag--grey' },
};

const STAGES: Record<ReplyStage, { label: string; tag: string }> = {
  queued: { label: 'Queued', tag: 'tag--grey' },
  sending: { label: 'Sending', tag: 'tag--yellow' },
  sent: { label: 'Sent', tag: 'tag--green' },
  failed: { label: 'Failed', tag: 'tag--red' },
};

const statusTag = (s: InboxStatus) => tagOf(STATUS, s);

/** The item's text in a line (the list, the conversation). */
const excerpt = (text: string, max = 140) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Who wrote it: the handle, and the name when the platform gave one. */
const authorLine = (i: InboxItem) =>
  i.author.name && i.author.name !== i.author.handle
    ? html`${i.author.name} <span class="muted">${i.author.handle}</span>`
    : html`${i.author.handle}`;

type Channel = InboxList['channels'][number];

const channelLabel = (channels: readonly Channel[], id: string) => {
  const c = channels.find((ch) => ch.id === id);
  return c ? `${platformName(c.platform)} ${c.handle}` : id;
};

/** The plan lacks the inbox: say so, and nothing else (nothing is polled for it). */
function notIncluded(plan: string): SafeHtml {
  return html`<p class="inset">The ${plan} plan does not include the inbox: Herald reads no comments, mentions or messages for this workspace. The operator can move it to a plan that does.</p>`;
}

// ---- the list ----------------------------------------------------------------------------------

export interface InboxFilters {
  channel?: string | undefined;
  kind?: InboxKind | undefined;
  status?: InboxStatus | undefined;
}

/** The list's address with its filters (and a page's cursor): the form's, the pager's, the live region's. */
export function inboxQuery(f: InboxFilters, cursor?: string): string {
  const q = new URLSearchParams();
  if (f.channel) q.set('channel', f.channel);
  if (f.kind) q.set('kind', f.kind);
  if (f.status) q.set('status', f.status);
  if (cursor) q.set('cursor', cursor);
  const s = q.toString();
  return s ? `${INBOX_PATH}?${s}` : INBOX_PATH;
}

const selected = (on: boolean) => (on ? html` selected` : '');

export function inboxPage(o: {
  frame: Frame;
  list: InboxList;
  filters: InboxFilters;
  paged: boolean;
  origin: string;
  message?: string | null;
}): SafeHtml {
  const { list, filters } = o;
  const filtered = Boolean(filters.channel || filters.kind || filters.status);
  const items = list.items.length
    ? dataTable({
        id: 'inbox',
        caption: o.paged ? 'Older items' : 'Latest items',
        columns: [
          { label: 'Item' },
          { label: 'From' },
          { label: 'Kind' },
          { label: 'Status' },
          { label: 'When' },
        ],
        rows: list.items.map((i) => [
          html`<a href="${inboxItemPath(i.id)}">${i.status === 'unread' ? html`<strong>${excerpt(i.text) || '(no text)'}</strong>` : excerpt(i.text) || '(no text)'}</a>`,
          html`<span class="author">${avatar({ handle: i.author.handle, avatar_url: i.author.avatar_url }, o.origin)} <span>${authorLine(i)}</span></span>`,
          html`${KIND_LABELS[i.kind].one}<br><span class="muted">${channelLabel(list.channels, i.channel_id)}</span>`,
          statusTag(i.status),
          when(i.created_at),
        ]),
      })
    : html`<p>No items${filtered ? ' match these filters' : ''}${o.paged ? ' on this page' : ''}.</p>`;
  return layout({
    title: 'Inbox',
    frame: o.frame,
    section: 'inbox',
    message: o.message ?? null,
    body: html`<h1 class="heading">Inbox</h1>
<p class="lead">The comments, mentions and direct messages that came back to this workspace's channels, newest first. Herald reads them from each platform every few minutes.</p>
${
  !list.included
    ? notIncluded(list.plan)
    : html`<form method="get" action="${INBOX_PATH}" class="inline-form" role="search" aria-label="Filter the inbox">
<label class="label" for="filter-channel">Channel</label>
<select class="select" id="filter-channel" name="channel">
<option value="">Any channel</option>
${list.channels.map((c) => html`<option value="${c.id}"${selected(filters.channel === c.id)}>${platformName(c.platform)} ${c.handle}</option>`)}
</select>
<label class="label" for="filter-kind">Kind</label>
<select class="select" id="filter-kind" name="kind">
<option value="">Any kind</option>
${INBOX_KINDS.map((k) => html`<option value="${k}"${selected(filters.kind === k)}>${KIND_LABELS[k].many}</option>`)}
</select>
<label class="label" for="filter-status">Status</label>
<select class="select" id="filter-status" name="status">
<option value="">Any status</option>
${INBOX_STATUSES.map((s) => html`<option value="${s}"${selected(filters.status === s)}>${STATUS[s].label}</option>`)}
</select>
<button type="submit" class="button button--secondary">Filter</button>
</form>
${o.paged ? html`<div id="inbox-list">${items}</div>` : live({ id: 'inbox-list', url: inboxQuery(filters), seconds: 10, body: items })}
<nav class="pager" aria-label="Inbox pages">
${o.paged && html`<a href="${inboxQuery(filters)}">Newest items</a>`}
${list.next && html`<a href="${inboxQuery(filters, list.next)}" rel="next">Older items</a>`}
</nav>`
}`,
  });
}

// ---- one item ----------------------------------------------------------------------------------

export type Suggested = ReplySuggestion;

export interface ReplyForm {
  value: string;
  errors: readonly FieldError[];
}

const itemTitle = (i: InboxItem) => `${KIND_LABELS[i.kind].one} from ${i.author.handle}`;

export function inboxItemPage(o: {
  frame: Frame;
  details: InboxDetails;
  origin: string;
  /** Owners and admins: the reply box. */
  canReply: boolean;
  message?: string | null;
  refused?: string | null;
  reply?: ReplyForm;
  /** Suggested replies (the first fills the reply box). */
  suggested?: Suggested;
}): SafeHtml {
  const { item: i, post, conversation, channels, replyLimit, replyable } = o.details;
  const form = o.reply ?? { value: o.suggested?.bodies[0] ?? '', errors: [] };
  const platform = platformName(i.platform);
  const pending = i.replies.some((r) => r.stage === 'queued' || r.stage === 'sending');
  const path = inboxItemPath(i.id);
  return layout({
    title: form.errors.length || o.refused ? `Error: ${itemTitle(i)}` : itemTitle(i),
    frame: o.frame,
    section: 'inbox',
    message: o.message ?? null,
    body: html`${refusal(o.refused)}${errorSummary(form.errors)}
<p><a href="${INBOX_PATH}">Inbox</a></p>
<h1 class="heading">${itemTitle(i)}</h1>
<div class="panel">
<p class="author">${avatar({ handle: i.author.handle, avatar_url: i.author.avatar_url }, o.origin)} <span>${i.author.name ? html`<strong>${i.author.name}</strong> <span class="muted">${i.author.handle}</span>` : html`<strong>${i.author.handle}</strong>`}</span></p>
<p>${i.text || html`<span class="muted">(no text)</span>`}</p>
<p class="muted">${when(i.created_at)}${i.url && html` · ${safeLink(i.url, html`See it on ${platform}`)}`}</p>
</div>
<dl class="summary">
<div class="summary__row"><dt>Status</dt><dd>${statusTag(i.status)}</dd></div>
<div class="summary__row"><dt>Kind</dt><dd>${KIND_LABELS[i.kind].one}</dd></div>
<div class="summary__row"><dt>Channel</dt><dd>${channelLabel(channels, i.channel_id)}</dd></div>
<div class="summary__row"><dt>Received</dt><dd>${when(i.received_at)}</dd></div>
<div class="summary__row"><dt>Id</dt><dd><code>${i.id}</code></dd></div>
</dl>
${marks(i)}
${answers(i, post)}
${conversationOf(i, conversation)}
<h2 class="heading heading--m">Replies</h2>
${pending ? live({ id: 'replies', url: path, seconds: 5, body: replies(i, platform) }) : html`<div id="replies">${replies(i, platform)}</div>`}
${replyable && o.details.suggests && suggest(path, o.suggested, o.canReply)}
${
  !o.canReply
    ? html`<p class="inset">Owners and admins reply.</p>`
    : !replyable
      ? html`<p class="inset">${platform} offers no way to answer this ${i.kind} from Herald: reply in ${platform} itself.</p>`
      : html`<form method="post" action="${path}/reply" novalidate>
<input type="hidden" name="token" value="${o.details.replyToken}">
${textArea({
  id: REPLY_FIELD,
  name: 'body',
  label: `Reply to ${i.author.handle}`,
  hint: `Published on ${platform} at once, as ${channelLabel(channels, i.channel_id)}; at most ${replyLimit.toLocaleString('en-GB')} characters.`,
  value: form.value,
  rows: 4,
  errors: form.errors,
})}
<button type="submit" class="button">Send reply</button>
</form>`
}`,
  });
}

/**
 * "Suggest a reply" (createGeneration's `reply` task) and what it suggested: the first fills the
 * reply box for those who reply; the rest (all of them for a member) are listed to copy from.
 */
function suggest(path: string, s: Suggested | undefined, canReply: boolean): SafeHtml {
  const listed = s ? (canReply ? s.bodies.slice(1) : s.bodies) : [];
  const by =
    s?.model === 'rules'
      ? "Written by Herald's rule-based engine from the comment's facts, not by a language model."
      : s
        ? `Written by the model ${s.model}.`
        : '';
  return html`<form method="post" action="${path}/suggest/reply" class="inline-form"><button type="submit" class="button button--secondary">Suggest a reply</button></form>
${
  s &&
  html`<div class="panel" id="suggestion" role="status"><p><strong>${canReply ? 'A suggested reply is in the box below: edit it before you send it.' : 'Suggested replies, for an owner or admin to send:'}</strong></p>${
    listed.length ? html`<ol class="parts">${listed.map((b) => html`<li><p>${b}</p></li>`)}</ol>` : ''
  }<p class="muted">${by} Nothing is sent until someone sends it.</p></div>`
}`;
}

/** Mark read / unread / archived: whichever the item is not. */
function marks(i: InboxItem): SafeHtml {
  const path = inboxItemPath(i.id);
  const act = (name: 'read' | 'unread' | 'archive', label: string) =>
    html`<form method="post" action="${path}/${name}" class="inline-form"><button type="submit" class="button button--secondary">${label}</button></form>`;
  return html`<div class="actions">
${i.status !== 'read' && act('read', i.status === 'archived' ? 'Move back to the inbox' : 'Mark as read')}
${i.status !== 'unread' && act('unread', 'Mark as unread')}
${i.status !== 'archived' && act('archive', 'Archive')}
</div>`;
}

/** The Herald post it answers: a link to its page and its text; or what it answers elsewhere. */
function answers(i: InboxItem, post: InboxDetails['post']): SafeHtml {
  if (i.kind === 'message') return html``;
  return html`<h2 class="heading heading--m">What it answers</h2>
${
  post
    ? html`<div class="panel"><p><a href="${postPath(post.id)}">${post.label}</a></p>${post.text && post.text !== post.label && html`<p>${excerpt(post.text, 500)}</p>`}</div>`
    : i.post_id
      ? html`<p>The Herald post <code>${i.post_id}</code>, since deleted.</p>`
      : i.kind === 'mention'
        ? html`<p class="muted">A mention of the account, not an answer to a Herald post.</p>`
        : html`<p class="muted">A post not published through Herald${i.in_reply_to ? html` (<code>${i.in_reply_to}</code> on ${platformName(i.platform)})` : ''}.</p>`
}`;
}

/** The other items of its conversation (the same conversation_id), oldest first. */
function conversationOf(i: InboxItem, others: readonly InboxItem[]): SafeHtml {
  if (!i.conversation_id) return html``;
  const all = [...others.filter((o) => o.id !== i.id), i].sort((a, b) =>
    a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0,
  );
  return html`<h2 class="heading heading--m">The conversation</h2>
${
  all.length < 2
    ? html`<p class="muted">Nothing else of this conversation is in the inbox.</p>`
    : html`<ol class="parts" id="conversation">${all.map(
        (c) =>
          html`<li${c.id === i.id ? html` aria-current="true"` : ''}><p><strong>${c.author.handle}</strong> <span class="muted">${when(c.created_at)}</span></p>
<p>${c.id === i.id ? html`${excerpt(c.text, 280)} <span class="tag">This item</span>` : html`<a href="${inboxItemPath(c.id)}">${excerpt(c.text, 280) || '(no text)'}</a>`}</p></li>`,
      )}</ol>`
}`;
}

function replies(i: InboxItem, platform: string): SafeHtml {
  if (!i.replies.length) return html`<p class="muted">No reply yet.</p>`;
  return html`<ol class="parts">${i.replies.map((r) => {
    return html`<li><p>${r.text}</p>
<p>${tagOf(STAGES, r.stage)} <span class="muted">${when(r.created_at)}</span>${
      r.stage === 'sent' && r.url ? html` · ${safeLink(r.url, html`See it on ${platform}`)}` : ''
    }</p>${r.error && html`<p><strong>Not sent</strong>: ${r.error.message}</p>`}</li>`;
  })}</ol>`;
}
