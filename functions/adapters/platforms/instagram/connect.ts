import { accessToken, count, getJson, type OAuthConnect, type PlatformAccount } from '../connect.ts';
import { facebookLogin, graph, graphDetail, longLived, permissions } from '../meta/connect.ts';
import type { Credentials } from '../types.ts';

// Instagram professional accounts through Facebook Login (Instagram API with Facebook Login): the
// grant covers the Instagram business accounts linked to the person's Pages
// (GET /me/accounts?fields=instagram_business_account{…}); a channel keeps the Page's token (it
// does not expire) and the Instagram account id. Like Facebook, only the person can renew it.

interface IgAccount {
  id: string;
  username?: string;
  name?: string;
  profile_picture_url?: string;
  followers_count?: number;
}
interface Page {
  id: string;
  access_token?: string;
  instagram_business_account?: IgAccount;
}

const IG_FIELDS = 'id,username,name,profile_picture_url,followers_count';

function account(ig: IgAccount, credentials: Credentials): PlatformAccount {
  return {
    id: ig.id,
    type: 'business_account',
    handle: ig.username ?? ig.id,
    name: ig.name ?? null,
    avatar_url: ig.profile_picture_url ?? null,
    followers: count(ig.followers_count),
    credentials: { ...credentials, account_id: ig.id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => facebookLogin('instagram'),
  scopes: ['instagram_basic', 'instagram_content_publish', 'pages_show_list', 'pages_read_engagement'],
  required: ['instagram_basic', 'instagram_content_publish', 'pages_show_list'],
  afterExchange: longLived,
  grantedScopes: (tokens) => permissions('instagram', tokens.access_token),
  async accounts(tokens) {
    const fields = `id,access_token,instagram_business_account{${IG_FIELDS}}`;
    const body = await getJson<{ data?: Page[] }>(
      'instagram',
      graph('instagram', `/me/accounts?fields=${encodeURIComponent(fields)}&limit=100`),
      { token: tokens.access_token },
      graphDetail,
    );
    return (body.data ?? []).flatMap((p) =>
      p.instagram_business_account && p.access_token
        ? [account(p.instagram_business_account, { access_token: p.access_token })]
        : [],
    );
  },
  async profile(credentials) {
    const id = encodeURIComponent(String(credentials.account_id ?? ''));
    const ig = await getJson<IgAccount>(
      'instagram',
      graph('instagram', `/${id}?fields=${encodeURIComponent(IG_FIELDS)}`),
      { token: accessToken('instagram', credentials) },
      graphDetail,
    );
    return account(ig, credentials);
  },
};
