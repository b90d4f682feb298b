// HTML for the console's server-rendered pages: a tagged template that escapes every value it is
// given, so a page is written as markup with holes and nothing a person typed can become markup.
// Already-rendered fragments (SafeHtml) nest as they are; there is deliberately no way to mark a
// string as safe from outside this module, but for the markdown renderer (renderedMarkdown).

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

/**
 * Text made safe for an element's content and for a quoted attribute value (both quote kinds, and
 * the backtick old browsers took as one).
 */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'`]/g, (c) => ESCAPES[c] as string);
}

const brand = Symbol('SafeHtml');

/** Markup this module produced: every interpolated value in it was escaped or was itself SafeHtml. */
export interface SafeHtml {
  readonly [brand]: true;
  readonly html: string;
}

const safe = (markup: string): SafeHtml => ({ [brand]: true, html: markup });

/**
 * The API guide's pages, as core/markdown.ts renders them: it escapes every text and attribute it
 * writes and turns raw HTML into text (its tests hold it to that). Nothing else may call this.
 */
export const renderedMarkdown = (markup: string): SafeHtml => safe(markup);

export const isSafeHtml = (value: unknown): value is SafeHtml =>
  typeof value === 'object' && value !== null && (value as { [brand]?: unknown })[brand] === true;

/** A value a template may hold: text and numbers are escaped, fragments nest, nothing renders as nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === null || value === undefined || value === false || value === true) return '';
  if (Array.isArray(value)) return value.map(render).join('');
  if (isSafeHtml(value)) return value.html;
  return escapeHtml(String(value));
}

/**
 * The tagged template: html`<p>${name}</p>` escapes `name`. Arrays of values are joined (a list's
 * rows), booleans, null and undefined render as nothing (`${cond && html`…`}`).
 */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i] as HtmlValue) + (strings[i + 1] ?? '');
  return safe(out);
}

const ATTRIBUTE_NAME = /^[a-z][a-z0-9-]*$/;

/**
 * Attributes from an object, each value escaped and double-quoted: `true` writes the bare name
 * (`checked`), `false`, null and undefined leave the attribute out. Names are checked, not escaped:
 * they come from the code, never from a person.
 */
export function attrs(values: Record<string, string | number | boolean | null | undefined>): SafeHtml {
  let out = '';
  for (const [name, value] of Object.entries(values)) {
    if (!ATTRIBUTE_NAME.test(name)) throw new Error(`not an attribute name: ${name}`);
    if (value === false || value === null || value === undefined) continue;
    out += value === true ? ` ${name}` : ` ${name}="${escapeHtml(String(value))}"`;
  }
  return safe(out);
}

/** A whole document, as the response body. */
export function documentOf(page: SafeHtml): string {
  return `<!doctype html>\n${page.html}`;
}
