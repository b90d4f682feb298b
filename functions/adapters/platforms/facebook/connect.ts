import { accessToken, count, getJson, type OAuthConnect, type PlatformAccount } from '../connect.ts';
import { facebookLogin, graph, graphDetail, longLived, permissions } from '../meta/connect.ts';
import type { Credentials } from '../types.ts';

// Facebook Pages: Facebook Login (no PKCE, client secret as a form field); the grant covers the
// Pages the person manages (GET /me/accounts), each with its own Page token, which is what a channel
// keeps (long-lived: it does not expire). Only the person can renew it (reconnect), and revoking
// needs the user token Herald does not keep: disconnecting erases the Page token; removing the app
// is done in the person's Facebook settings (Business Integrations).

interface Page {
  id: string;
  name?: string;
  access_token?: string;
  picture?: { data?: { url?: string } };
  followers_count?: number;
  fan_count?: number;
}

const FIELDS = 'id,name,access_token,picture{url},followers_count,fan_count';

function account(page: Page, credentials: Credentials): PlatformAccount {
  return {
    id: page.id,
    type: 'page',
    handle: page.name ?? page.id,
    name: page.name ?? null,
    avatar_url: page.picture?.data?.url ?? null,
    followers: count(page.followers_count ?? page.fan_count),
    credentials: { ...credentials, account_id: page.id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => facebookLogin('facebook'),
  scopes: ['pages_show_list', 'pages_manage_posts', 'pages_read_engagement'],
  required: ['pages_show_list', 'pages_manage_posts'],
  afterExchange: longLived,
  grantedScopes: (tokens) => permissions('facebook', tokens.access_token),
  async accounts(tokens) {
    const body = await getJson<{ data?: Page[] }>(
      'facebook',
      graph('facebook', `/me/accounts?fields=${encodeURIComponent(FIELDS)}&limit=100`),
      { token: tokens.access_token },
      graphDetail,
    );
    return (body.data ?? [])
      .filter((p) => typeof p.access_token === 'string')
      .map((p) => account(p, { access_token: p.access_token }));
  },
  async profile(credentials) {
    const id = encodeURIComponent(String(credentials.account_id ?? ''));
    const page = await getJson<Page>(
      'facebook',
      graph(
        'facebook',
        `/${id}?fields=${encodeURIComponent('id,name,picture{url},followers_count,fan_count')}`,
      ),
      { token: accessToken('facebook', credentials) },
      graphDetail,
    );
    return account(page, credentials);
  },
};
