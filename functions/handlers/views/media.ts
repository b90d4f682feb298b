import type { MediaKind } from '#core/constants';
import { html, type SafeHtml } from '#core/html';
import type { MediaStatus } from '#core/media';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { MediaAsset, MediaDetails, MediaList } from '#usecases/console-media';
import type { AltTextSuggestion } from '#usecases/console-suggest';
import { refusal, textArea } from './forms.ts';
import { type Frame, layout, when } from './layout.ts';
import { safeLink } from './posts.ts';
import { dataTable, idCode, tagOf } from './table.ts';

// The media library: the workspace's uploaded and imported files, newest first, paged by the API's
// cursor; an asset's facts (kind, type, size, dimensions, duration or pages, status or why it
// failed) with links to the file and its poster. A ready image offers "Suggest alt text" on a plan
// with AI: the suggestion is shown to copy, nothing is saved (alt text is set on a post's media).

export const MEDIA_PATH = `${CONSOLE_PATH}/media`;
export const mediaPath = (id: string) => `${MEDIA_PATH}/${encodeURIComponent(id)}`;

/** The suggestion's read-only box (the page's answer to "Suggest alt text"). */
export const ALT_FIELD = 'alt-suggestion';

const KIND_LABELS: Record<MediaKind, string> = {
  image: 'Image',
  video: 'Video',
  audio: 'Audio',
  document: 'Document',
};

const STATUS: Record<MediaStatus, { label: string; tag: string }> = {
  pending: { label: 'Pending', tag: 'tag--yellow' },
  ready: { label: 'Ready', tag: 'tag--green' },
  failed: { label: 'Failed', tag: 'tag--red' },
};

const statusTag = (s: MediaStatus) => tagOf(STATUS, s);

