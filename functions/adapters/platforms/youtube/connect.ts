import {
  accessToken,
  count,
  getJson,
  type OAuthConnect,
  oauthCredentials,
  type PlatformAccount,
} from '../connect.ts';
import { platformUrl } from '../http.ts';
import type { Credentials } from '../types.ts';

// YouTube: Google's OAuth 2.0 for web server apps with PKCE, offline access (a refresh token; Google
// does not rotate it) and consent asked every time (so a reconnect gets a new refresh token);
// RFC 7009 revocation at oauth2.googleapis.com/revoke. The grant covers the channels of the Google
// account (channels?mine=true); a brand account with several channels chooses one.

interface Channel {
  id: string;
  snippet?: { title?: string; customUrl?: string; thumbnails?: { default?: { url?: string } } };
  statistics?: { subscriberCount?: string; hiddenSubscriberCount?: boolean };
}

const api = (path: string) => platformUrl('youtube', `https://www.googleapis.com/youtube/v3${path}`);

function account(c: Channel, credentials: Credentials): PlatformAccount {
  return {
    id: c.id,
    type: 'channel',
    handle: c.snippet?.customUrl ?? c.snippet?.title ?? c.id,
    name: c.snippet?.title ?? null,
    avatar_url: c.snippet?.thumbnails?.default?.url ?? null,
    followers: c.statistics?.hiddenSubscriberCount ? 0 : count(c.statistics?.subscriberCount),
    credentials: { ...credentials, account_id: c.id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => ({
    name: 'youtube',
    authorize: platformUrl('youtube', 'https://accounts.google.com/o/oauth2/v2/auth'),
    token: platformUrl('youtube', 'https://oauth2.googleapis.com/token'),
    revoke: platformUrl('youtube', 'https://oauth2.googleapis.com/revoke'),
    clientAuth: 'post',
    pkce: true,
    scopeSeparator: ' ',
    authorizeParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
  }),
  scopes: [
    'https://www.googleapis.com/auth/youtube.upload',
    'https://www.googleapis.com/auth/youtube.readonly',
  ],
  required: [
    'https://www.googleapis.com/auth/youtube.upload',
    'https://www.googleapis.com/auth/youtube.readonly',
  ],
  async accounts(tokens) {
    const body = await getJson<{ items?: Channel[] }>(
      'youtube',
      api('/channels?part=snippet,statistics&mine=true'),
      {
        token: tokens.access_token,
      },
    );
    return (body.items ?? []).map((c) => account(c, oauthCredentials(tokens, c.id)));
  },
  async profile(credentials) {
    const id = encodeURIComponent(String(credentials.account_id ?? ''));
    const body = await getJson<{ items?: Channel[] }>(
      'youtube',
      api(`/channels?part=snippet,statistics&id=${id}`),
      {
        token: accessToken('youtube', credentials),
      },
    );
    const channel = body.items?.[0];
    if (!channel) throw new Error(`youtube: no channel ${credentials.account_id}`);
    return account(channel, credentials);
  },
  refresh: 'oauth',
};
