import { type HttpResponse, platformOrigin, request, type StreamBody } from '../http.ts';
import type { OAuthTokens } from '../oauth.ts';
import { UPLOAD_REQUEST_MS } from '../upload.ts';

// Pinterest API v5 (api.pinterest.com) with the channel's bearer token.

const P = 'pinterest';
const origin = () => platformOrigin(P, 'https://api.pinterest.com');

export function call<T>(
  tokens: OAuthTokens,
  method: string,
  path: string,
  body?: unknown,
): Promise<HttpResponse<T>> {
  return tokens.send<T>(P, `${origin()}${path}`, body === undefined ? { method } : { method, json: body });
}

/** The upload URL is a pre-signed S3 form: every upload parameter as a field, then the file (no bearer token). */
export function uploadForm(url: string, form: StreamBody): Promise<HttpResponse> {
  return request(P, url, { method: 'POST', stream: form, timeoutMs: UPLOAD_REQUEST_MS });
}