/** A size for people: bytes below a kilobyte, else KB or MB to one decimal (1 KB = 1,000 bytes). */
export function sizeOf(bytes: number): string {
  if (bytes < 1_000) return `${bytes.toLocaleString('en-GB')} bytes`;
  if (bytes < 1_000_000) return `${(bytes / 1_000).toFixed(1)} KB`;
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** A pending upload's size is what was claimed (0 when not given): none shown until it is ready. */
const sizeShown = (a: MediaAsset) => (a.status === 'ready' || a.size_bytes > 0 ? sizeOf(a.size_bytes) : '—');

const mediaQuery = (cursor?: string) =>
  cursor ? `${MEDIA_PATH}?${new URLSearchParams({ cursor })}` : MEDIA_PATH;

export function mediaPage(o: {
  frame: Frame;
  list: MediaList;
  paged: boolean;
  message?: string | null;
}): SafeHtml {
  const { list } = o;
  const assets = list.assets.length
    ? dataTable({
        id: 'media',
        caption: o.paged ? 'Older media' : 'Latest media',
        columns: [
          { label: 'File' },
          { label: 'Kind' },
          { label: 'Size' },
          { label: 'Status' },
          { label: 'Added' },
        ],
        rows: list.assets.map((a) => [
          html`<a href="${mediaPath(a.id)}">${a.filename}</a>`,
          html`${KIND_LABELS[a.kind] ?? a.kind}<br><span class="muted">${a.content_type}</span>`,
          sizeShown(a),
          statusTag(a.status),
          when(a.created_at),
        ]),
      })
    : html`<p>No media${o.paged ? ' on this page' : ' yet: files uploaded or imported through the API show here'}.</p>`;
  return layout({
    title: 'Media',
    frame: o.frame,
    section: 'media',
    message: o.message ?? null,
    body: html`<h1 class="heading">Media</h1>
<p class="lead">The images, videos, audio and documents uploaded or imported for this workspace's posts, newest first. A post names a file by its URL.</p>
${assets}
<nav class="pager" aria-label="Media pages">
${o.paged && html`<a href="${mediaQuery()}">Newest media</a>`}
${list.next && html`<a href="${mediaQuery(list.next)}" rel="next">Older media</a>`}
</nav>`,
  });
}

const row = (label: string, value: SafeHtml | string) =>
  html`<div class="summary__row"><dt>${label}</dt><dd>${value}</dd></div>`;

export function mediaItemPage(o: {
  frame: Frame;
  details: MediaDetails;
  message?: string | null;
  refused?: string | null;
  suggested?: AltTextSuggestion;
}): SafeHtml {
  const { asset: a, suggests } = o.details;
  const path = mediaPath(a.id);
  const dimensions = a.width && a.height ? `${a.width} × ${a.height} pixels` : null;
  const canSuggest = suggests && a.status === 'ready' && a.kind === 'image';
  // The image itself, or a video's or document's poster: what a suggested alt text is checked against.
  const previewSrc = a.status !== 'ready' ? null : a.kind === 'image' ? a.url : a.poster_url;
  const preview = previewSrc
    ? { src: previewSrc, alt: `${a.kind === 'image' ? 'Preview' : 'Poster'} of ${a.filename}` }
    : null;
  return layout({
    title: o.refused ? `Error: ${a.filename}` : a.filename,
    frame: o.frame,
    section: 'media',
    message: o.message ?? null,
    body: html`${refusal(o.refused)}
<p><a href="${MEDIA_PATH}">Media</a></p>
<h1 class="heading">${a.filename}</h1>
<dl class="summary">
${row('Status', statusTag(a.status))}
${a.status === 'failed' && row('Why it failed', a.error ?? 'Herald did not record why.')}
${row('Kind', KIND_LABELS[a.kind] ?? a.kind)}
${row('Content type', html`<code>${a.content_type}</code>`)}
${row('Size', sizeShown(a))}
${dimensions && row('Dimensions', dimensions)}
${a.duration_sec !== null && row('Duration', `${a.duration_sec.toLocaleString('en-GB')} seconds`)}
${a.page_count !== null && row('Pages', a.page_count.toLocaleString('en-GB'))}
${row('Added', when(a.created_at))}
${a.source_url && row('Imported from', safeLink(a.source_url, a.source_url))}
${row('Id', idCode(a.id))}
</dl>
${preview && html`<p class="media-preview"><img src="${preview.src}" alt="${preview.alt}"></p>`}
${
  a.status === 'ready'
    ? html`<p>${safeLink(a.url, html`Open the file`)}${a.poster_url && html` · ${safeLink(a.poster_url, html`Open its poster image`)}`}</p>
<p class="hint">A post uses this file by naming its URL: <code>${a.url}</code></p>`
    : a.status === 'pending'
      ? html`<p class="inset">Not ready: the upload has not been completed, or Herald is still checking it.</p>`
      : ''
}
${canSuggest && suggest(path, o.suggested)}`,
  });
}

/** "Suggest alt text" (createGeneration's `alt_text` task) and, once asked, the suggestion to copy. */
function suggest(path: string, s: AltTextSuggestion | undefined): SafeHtml {
  const by =
    s?.model === 'rules'
      ? "Written by Herald's rule-based engine from the file's facts, not by a language model."
      : `Written by the model ${s?.model ?? ''}.`;
  return html`<h2 class="heading heading--m">Alt text</h2>
<form method="post" action="${path}/suggest/alt-text" class="inline-form"><button type="submit" class="button button--secondary">Suggest alt text</button></form>
${
  s &&
  html`<div class="panel" id="suggestion" role="status">
${textArea({
  id: ALT_FIELD,
  name: 'alt',
  label: 'Suggested alt text',
  hint: 'Select it and copy it into the post that uses this image; edit it there to say what matters in the picture.',
  value: s.alt,
  rows: 5,
  readonly: true,
})}
<p class="muted">${by} Nothing is saved: alt text is set on a post's media when the post is written.</p>
</div>`
}`;
}
