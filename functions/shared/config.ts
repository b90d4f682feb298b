// Environment read once at load; a missing variable fails the cold start loudly, not a request.

export function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`environment variable ${name} is required`);
  return value;
}

export function optionalEnv(name: string, fallback: string): string {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : value;
}

/** Origin of the documentation site; problem `type` URIs live under it. */
export const DOCS_URL = optionalEnv('HERALD_DOCS_URL', 'https://docs.herald.dev').replace(/\/+$/, '');
