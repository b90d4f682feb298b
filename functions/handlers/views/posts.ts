import { type ERROR_CATEGORIES, LIMITS, POST_STATUSES, type PostStatus } from '#core/constants';
import { formatOf } from '#core/formats';
import { type HtmlValue, html, type SafeHtml } from '#core/html';
import { CAPABILITIES, FORMATS, type Platform } from '#core/platforms';
import { MAX_REJECT_REASON, type PartRecord, type PostRecord } from '#core/posts';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { ApiKeyView } from '#usecases/api-keys';
import type { PostDetails, PostList } from '#usecases/post-acts';
import { errorSummary, type FieldError, textArea } from './forms.ts';
import { platformName } from './home.ts';
import { type Frame, layout, live, when } from './layout.ts';
import { dataTable, tagOf } from './table.ts';

// Posts: the list (filters by status and channel in a GET form, paged by the API's cursor), a post
// with its variants, schedule and per-channel outcome, and the acts of owners and admins: approve,
// reject (its own page, with the reason), reschedule, publish now, delete (its own confirmation
// page) and edit the texts (its own form page). Every act's form carries the version and status
// the page showed.

export const POSTS_PATH = `${CONSOLE_PATH}/posts`;
export const postPath = (id: string) => `${POSTS_PATH}/${encodeURIComponent(id)}`;

/** The form fields' ids (the error summary links to them). */
export const POST_FIELDS = {
  scheduledAt: 'post-scheduled-at',
  reason: 'reject-reason',
  title: 'edit-title',
  body: 'edit-body',
} as const;
/** The id of the edit form's field for variant `i` (error pointers `/variants/<i>/…` land there). */
export const variantField = (i: number) => `edit-variant-${i}`;

const STATUS: Record<PostStatus, { label: string; tag: string }> = {
  draft: { label: 'Draft', tag: 'tag--grey' },
  scheduled: { label: 'Scheduled', tag: '' },
  publishing: { label: 'Publishing', tag: 'tag--yellow' },
  published: { label: 'Published', tag: 'tag--green' },
  failed: { label: 'Failed', tag: 'tag--red' },
  needs_approval: { label: 'Needs approval', tag: 'tag--yellow' },
};

const STAGES: Record<string, { label: string; tag: string }> = {
  queued: { label: 'Queued', tag: 'tag--grey' },
  sending: { label: 'Sending', tag: 'tag--yellow' },
  retrying: { label: 'Retrying', tag: 'tag--yellow' },
  published: { label: 'Published', tag: 'tag--green' },
  failed: { label: 'Failed', tag: 'tag--red' },
  removing: { label: 'Removing', tag: 'tag--yellow' },
  removed: { label: 'Removed', tag: 'tag--grey' },
};

export const statusTag = (s: PostStatus) => tagOf(STATUS, s);

type Channel = PostList['channels'][number];

/** A channel as people know it: platform and handle (or its id, if it is gone). */
export function channelName(channels: readonly Channel[], id: string): string {
  const c = channels.find((ch) => ch.id === id);
  return c ? `${platformName(c.platform)} ${c.handle}` : id;
}

