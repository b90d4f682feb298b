import { connectApi, type OAuthConnect, oauthCredentials, oauthServer, platformAccount } from '../connect.ts';
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

const get = connectApi('youtube', 'https://www.googleapis.com/youtube/v3');
const SCOPES = [
  'https://www.googleapis.com/auth/youtube.upload',
  'https://www.googleapis.com/auth/youtube.readonly',
];

const account = (c: Channel, credentials: Credentials) =>
  platformAccount(credentials, {
    id: c.id,
    type: 'channel',
    handle: c.snippet?.customUrl ?? c.snippet?.title ?? c.id,
    name: c.snippet?.title,
    avatar: c.snippet?.thumbnails?.default?.url,
    followers: c.statistics?.hiddenSubscriberCount ? 0 : c.statistics?.subscriberCount,
  });

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () =>
    oauthServer('youtube', {
      authorize: 'https://accounts.google.com/o/oauth2/v2/auth',
      token: 'https://oauth2.googleapis.com/token',
      revoke: 'https://oauth2.googleapis.com/revoke',
      clientAuth: 'post',
      pkce: true,
      scopeSeparator: ' ',
      authorizeParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
    }),
  // youtube.force-ssl also lets Herald delete what it published (unpublishPost); not required, so a
  // person who declines it can still post.
  scopes: [...SCOPES, 'https://www.googleapis.com/auth/youtube.force-ssl'],
  required: SCOPES,
  async accounts(tokens) {
    const body = await get<{ items?: Channel[] }>(
      '/channels?part=snippet,statistics&mine=true',
      tokens.access_token,
    );
    return (body.items ?? []).map((c) => account(c, oauthCredentials(tokens, c.id)));
  },
  async profile(credentials) {
    const id = encodeURIComponent(String(credentials.account_id ?? ''));
    const body = await get<{ items?: Channel[] }>(`/channels?part=snippet,statistics&id=${id}`, credentials);
    const channel = body.items?.[0];
    if (!channel) throw new Error(`youtube: no channel ${credentials.account_id}`);
    return account(channel, credentials);
  },
  refresh: 'oauth',
  revokesAuthorization: true,
};
