import { afterEach, describe, expect, it, vi } from 'vitest';
import { problemType } from '#core/errors';
import { docsUrl } from '#shared/config';

// Where problem `type` URIs point: the deployment's own guide unless the operator says otherwise.

afterEach(() => vi.unstubAllEnvs());

const clear = () => {
  vi.stubEnv('HERALD_DOCS_URL', '');
  vi.stubEnv('HERALD_PUBLIC_URL', '');
  vi.stubEnv('HERALD_API_URL', '');
};

describe('docsUrl', () => {
  it("is the deployment's public URL's /docs when one is set", () => {
    clear();
    vi.stubEnv('HERALD_PUBLIC_URL', 'https://herald.example.org/');
    vi.stubEnv('HERALD_API_URL', 'https://abc.execute-api.eu-west-1.amazonaws.com');
    expect(docsUrl('ignored.example')).toBe('https://herald.example.org/docs');
  });

  it("else the API's own endpoint", () => {
    clear();
    vi.stubEnv('HERALD_API_URL', 'https://abc.execute-api.eu-west-1.amazonaws.com/');
    expect(docsUrl('ignored.example')).toBe('https://abc.execute-api.eu-west-1.amazonaws.com/docs');
  });

  it('else the host the request came in on', () => {
    clear();
    expect(docsUrl('abc.execute-api.eu-west-1.amazonaws.com')).toBe(
      'https://abc.execute-api.eu-west-1.amazonaws.com/docs',
    );
  });

  it('else a reference relative to the deployment (the committed OpenAPI file)', () => {
    clear();
    expect(docsUrl()).toBe('/docs');
  });

  it('is the operator’s docsUrl when set, over everything', () => {
    clear();
    vi.stubEnv('HERALD_DOCS_URL', 'https://docs.example.org/herald/');
    vi.stubEnv('HERALD_PUBLIC_URL', 'https://herald.example.org');
    expect(docsUrl('x.example')).toBe('https://docs.example.org/herald');
  });

  it('makes problem types `{docsUrl}/api/problems/<code with hyphens>`', () => {
    expect(problemType('https://herald.example.org/docs', 'validation_failed')).toBe(
      'https://herald.example.org/docs/api/problems/validation-failed',
    );
  });
});
