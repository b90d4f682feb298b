import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, brokenLinks, checkDocs, extractLinks, isRelative, slug } from '../../support/doc-links.ts';

// Every relative link in README.md, BENCHMARKS.md and docs/**: the file exists and its #anchor is
// one of the target's headings. The checker's own rules are pinned first, so a checker that
// accepted everything would fail here.

const root = resolve(import.meta.dirname, '../../..');

// Operator and architecture pages written on other branches of this change, linked ahead of their
// merge. Each entry is accepted only while its file is absent: once merged, delete it here.
describe('the docs link checker', () => {
  it('slugs headings as GitHub does', () => {
    expect(slug('Plans, rate limits and quotas')).toBe('plans-rate-limits-and-quotas');
    expect(slug('Recovery after `kill -9`')).toBe('recovery-after-kill--9');
    expect(slug('Admin CLI start (issue 21)')).toBe('admin-cli-start-issue-21');
    expect(slug('The `Idempotency-Key` header')).toBe('the-idempotency-key-header');
    expect(slug('Where the person lands: allowed landing origins')).toBe(
      'where-the-person-lands-allowed-landing-origins',
    );
    expect(slug('[MCP](mcp.md) and **webhooks**')).toBe('mcp-and-webhooks');
    expect(slug('snake_case stays')).toBe('snake_case-stays');
  });

  it('numbers repeated headings and ignores headings inside code blocks', () => {
    const md = '# Top\n## Notes\n```sh\n# not a heading\n```\n## Notes\n### Notes\n';
    expect([...anchors(md)]).toEqual(['top', 'notes', 'notes-1', 'notes-2']);
  });

  it('finds inline links, images and reference definitions, not code', () => {
    const md = [
      'See [posts](api/posts.md#approval) and ![shot](images/a.png "title").',
      '`[not](a-link.md)` and [web](https://example.com).',
      '```',
      '[also not](x.md)',
      '```',
      '[ref]: operator/deploy.md',
    ].join('\n');
    expect(extractLinks(md)).toEqual([
      { target: 'api/posts.md#approval', line: 1 },
      { target: 'images/a.png', line: 1 },
      { target: 'https://example.com', line: 2 },
      { target: 'operator/deploy.md', line: 6 },
    ]);
    expect(isRelative('https://example.com')).toBe(false);
    expect(isRelative('mailto:ops@example.com')).toBe(false);
    expect(isRelative('../README.md')).toBe(true);
    expect(isRelative('#top')).toBe(true);
  });

  it('reports a missing file, a missing anchor and an anchor into a non-Markdown file', () => {
    const files: Record<string, string> = {
      '/r/docs/README.md': '# Index\n## Operators\n',
      '/r/docs/openapi.json': '{}',
    };
    const io = { exists: (p: string) => p in files, read: (p: string) => files[p] ?? '' };
    const md = [
      '[ok](README.md#operators)',
      '[self](#local)',
      '## Local',
      '[gone](gone.md)',
      '[no anchor](README.md#deploy)',
      '[json](openapi.json#paths)',
      '[json ok](openapi.json)',
    ].join('\n');
    const broken = brokenLinks('/r/docs/page.md', md, {
      exists: (p) => p === '/r/docs/page.md' || io.exists(p),
      read: (p) => (p === '/r/docs/page.md' ? md : io.read(p)),
    });
    expect(broken.map((b) => [b.line, b.reason])).toEqual([
      [4, 'no such file: gone.md'],
      [5, 'no heading "#deploy" in README.md'],
      [6, 'an anchor into a file that is not Markdown: openapi.json#paths'],
    ]);
  });

  it('README.md, BENCHMARKS.md and docs/** have no broken relative link', () => {
    expect(checkDocs(root)).toEqual([]);
  });
});
