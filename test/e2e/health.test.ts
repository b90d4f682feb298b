import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { api, baseUrl } from './helpers.ts';

// GET /health and the running version on the local stack, and the operator's guide it serves.

const root = join(import.meta.dirname, '../..');
const release = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();

describe('GET /health', () => {
  it('answers 200 pass without a key: the table answers and the 1 s sweeper ran; names the release and commit', async () => {
    const res = await fetch(`${baseUrl()}/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/health+json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as {
      status: string;
      version: string;
      releaseId: string;
      checks: Record<string, Array<{ status: string; observedValue?: number }>>;
    };
    expect(body).toMatchObject({ status: 'pass', version: release, releaseId: commit });
    expect(body.checks['dynamodb:table']?.[0]?.status).toBe('pass');
    const sweeper = body.checks['sweeper:lastRun']?.[0];
    expect(sweeper?.status).toBe('pass');
    expect(sweeper?.observedValue).toBeLessThanOrEqual(3);
  });

  it('the served OpenAPI document names the same release and commit', async () => {
    const doc = await api('GET', '/v1/openapi.json');
    expect(doc.status).toBe(200);
    const info = doc.body.info as Record<string, unknown>;
    expect(info.version).toBe(release);
    expect(info['x-herald-commit']).toBe(commit);
  });
});

describe("the operator's guide", () => {
  it('serves docs/operator pages at /docs/operator/{page}', async () => {
    const res = await fetch(`${baseUrl()}/docs/operator/cli`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('Herald operator&#39;s guide');
    expect(text).toMatch(/<h1 id="[a-z-]+">/);
  });

  it('serves the alarms page and the runbooks the alarm descriptions link to, anchors included', async () => {
    for (const [page, anchor] of [
      ['alarms', 'publishingbroken'],
      ['runbooks', 'stream-replay'],
    ] as const) {
      const res = await fetch(`${baseUrl()}/docs/operator/${page}`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain(`id="${anchor}"`);
    }
  });

  it('answers an unknown page with a 404 problem', async () => {
    const res = await api('GET', '/docs/operator/no-such-page');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({
      code: 'resource_not_found',
      type: `${baseUrl()}/docs/api/problems/resource-not-found`,
    });
  });
});
