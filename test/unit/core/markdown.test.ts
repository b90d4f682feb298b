import { describe, expect, it } from 'vitest';
import { headingSlug, renderMarkdown } from '#core/markdown';
import { slug } from '../../support/doc-links.ts';

// The API guide's renderer: everything escaped, only safe links, GitHub's heading ids.

const render = (md: string, link: (href: string) => string | null = (h) => h) => renderMarkdown(md, link);

describe('renderMarkdown', () => {
  it('renders headings with GitHub ids (repeats numbered), tables, lists and code', () => {
    const { title, body } = render(
      '# Errors & codes\n\n## Problem codes\n\n| A | B |\n| --- | --- |\n| `x` | 1 |\n\n- one\n- two\n\n## Problem codes\n\n```json\n{"a": "<b>"}\n```\n',
    );
    expect(title).toBe('Errors & codes');
    expect(body.html).toContain('<h1 id="errors--codes">Errors &amp; codes</h1>');
    expect(body.html).toContain('<h2 id="problem-codes">');
    expect(body.html).toContain('<h2 id="problem-codes-1">');
    expect(body.html).toContain('<table>');
    expect(body.html).toContain('<code>x</code>');
    expect(body.html).toContain('<li>one</li>');
    expect(body.html).toContain('{&quot;a&quot;: &quot;&lt;b&gt;&quot;}');
  });

  it('computes the same heading ids as the repository link checker', () => {
    for (const h of [
      '`resource_conflict` cases',
      'Where the person lands (allowed landing origins)',
      'A [link](x.md) here',
    ])
      expect(headingSlug(h), h).toBe(slug(h));
  });

  it('turns raw HTML into text, block and inline', () => {
    const { body } = render('<script>alert(1)</script>\n\nA <img src=x onerror=alert(1)> b <b>c</b>\n');
    expect(body.html).not.toMatch(/<script|<img|<b>/);
    expect(body.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(body.html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('keeps only links of a safe kind, and only those the resolver maps', () => {
    const { body } = render(
      '[a](javascript:alert(1)) [b](data:text/html,x) [c](https://example.org/?q="x") [d](other.md) [e](//evil.example)',
      (href) => (href === 'other.md' ? '/docs/other' : href),
    );
    expect(body.html).not.toContain('javascript:');
    expect(body.html).not.toContain('data:');
    expect(body.html).not.toContain('//evil.example"');
    expect(body.html).toContain('<a href="https://example.org/?q=&quot;x&quot;">c</a>');
    expect(body.html).toContain('<a href="/docs/other">d</a>');
    expect(render('[gone](../README.md)', () => null).body.html).toBe('<p>gone</p>\n');
  });

  it('shows an image as its alt text (the guide serves no images)', () => {
    expect(render('![a <diagram>](../images/x.png)').body.html).toBe('<p>a &lt;diagram&gt;</p>\n');
  });

  it('escapes link titles and text', () => {
    const { body } = render('[x "y" <z>](https://example.org "t\\"<q>")');
    expect(body.html).toContain('title="t&quot;&lt;q&gt;"');
    expect(body.html).toContain('>x &quot;y&quot; &lt;z&gt;</a>');
  });
});
