import { describe, expect, it } from 'vitest';
import { attrs, documentOf, escapeHtml, html, isSafeHtml } from '#core/html';

// The console's templates escape every value they are given: nothing a person types becomes markup.

describe('html tagged template', () => {
  it('escapes an interpolated script tag', () => {
    const name = '<script>alert(1)</script>';

    const out = html`<p>${name}</p>`.html;

    expect(out).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>');
    expect(out).not.toContain('<script');
  });

  it('escapes both quote kinds and the backtick, so a value cannot leave a quoted attribute', () => {
    const value = `" onfocus="alert(1)' x=\`y\``;

    const out = html`<input value="${value}"><input value='${value}'>`.html;

    expect(out).toBe(
      '<input value="&quot; onfocus=&quot;alert(1)&#39; x=&#96;y&#96;"><input value=\'&quot; onfocus=&quot;alert(1)&#39; x=&#96;y&#96;\'>',
    );
  });

  it('escapes ampersands first, so entities a person types stay text', () => {
    expect(escapeHtml('&lt;b&gt; & co')).toBe('&amp;lt;b&amp;gt; &amp; co');
  });

  it('nests fragments as they are and joins arrays of values, escaping strings inside them', () => {
    const rows = ['a<b', 'c&d'].map((v) => html`<li>${v}</li>`);

    const out = html`<ul>${rows}</ul>${['<x>', 1, html`<br>`]}`.html;

    expect(out).toBe('<ul><li>a&lt;b</li><li>c&amp;d</li></ul>&lt;x&gt;1<br>');
  });

  it('renders booleans, null and undefined as nothing (conditional fragments)', () => {
    const show = false;

    const out = html`[${show && html`<b>x</b>`}${null}${undefined}${true}${0}]`.html;

    expect(out).toBe('[0]');
  });

  it('takes no look-alike object as markup: only what html produced is SafeHtml', () => {
    const forged = { html: '<script>alert(1)</script>' } as unknown as string;

    const out = html`${forged}`.html;

    expect(out).toBe('[object Object]');
    expect(isSafeHtml(forged)).toBe(false);
    expect(isSafeHtml(html`<b></b>`)).toBe(true);
  });
});

describe('attrs', () => {
  it('quotes and escapes each value, writes true as a bare name and leaves false, null and undefined out', () => {
    const out = attrs({
      value: '"><script>',
      checked: true,
      disabled: false,
      title: null,
      id: undefined,
      rows: 3,
    });

    expect(out.html).toBe(' value="&quot;&gt;&lt;script&gt;" checked rows="3"');
  });

  it('refuses an attribute name that is not a plain name', () => {
    expect(() => attrs({ 'onclick="x"': 'y' })).toThrow(/not an attribute name/);
  });
});

describe('documentOf', () => {
  it('prefixes the doctype', () => {
    expect(documentOf(html`<html></html>`)).toBe('<!doctype html>\n<html></html>');
  });
});
