import { Marked } from 'marked';
import { escapeHtml, renderedMarkdown, type SafeHtml } from './html.ts';

// The API guide's markdown as HTML (marked, GitHub-flavoured). The pages are ours, but the
// renderer treats them as untrusted all the same: every text, code and attribute is escaped, raw
// HTML comes out as text, images as their alt text, and a link survives only when the caller maps
// it to an address of a safe kind. Headings get GitHub's ids, so `page.md#anchor` links keep working.

/** Where a link of the source goes on the served page, or null to keep only its text. */
export type LinkResolver = (href: string) => string | null;

export interface RenderedMarkdown {
  /** The first level-1 heading's text ('' without one). */
  readonly title: string;
  readonly body: SafeHtml;
}

/** GitHub's heading id; the repository's link checker (test/support/doc-links.ts) uses this one. */
export function headingSlug(text: string): string {
  return text
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Relative paths, fragments, http(s) and mailto; never javascript:, data: or the like. */
const SAFE_HREF = /^(?:https?:\/\/|mailto:|\/(?!\/)|#)/i;

export function renderMarkdown(source: string, resolveLink: LinkResolver): RenderedMarkdown {
  const seen = new Map<string, number>();
  let title = '';
  const marked = new Marked({
    gfm: true,
    async: false,
    renderer: {
      html: ({ text }) => escapeHtml(text),
      image: ({ text }) => escapeHtml(text),
      heading({ tokens, depth, text }) {
        const base = headingSlug(text);
        const n = seen.get(base) ?? 0;
        seen.set(base, n + 1);
        const id = n === 0 ? base : `${base}-${n}`;
        const inner = this.parser.parseInline(tokens);
        if (depth === 1 && !title) title = this.parser.parseInline(tokens, this.parser.textRenderer);
        return `<h${depth} id="${escapeHtml(id)}">${inner}</h${depth}>\n`;
      },
      link({ href, title: linkTitle, tokens }) {
        const inner = this.parser.parseInline(tokens);
        const to = resolveLink(href);
        if (to === null || !SAFE_HREF.test(to)) return inner;
        const titleAttr = linkTitle ? ` title="${escapeHtml(linkTitle)}"` : '';
        return `<a href="${escapeHtml(to)}"${titleAttr}>${inner}</a>`;
      },
    },
  });
  const out = marked.parse(source) as string;
  return { title: decodeEntities(title), body: renderedMarkdown(out) };
}

// The text renderer escapes what it returns; the title is used as text again (and escaped then).
const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
};
const decodeEntities = (text: string) => text.replace(/&(?:amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e] ?? e);
