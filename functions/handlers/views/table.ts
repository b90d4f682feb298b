import { type HtmlValue, html, type SafeHtml } from '#core/html';

// A data table: a caption, column headers, a row header per row. Wide screens see a table (that
// scrolls sideways in its own focusable region if it must); narrow ones see each row as a block of
// labelled lines (console.css), the labels taken from the columns.

export interface Column {
  label: string;
  /** A header for screen readers only (a column of actions). */
  hidden?: boolean;
}

export function dataTable(o: {
  id: string;
  caption: string;
  columns: readonly Column[];
  /** Each row's cells, one per column; the first is the row's header. */
  rows: ReadonlyArray<readonly HtmlValue[]>;
}): SafeHtml {
  const captionId = `${o.id}-caption`;
  return html`<div class="table-wrap" role="region" aria-labelledby="${captionId}" tabindex="0">
<table class="table" id="${o.id}">
<caption id="${captionId}" class="table__caption">${o.caption}</caption>
<thead><tr>${o.columns.map(
    (c) =>
      html`<th scope="col">${c.hidden ? html`<span class="visually-hidden">${c.label}</span>` : c.label}</th>`,
  )}</tr></thead>
<tbody>${o.rows.map(
    (cells) =>
      html`<tr>${cells.map((cell, i) =>
        i === 0
          ? html`<th scope="row">${cell}</th>`
          : html`<td${o.columns[i]?.hidden ? '' : html` data-label="${o.columns[i]?.label ?? ''}"`}><div class="table__value">${cell}</div></td>`,
      )}</tr>`,
  )}</tbody>
</table>
</div>`;
}

/** Herald's own ids (a prefix and a ULID) fit in this many characters; others may run far longer. */
const ID_SHOWN = 32;

/**
 * An id in a cell: whole when it is short, else its first characters with the whole in `title`
 * (a passkey's credential id would otherwise take the width of the columns beside it).
 */
export function idCode(id: string): SafeHtml {
  return id.length <= ID_SHOWN
    ? html`<code class="id">${id}</code>`
    : html`<code class="id" title="${id}">${id.slice(0, 16)}…</code>`;
}

/** How a status or stage is shown: its label, and the tag's colour class ('' for the default). */
export type TagStyles = Readonly<Record<string, { label: string; tag: string } | undefined>>;

/** A status or stage as a coloured tag; one the table does not know is shown as it is. */
export function tagOf(styles: TagStyles, key: string): SafeHtml {
  const st = styles[key];
  return html`<span class="tag ${st?.tag ?? ''}">${st?.label ?? key}</span>`;
}
