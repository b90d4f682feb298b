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

/** Where the deployment serves its API guide, under its own origin (GET /docs). */
export const DOCS_PATH = '/docs';

/**
 * Base URL of the API guide; problem `type` URIs are `{docsUrl}/api/problems/{code}`. HERALD_DOCS_URL
 * when the operator points it elsewhere; else the deployment's own /docs, so a `type` a client
 * follows always answers: on its public URL, else the API's own endpoint (HERALD_API_URL), else
 * the host the request came in on. Without any of them (the OpenAPI file in the repository) a
 * reference relative to the deployment. Read per call: the local stack sets its URL once listening.
 */
export function docsUrl(requestHost?: string): string {
  const configured = process.env.HERALD_DOCS_URL;
  if (configured) return configured.replace(/\/+$/, '');
  const apiUrl = process.env.HERALD_API_URL;
  const origin =
    configuredPublicUrl() ??
    (apiUrl ? apiUrl.replace(/\/+$/, '') : requestHost ? `https://${requestHost}` : '');
  return `${origin}${DOCS_PATH}`;
}

/** Delivery origin of the media assets (CloudFront in AWS, the local front door locally). Read per call. */
export const mediaBaseUrl = () => requireEnv('HERALD_MEDIA_BASE_URL');

/** In AWS Lambda; local-only knobs are never honoured there. */
export const inLambda = (): boolean => Boolean(process.env.AWS_LAMBDA_FUNCTION_NAME);

/**
 * HERALD_TIME_SCALE (local stack only): multiplies webhook retry delays and failure-ladder waits so
 * tests can run a 72-hour ladder in seconds. Always 1 in Lambda.
 */
export function timeScale(): number {
  if (inLambda()) return 1;
  const raw = process.env.HERALD_TIME_SCALE;
  if (raw === undefined || raw === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`HERALD_TIME_SCALE must be a positive number: ${raw}`);
  return value;
}

/** A local-only number of seconds (undefined when unset, and always in Lambda). */
export function localSeconds(name: string): number | undefined {
  if (inLambda()) return undefined;
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number of seconds: ${raw}`);
  return value;
}

/**
 * The public origin of this deployment (where /oauth/callback is reached): HERALD_PUBLIC_URL when
 * the operator set one (a custom domain; the local stack sets its own), else the host the request
 * came in on.
 */
export function publicUrl(requestHost: string | undefined): string {
  const configured = configuredPublicUrl();
  if (configured) return configured;
  if (!requestHost) throw new Error('no public URL: set HERALD_PUBLIC_URL');
  return `https://${requestHost}`;
}

/** HERALD_PUBLIC_URL when the operator set one (no trailing slash); undefined otherwise. */
export function configuredPublicUrl(): string | undefined {
  const configured = process.env.HERALD_PUBLIC_URL;
  return configured ? configured.replace(/\/+$/, '') : undefined;
}
