import { publicHandler } from '#shared/envelope';
import { oauthCallback } from '#usecases/oauth-callback';

const html = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** GET /oauth/callback/{platform}: no API key (the one-time state names the session); answers a person's browser. */
export const handler = publicHandler(async (event) => {
  const outcome = await oauthCallback(
    event.pathParameters?.platform ?? '',
    event.queryStringParameters ?? {},
    new Date(),
  );
  const headers = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' };
  if ('location' in outcome)
    return { statusCode: 303, headers: { ...headers, location: outcome.location }, body: '' };
  // Always a page (never problem+json): a person's browser is reading it.
  const { status, title, message } = outcome.page;
  return {
    statusCode: status,
    headers: {
      ...headers,
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': "default-src 'none'",
    },
    body: `<!doctype html><html><head><meta charset="utf-8"><title>Herald: ${html(title)}</title></head><body><h1>${html(title)}</h1><p>${html(message)}</p></body></html>`,
  };
});
