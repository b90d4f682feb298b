import { describe, expect, it } from 'vitest';
import { api, baseUrl } from './helpers.ts';

// The API guide the local stack serves, over HTTP: a problem's `type` URI, followed, answers with
// that code's page, and the guide's pages link to each other.

const page = async (url: string) => {
  const res = await fetch(url);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    csp: res.headers.get('content-security-policy'),
    text: await res.text(),
  };
};

describe('problem types', () => {
  it("point at the deployment's own problem page, which answers 200 with that code", async () => {
    const res = await api('GET', '/v1/posts');
    expect(res.status).toBe(401);
    const type = res.body.type as string;
    expect(type).toBe(`${baseUrl()}/docs/api/problems/authentication-required`);
    const followed = await page(type);
    expect(followed.status).toBe(200);
    expect(followed.type).toBe('text/html; charset=utf-8');
    expect(followed.csp).toContain("default-src 'none'");
    expect(followed.text).toContain('<h1>Authentication required</h1>');
    expect(followed.text).toContain('<code>authentication_required</code>');
    expect(followed.text).toContain('<dd>401</dd>');
  });

  it('are the same in the OpenAPI document the deployment serves, and every one answers', async () => {
    const doc = await api('GET', '/v1/openapi.json');
    const types = new Set(
      [...doc.text.matchAll(/"type":"([^"]*\/problems\/[^"]*)"/g)].map((m) => m[1] as string),
    );
    expect(types.size).toBeGreaterThan(10);
    for (const type of types) {
      expect(type.startsWith(`${baseUrl()}/docs/api/problems/`), type).toBe(true);
      expect((await page(type)).status, type).toBe(200);
    }
  });
});

describe('the guide', () => {
  it('lists its pages at /docs, and each one it links answers', async () => {
    const index = await page(`${baseUrl()}/docs`);
    expect(index.status).toBe(200);
    const links = [...index.text.matchAll(/href="(\/docs\/api\/[a-z-]+)"/g)].map((m) => m[1] as string);
    expect(links).toContain('/docs/api/errors');
    expect(links).toContain('/docs/api/posts');
    for (const link of new Set(links)) expect((await page(`${baseUrl()}${link}`)).status, link).toBe(200);
  });

  it('answers an unknown page with a 404 problem', async () => {
    const res = await api('GET', '/docs/api/no-such-page');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('resource_not_found');
  });
});