/** What a post is about, in a line. */
export function postLabel(p: PostRecord): string {
  const text = p.title ?? p.body ?? p.variants[0]?.body ?? p.id;
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** A URL shown as a link only when it is http(s); anything else is text. */
export function safeLink(url: string | null, label: HtmlValue): SafeHtml {
  if (!url) return html``;
  let ok = false;
  try {
    const u = new URL(url);
    ok = u.protocol === 'https:' || u.protocol === 'http:';
  } catch {
    ok = false;
  }
  return ok ? html`<a href="${url}" rel="noopener noreferrer">${label}</a>` : html`<code>${url}</code>`;
}

/** Who created the post: the key (its name when it still exists) and whether through MCP. */
export function createdBy(p: PostRecord, keys: readonly ApiKeyView[]): SafeHtml {
  const origin = p.created_by;
  if (!origin) return html`<span class="muted">Not recorded</span>`;
  const key = keys.find((k) => k.id === origin.key_id);
  return html`${key?.name ? html`Key “${key.name}”` : 'Key'} <code>${origin.key_id}</code> <span class="tag">${origin.via === 'mcp' ? 'via MCP' : 'via the REST API'}</span>`;
}

/** The hidden fields of every act: the post as this page shows it. */
const shownFields = (p: PostRecord) =>
  html`<input type="hidden" name="version" value="${p.version}"><input type="hidden" name="status" value="${p.status}">`;

/** A refused act's reason at the top of the page it re-renders. */
function refusal(message: string | null | undefined): SafeHtml {
  if (!message) return html``;
  return html`<div class="error-summary" role="alert" tabindex="-1" data-autofocus aria-labelledby="refusal-title">
<h2 id="refusal-title" class="error-summary__title">That could not be done</h2>
<p>${message}</p>
</div>`;
}

// ---- the list ----------------------------------------------------------------------------------

export interface PostFilters {
  status?: PostStatus | undefined;
  channel?: string | undefined;
}

const filterQuery = (f: PostFilters, cursor?: string) => {
  const q = new URLSearchParams();
  if (f.status) q.set('status', f.status);
  if (f.channel) q.set('channel', f.channel);
  if (cursor) q.set('cursor', cursor);
  const s = q.toString();
  return s ? `${POSTS_PATH}?${s}` : POSTS_PATH;
};

export function postsPage(o: {
  frame: Frame;
  list: PostList;
  filters: PostFilters;
  paged: boolean;
  message?: string | null;
}): SafeHtml {
  const { list, filters } = o;
  return layout({
    title: 'Posts',
    frame: o.frame,
    section: 'posts',
    message: o.message ?? null,
    body: html`<h1 class="heading">Posts</h1>
<p class="lead">Every post of this workspace, newest first: what it says where, when, and how each channel's delivery went.</p>
<form method="get" action="${POSTS_PATH}" class="inline-form" role="search" aria-label="Filter posts">
<label class="label" for="filter-status">Status</label>
<select class="select" id="filter-status" name="status">
<option value="">Any status</option>
${POST_STATUSES.map((s) => html`<option value="${s}"${filters.status === s ? html` selected` : ''}>${STATUS[s].label}</option>`)}
</select>
<label class="label" for="filter-channel">Channel</label>
<select class="select" id="filter-channel" name="channel">
<option value="">Any channel</option>
${list.channels.map((c) => html`<option value="${c.id}"${filters.channel === c.id ? html` selected` : ''}>${platformName(c.platform)} ${c.handle}</option>`)}
</select>
<button type="submit" class="button button--secondary">Filter</button>
</form>
${
  list.posts.length
    ? dataTable({
        id: 'posts',
        caption: o.paged ? 'Older posts' : 'Latest posts',
        columns: [{ label: 'Post' }, { label: 'Status' }, { label: 'Channels' }, { label: 'When' }],
        rows: list.posts.map((p) => [
          html`<a href="${postPath(p.id)}">${postLabel(p)}</a>`,
          statusTag(p.status),
          html`<ul class="plain">${p.variants.map((v) => html`<li>${channelName(list.channels, v.channel_id)}</li>`)}</ul>`,
          p.published_at
            ? html`Published ${when(p.published_at)}`
            : p.scheduled_at
              ? html`For ${when(p.scheduled_at)}`
              : html`Created ${when(p.created_at)}`,
        ]),
      })
    : html`<p>No posts${filters.status || filters.channel ? ' match these filters' : ''}${o.paged ? ' on this page' : ''}.</p>`
}
${filters.channel && html`<p class="hint">The channel filter looks through the posts a few pages at a time; when a page shows few or none, older ones may still follow.</p>`}
<nav class="pager" aria-label="Post pages">
${o.paged && html`<a href="${filterQuery(filters)}">Newest posts</a>`}
${list.next && html`<a href="${filterQuery(filters, list.next)}" rel="next">Older posts</a>`}
</nav>`,
  });
}

// ---- one post ----------------------------------------------------------------------------------

export interface RescheduleForm {
  value?: string | undefined;
  errors: readonly FieldError[];
}

export function postPage(o: {
  frame: Frame;
  details: PostDetails;
  canAct: boolean;
  message?: string | null;
  /** A refused act's reason (the page re-rendered with the post as it is now). */
  refused?: string | null;
  reschedule?: RescheduleForm;
}): SafeHtml {
  const { post: p, channels, keys, settings } = o.details;
  const form = o.reschedule ?? { errors: [] };
  const live_ = p.status === 'publishing' || p.status === 'scheduled';
  const outcome = html`<dl class="summary">
<div class="summary__row"><dt>Status</dt><dd>${statusTag(p.status)}</dd></div>
<div class="summary__row"><dt>Schedule</dt><dd>${
    p.published_at
      ? html`Published ${when(p.published_at)}`
      : p.scheduled_at
        ? html`${p.status === 'needs_approval' ? 'Asks to publish' : p.status === 'scheduled' ? 'Publishes' : 'Was scheduled for'} ${when(p.scheduled_at)}`
        : p.status === 'needs_approval'
          ? 'Asks to publish as soon as it is approved'
          : html`<span class="muted">Not scheduled</span>`
  }</dd></div>
</dl>
${deliveries(p, channels)}`;
  return layout({
    title: form.errors.length || o.refused ? `Error: ${postLabel(p)}` : postLabel(p),
    frame: o.frame,
    section: p.status === 'needs_approval' ? 'approvals' : 'posts',
    message: o.message ?? null,
    body: html`${refusal(o.refused)}${errorSummary(form.errors)}
<p><a href="${POSTS_PATH}">All posts</a></p>
<h1 class="heading">${postLabel(p)}</h1>
${live_ ? live({ id: 'outcome', url: postPath(p.id), body: outcome }) : html`<div id="outcome">${outcome}</div>`}
<h2 class="heading heading--m">Where it publishes</h2>
${variants(p, channels)}
<h2 class="heading heading--m">History</h2>
<dl class="summary">
<div class="summary__row"><dt>Created</dt><dd>${when(p.created_at)} by ${createdBy(p, keys)}</dd></div>
${p.decision && html`<div class="summary__row"><dt>${p.decision.outcome === 'approved' ? 'Approved' : 'Rejected'}</dt><dd>${when(p.decision.at)} by ${p.decision.email ?? (p.decision.by === 'operator' ? 'the operator' : p.decision.by)}${p.decision.reason && html`<p>Reason: “${p.decision.reason}”</p>`}</dd></div>`}
<div class="summary__row"><dt>Last changed</dt><dd>${when(p.updated_at)}</dd></div>
<div class="summary__row"><dt>Id</dt><dd><code>${p.id}</code></dd></div>
</dl>
${o.canAct ? acts(p, settings.dangerous_ops, form) : html`<p class="inset">Owners and admins approve, reschedule, publish and delete posts.</p>`}
${o.canAct && unpublishAct(p, channels, settings.dangerous_ops)}`,
  });
}

function deliveries(p: PostRecord, channels: readonly Channel[]): SafeHtml {
  const rows = p.variants.flatMap((v) => {
    const d = p.deliveries[v.channel_id];
    return d ? [{ v, d }] : [];
  });
  if (!rows.length)
    return html`<p class="muted">No delivery yet: each channel's outcome shows here once the post starts publishing.</p>`;
  return dataTable({
    id: 'deliveries',
    caption: 'Delivery to each channel',
    columns: [{ label: 'Channel' }, { label: 'Stage' }, { label: 'Attempts' }, { label: 'Outcome' }],
    rows: rows.map(({ v, d }) => [
      channelName(channels, v.channel_id),
      tagOf(STAGES, d.stage),
      String(d.attempts),
      d.stage === 'published'
        ? html`${d.url ? safeLink(d.url, html`See it on ${platformName(channelPlatform(channels, v.channel_id))}`) : html`<span class="muted">Published (the platform gave no link)</span>`} <span class="muted">${when(d.updated_at)}</span>`
        : d.error
          ? html`<p><strong>${categoryWords(d.error_category)}</strong>: ${d.error}</p><p class="muted">${when(d.updated_at)}</p>`
          : html`<span class="muted">${when(d.updated_at)}</span>`,
    ]),
  });
}

/** A failed or retrying delivery's category, as a person reads it (the API keeps the code). */
const CATEGORY_WORDS: Record<(typeof ERROR_CATEGORIES)[number], string> = {
  auth_expired: 'The channel needs connecting again',
  user_content: 'The platform refused the text',
  media_error: 'The platform refused the media',
  rate_limited: 'The platform asked to wait',
  platform_rejected: 'The platform refused the post',
  system: 'Not delivered',
};
const categoryWords = (category: string | null | undefined) =>
  (CATEGORY_WORDS as Record<string, string | undefined>)[category ?? ''] ?? 'Not delivered';

const channelPlatform = (channels: readonly Channel[], id: string) =>
  channels.find((c) => c.id === id)?.platform ?? 'the platform';

function variants(p: PostRecord, channels: readonly Channel[]): SafeHtml {
  if (!p.variants.length) return html`<p>No variants yet.</p>`;
  return html`${p.variants.map((v) => {
    const d = p.deliveries[v.channel_id];
    const platform = platformName(channelPlatform(channels, v.channel_id));
    return html`<div class="panel">
<h3 class="heading heading--s">${channelName(channels, v.channel_id)}</h3>
${shape(v, channels.find((c) => c.id === v.channel_id)?.platform)}
<p>${v.body}</p>
${mediaList(v.media)}
${
  v.thread?.length
    ? html`<h4 class="heading heading--s">Thread: ${v.thread.length} ${v.thread.length === 1 ? 'reply' : 'replies'} under it</h4>
<ol class="parts">${v.thread.map(
        (item, j) =>
          html`<li><p>${item.body}</p>${mediaList(item.media)}${partOutcome(d?.thread?.[j], platform)}</li>`,
      )}</ol>`
    : ''
}
${
  v.first_comment
    ? html`<h4 class="heading heading--s">First comment</h4>
<div class="parts"><p>${v.first_comment.body}</p>${partOutcome(d?.first_comment ?? undefined, platform)}</div>`
    : ''
}
</div>`;
  })}`;
}

const FORMAT_NAMES: Record<string, string> = {
  feed: 'Feed post',
  story: 'Story',
  reel: 'Reel',
  video: 'Video',
  short: 'Short',
  post: 'Post',
  document: 'Document (PDF carousel)',
};

/** "1 day", "3 hours", "90 minutes": a poll's duration as people say it. */
function duration(minutes: number): string {
  const unit = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  if (minutes % 1440 === 0) return unit(minutes / 1440, 'day');
  if (minutes % 60 === 0) return unit(minutes / 60, 'hour');
  return unit(minutes, 'minute');
}

/**
 * What kind of post the variant is on its platform: the format (where the platform has several),
 * the poll (its choices and duration) and TikTok's post mode.
 */
function shape(v: PostRecord['variants'][number], platform: Platform | undefined): SafeHtml {
  if (!platform) return html``;
  const rows: Array<[string, HtmlValue]> = [];
  const format = FORMATS[platform].length ? formatOf(platform, v.options) : null;
  if (format) rows.push(['Format', FORMAT_NAMES[format] ?? format]);
  const poll = v.options.poll as { choices?: unknown; duration_minutes?: unknown } | undefined;
  if (poll && Array.isArray(poll.choices)) {
    const minutes = typeof poll.duration_minutes === 'number' ? poll.duration_minutes : null;
    rows.push([
      'Poll',
      html`<ol class="plain">${poll.choices.map((c) => html`<li>${String(c)}</li>`)}</ol>${minutes ? html`<p class="muted">Open for ${duration(minutes)}</p>` : html`<p class="muted">Open for the platform's default time</p>`}`,
    ]);
  }
  if (platform === 'tiktok') {
    const mode = v.options.post_mode;
    rows.push([
      'Post mode',
      mode === 'inbox'
        ? 'Inbox: sent to the creator to finish in the TikTok app'
        : mode === 'direct'
          ? 'Direct: published at once'
          : 'The platform app’s default (inbox until the app is audited)',
    ]);
  }
  if (!rows.length) return html``;
  return html`<dl class="summary">${rows.map(([label, value]) => html`<div class="summary__row"><dt>${label}</dt><dd>${value}</dd></div>`)}</dl>`;
}

function mediaList(media: PostRecord['variants'][number]['media']): SafeHtml {
  if (!media.length) return html``;
  return html`<ul class="plain">${media.map((m) => html`<li>${m.type}: ${safeLink(m.url, m.alt || 'media without a description')}</li>`)}</ul>`;
}

/** A thread item's or first comment's own outcome, once its delivery has one. */
function partOutcome(part: PartRecord | undefined, platform: string): SafeHtml {
  if (!part) return html``;
  return html`<p>${tagOf(STAGES, part.stage)} ${
    part.stage === 'published' && part.url
      ? safeLink(part.url, html`See it on ${platform}`)
      : part.error
        ? html`${part.error}`
        : ''
  }</p>`;
}

/** The statuses whose text may be edited (updatePost's rule). */
const EDITABLE_STATUSES: ReadonlySet<string> = new Set(['draft', 'scheduled', 'failed', 'needs_approval']);

const DANGEROUS_OFF = `Publishing now and deleting need Dangerous AI operations, which is off for this workspace. An owner turns it on in Settings.`;

function acts(p: PostRecord, dangerous: boolean, form: RescheduleForm): SafeHtml {
  const path = postPath(p.id);
  const canReschedule = p.status === 'draft' || p.status === 'scheduled' || p.status === 'failed';
  const canPublish = canReschedule;
  const canDelete = p.status !== 'publishing';
  const canEdit = EDITABLE_STATUSES.has(p.status) && p.variants.length > 0;
  const error = form.errors.find((e) => e.field === POST_FIELDS.scheduledAt);
  const id = POST_FIELDS.scheduledAt;
  return html`<h2 class="heading heading--m">Act on this post</h2>
${canEdit && html`<p><a href="${path}?act=edit" class="button button--secondary">Edit text…</a></p>`}
${
  p.status === 'needs_approval' &&
  html`<form method="post" action="${path}/approve" class="actions">
${shownFields(p)}
<button type="submit" class="button">Approve</button>
<a href="${path}?act=reject" class="link">Reject…</a>
</form>`
}
${
  canReschedule &&
  html`<form method="post" action="${path}/reschedule" novalidate>
${shownFields(p)}
<div class="field${error ? ' field--error' : ''}">
<label class="label" for="${id}">New time (UTC)</label>
<p class="hint" id="${id}-hint">When it should publish, in UTC. It must be in the future.</p>
${error && html`<p class="field-error" id="${id}-error"><span class="visually-hidden">Error:</span> ${error.message}</p>`}
<input class="input" id="${id}" name="scheduled_at" type="datetime-local" value="${form.value ?? (p.scheduled_at ? p.scheduled_at.slice(0, 16) : '')}" aria-describedby="${id}-hint${error ? ` ${id}-error` : ''}"${error ? html` aria-invalid="true"` : ''}>
</div>
<button type="submit" class="button button--secondary">${p.status === 'scheduled' ? 'Reschedule' : 'Schedule'}</button>
</form>`
}
${
  (canPublish || canDelete) &&
  html`${!dangerous && html`<p class="inset" id="dangerous-off">${DANGEROUS_OFF}</p>`}
<div class="actions">
${
  canPublish &&
  html`<form method="post" action="${path}/publish" class="inline-form">
${shownFields(p)}
<button type="submit" class="button button--secondary"${dangerous ? '' : html` disabled aria-describedby="dangerous-off"`}>Publish now</button>
</form>`
}
${
  canDelete &&
  (dangerous
    ? html`<a href="${path}?act=delete" class="button button--warning">Delete…</a>`
    : html`<button type="button" class="button button--warning" disabled aria-describedby="dangerous-off">Delete…</button>`)
}
</div>`
}`;
}

// ---- confirmations ------------------------------------------------------------------------------

export function rejectPage(o: {
  frame: Frame;
  details: PostDetails;
  reason?: string | undefined;
  errors?: readonly FieldError[];
}): SafeHtml {
  const p = o.details.post;
  const errors = o.errors ?? [];
  return layout({
    title: errors.length ? 'Error: Reject this post?' : 'Reject this post?',
    frame: o.frame,
    section: 'approvals',
    body: html`${errorSummary(errors)}
<h1 class="heading">Reject “${postLabel(p)}”?</h1>
<p class="lead">It goes back to draft and never publishes. Your reason is kept on the post and in the audit log, for whoever created it.</p>
<form method="post" action="${postPath(p.id)}/reject" novalidate>
${shownFields(p)}
${textArea({
  id: POST_FIELDS.reason,
  name: 'reason',
  label: 'Reason',
  hint: `Why it should not publish, at most ${MAX_REJECT_REASON} characters.`,
  value: o.reason,
  maxlength: MAX_REJECT_REASON,
  errors,
})}
<div class="actions">
<button type="submit" class="button button--warning">Reject post</button>
<a href="${postPath(p.id)}" class="link">Cancel</a>
</div>
</form>`,
  });
}

export function deletePage(o: { frame: Frame; details: PostDetails }): SafeHtml {
  const p = o.details.post;
  return layout({
    title: 'Delete this post?',
    frame: o.frame,
    section: 'posts',
    body: html`<h1 class="heading">Delete “${postLabel(p)}”?</h1>
<p class="lead">It is removed from Herald and will not publish. What it already published stays on the platforms.</p>
<form method="post" action="${postPath(p.id)}/delete" class="actions">
${shownFields(p)}
<button type="submit" class="button button--warning">Delete post</button>
<a href="${postPath(p.id)}" class="link">Cancel</a>
</form>`,
  });
}

/** The edit form's values: as the person typed them (a refused save), or the post's own. */
export interface EditValues {
  title: string;
  body: string;
  variants: ReadonlyMap<string, string>;
}

export function editPage(o: {
  frame: Frame;
  details: PostDetails;
  values?: EditValues | undefined;
  errors?: readonly FieldError[];
}): SafeHtml {
  const { post: p, channels } = o.details;
  const errors = o.errors ?? [];
  const value = (channelId: string, fallback: string) => o.values?.variants.get(channelId) ?? fallback;
  const published = (channelId: string) => {
    const d = p.deliveries[channelId];
    return d?.stage === 'published' || (d?.external_id ?? null) !== null;
  };
  return layout({
    title: errors.length ? 'Error: Edit this post' : 'Edit this post',
    frame: o.frame,
    section: p.status === 'needs_approval' ? 'approvals' : 'posts',
    body: html`${errorSummary(errors)}
<h1 class="heading">Edit “${postLabel(p)}”</h1>
<p class="lead">Change what it says; its schedule, media and options stay as they are.${
      o.details.settings.approval_required && (p.status === 'scheduled' || p.status === 'needs_approval')
        ? ' Approval is required in this workspace: a changed post waits for approval again.'
        : ''
    }</p>
<form method="post" action="${postPath(p.id)}/edit" novalidate>
${shownFields(p)}
${textArea({
  id: POST_FIELDS.title,
  name: 'title',
  label: 'Title (optional)',
  hint: 'For you and your team; not published.',
  value: o.values?.title ?? p.title ?? '',
  maxlength: LIMITS.title,
  rows: 1,
  errors,
})}
${textArea({
  id: POST_FIELDS.body,
  name: 'body',
  label: 'Shared text (optional)',
  hint: 'The post’s own text; each channel publishes its variant below.',
  value: o.values?.body ?? p.body ?? '',
  maxlength: LIMITS.postBody,
  errors,
})}
${p.variants.map((v, i) =>
  published(v.channel_id)
    ? html`<div class="field"><p class="label">${channelName(channels, v.channel_id)}</p><p class="hint">Already published there: it stays as it is.</p><p>${v.body}</p><input type="hidden" name="variant:${v.channel_id}" value="${v.body}"></div>`
    : textArea({
        id: variantField(i),
        name: `variant:${v.channel_id}`,
        label: `Text for ${channelName(channels, v.channel_id)}`,
        hint: 'Checked against the platform’s limits when you save.',
        value: value(v.channel_id, v.body),
        maxlength: LIMITS.variantBody,
        rows: 6,
        errors,
      }),
)}
<div class="actions">
<button type="submit" class="button">Save</button>
<a href="${postPath(p.id)}" class="link">Cancel</a>
</div>
</form>`,
  });
}

// ---- unpublishing ----------------------------------------------------------------------------------

/** The deliveries an unpublish would take down, and those it cannot (Instagram, TikTok). */
function removable(p: PostRecord, channels: readonly Channel[]) {
  const published = p.variants.flatMap((v) => {
    const d = p.deliveries[v.channel_id];
    return d?.stage === 'published' ? [v.channel_id] : [];
  });
  const platformOf = (id: string) => channels.find((c) => c.id === id)?.platform;
  const can = (id: string) => {
    const platform = platformOf(id);
    return !platform || CAPABILITIES[platform].unpublish;
  };
  return { removable: published.filter(can), kept: published.filter((id) => !can(id)) };
}

/** Unpublish…: while something is published on a platform that can remove it; a confirmation follows. */
function unpublishAct(p: PostRecord, channels: readonly Channel[], dangerous: boolean): SafeHtml | '' {
  if (p.status === 'publishing' || !removable(p, channels).removable.length) return '';
  return html`<h2 class="heading heading--m">Take it down</h2>
<p>Removes what this post published from the platforms (its replies and first comment too). Instagram and TikTok cannot remove posts: remove those in their apps.</p>
${!dangerous && html`<p class="inset" id="unpublish-off">Unpublishing needs Dangerous AI operations, which is off for this workspace. An owner turns it on in Settings.</p>`}
<div class="actions">${
    dangerous
      ? html`<a href="${postPath(p.id)}?act=unpublish" class="button button--warning">Unpublish…</a>`
      : html`<button type="button" class="button button--warning" disabled aria-describedby="unpublish-off">Unpublish…</button>`
  }</div>`;
}

export function unpublishPage(o: { frame: Frame; details: PostDetails }): SafeHtml {
  const { post: p, channels } = o.details;
  const { removable: ids, kept } = removable(p, channels);
  return layout({
    title: 'Unpublish this post?',
    frame: o.frame,
    section: 'posts',
    body: html`<h1 class="heading">Unpublish “${postLabel(p)}”?</h1>
<p class="lead">Herald asks each platform to delete what this post published there. This cannot be undone: publishing it again does not post it again.</p>
<ul class="plain">${ids.map((id) => html`<li>${channelName(channels, id)}: deleted from the platform</li>`)}${kept.map(
      (id) => html`<li>${channelName(channels, id)}: stays (the platform cannot remove posts)</li>`,
    )}</ul>
<form method="post" action="${postPath(p.id)}/unpublish" class="actions">
${shownFields(p)}
<button type="submit" class="button button--warning">Unpublish post</button>
<a href="${postPath(p.id)}" class="link">Cancel</a>
</form>`,
  });
}
