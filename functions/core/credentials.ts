import * as z from 'zod/mini';
import type { Platform } from './platforms.ts';

// Channel credentials as `herald channel connect --credentials` takes them (pasted tokens, for
// sandboxes); they are verified with the platform before anything is stored. Renewing them uses the
// operator's platform app (`herald platform-app set`), never a secret pasted per channel.

const origin = z.url({ protocol: /^https?$/ });
const token = z.string().check(z.minLength(1), z.maxLength(4096));

const oauth = (accountId: z.ZodMiniType) =>
  z.strictObject({
    access_token: token,
    refresh_token: z.optional(token),
    expires_at: z.optional(z.iso.datetime({ offset: true })),
    account_id: accountId,
  });

const anyId = z.string().check(z.minLength(1), z.maxLength(200));

export const CREDENTIALS: Record<Platform, z.ZodMiniType> = {
  bluesky: z.strictObject({
    service: z._default(origin, 'https://bsky.social'),
    identifier: z.string().check(z.minLength(1), z.maxLength(253)),
    app_password: token,
  }),
  mastodon: z.strictObject({ instance: origin, access_token: token }),
  linkedin: oauth(z.string().check(z.regex(/^urn:li:(person|organization):[A-Za-z0-9_-]+$/))),
  x: oauth(anyId),
  threads: oauth(anyId),
  instagram: oauth(anyId),
  facebook: oauth(anyId),
  tiktok: oauth(anyId),
  youtube: oauth(anyId),
  pinterest: oauth(anyId),
};

/** The credential fields whose values are secrets. */
const SECRET_FIELDS = ['access_token', 'refresh_token', 'app_password', 'client_secret'] as const;

/** Every form a channel's secrets may travel in: as stored, percent-encoded, and as HTTP Basic credentials. */
function secretForms(credentials: Record<string, unknown>): string[] {
  const forms = new Set<string>();
  for (const field of SECRET_FIELDS) {
    const v = credentials[field];
    if (typeof v === 'string' && v.length > 0) {
      forms.add(v);
      forms.add(encodeURIComponent(v));
    }
  }
  const secret = credentials.client_secret;
  for (const id of [credentials.client_id, credentials.client_key]) {
    if (typeof id === 'string' && typeof secret === 'string')
      forms.add(Buffer.from(`${id}:${secret}`).toString('base64'));
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

/**
 * `text` (a platform's error, as logged and stored) without any secret of the given credentials,
 * nor anything that looks like a bearer/basic credential or a token parameter: platforms, proxies
 * and self-hosted instances may repeat the request in their error bodies.
 */
export function redactCredentials(text: string, ...credentials: Array<Record<string, unknown>>): string {
  let out = text;
  for (const c of credentials) for (const form of secretForms(c)) out = out.split(form).join('[redacted]');
  return out
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [redacted]')
    .replace(
      /\b(access_token|refresh_token|client_secret|app_password|password)=[^&\s"']+/gi,
      '$1=[redacted]',
    );
}
