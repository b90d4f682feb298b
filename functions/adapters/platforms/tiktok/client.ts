import { type HttpResponse, parseJson, platformOrigin, request } from '../http.ts';
import type { OAuthTokens } from '../oauth.ts';
import { UPLOAD_REQUEST_MS } from '../upload.ts';
import { type Envelope, tiktokError } from './errors.ts';

// TikTok's open API (open.tiktokapis.com). Every answer is an envelope
// {"data": …, "error": {"code": "ok" | …, "message", "log_id"}}; `code` decides the error category
// (errors.ts). Post ids arrive as `publicaly_available_post_id` (sic), a list of 64-bit integers sent
// as JSON numbers, so bodies are parsed without losing digits.

const P = 'tiktok';
const origin = () => platformOrigin(P, 'https://open.tiktokapis.com');

// TikTok ids are int64 sent as bare JSON numbers; quote them before JSON.parse rounds them.
function parseBody(text: string): unknown {
  if (!text) return undefined;
  const safe = text.replace(
    /("publicaly_available_post_id"\s*:\s*\[)([^\]]*)\]/g,
    (_m, head: string, list: string) =>
      `${head}${list
        .split(',')
        .map((item) => (/^\s*-?\d+\s*$/.test(item) ? `"${item.trim()}"` : item))
        .join(',')}]`,
  );
  return parseJson(safe) ?? text;
}

/** One authenticated JSON call; `data` on success (HTTP 200 and error.code "ok"). */
export async function api<T>(tokens: OAuthTokens, path: string, body?: unknown, query = ''): Promise<T> {
  const res = await tokens.send(P, `${origin()}${path}${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=UTF-8' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    parse: parseBody,
  });
  const env = res.body as Envelope<T> | undefined;
  if (res.status === 200 && typeof env === 'object' && (env.error?.code ?? 'ok') === 'ok')
    return (env.data ?? {}) as T;
  throw tiktokError(res, path);
}

/** PUTs one chunk of a video to the upload URL TikTok handed out (no bearer token). */
export function putChunk(
  url: string,
  init: RequestInit & { headers: Record<string, string>; timeoutMs?: number },
): Promise<HttpResponse> {
  return request(P, url, { ...init, timeoutMs: init.timeoutMs ?? UPLOAD_REQUEST_MS, parse: parseBody });
}
