import { afterEach, describe, expect, it, vi } from 'vitest';
import { heraldRelease } from '#lib/version';
import type { HttpResult } from '#shared/envelope';
import { apiEvent, lambdaContext } from '../support/fixtures.ts';

// GET /v1/openapi.json names the release and the commit the deployment runs (the environment the
// stack sets); the committed docs/openapi.json carries the release only (openapi.test.ts).

afterEach(() => {
  vi.unstubAllEnvs();
  vi.resetModules();
});

const served = async () => {
  const { handler } = await import('#handlers/get-openapi');
  const res = (await handler(apiEvent('getOpenApi'), lambdaContext())) as HttpResult;
  expect(res.statusCode).toBe(200);
  return JSON.parse(res.body as string) as { info: Record<string, unknown> };
};

describe('GET /v1/openapi.json', () => {
  it("says the running release as info.version and its commit as info['x-herald-commit']", async () => {
    vi.stubEnv('HERALD_VERSION', '9.8.7');
    vi.stubEnv('HERALD_COMMIT', '0123456789abcdef0123456789abcdef01234567');
    const { info } = await served();
    expect(info.version).toBe('9.8.7');
    expect(info['x-herald-commit']).toBe('0123456789abcdef0123456789abcdef01234567');
  });

  it('the release is package.json’s, as the stack sets it', async () => {
    vi.stubEnv('HERALD_VERSION', heraldRelease());
    vi.stubEnv('HERALD_COMMIT', 'abc');
    expect((await served()).info.version).toBe(heraldRelease());
    expect(heraldRelease()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
