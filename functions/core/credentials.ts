import * as z from 'zod/mini';
import type { Platform } from './platforms.ts';

// Channel credentials as `herald channel connect --credentials` takes them (DECISIONS §1).

const origin = z.url({ protocol: /^https?$/ });
const token = z.string().check(z.minLength(1), z.maxLength(4096));

const oauth = (accountId: z.ZodMiniType) =>
  z.strictObject({
    access_token: token,
    refresh_token: z.optional(token),
    expires_at: z.optional(z.iso.datetime({ offset: true })),
    account_id: accountId,
    // The app's client credentials, which the token endpoints need to refresh (TikTok calls it client_key).
    client_id: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
    client_key: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
    client_secret: z.optional(z.string().check(z.minLength(1), z.maxLength(512))),
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
