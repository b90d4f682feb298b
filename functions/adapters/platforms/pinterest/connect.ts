import {
  accessToken,
  count,
  getJson,
  type OAuthConnect,
  oauthCredentials,
  type PlatformAccount,
} from '../connect.ts';
import { type HttpResponse, platformUrl } from '../http.ts';
import type { Credentials } from '../types.ts';

// Pinterest API v5: authorization code with HTTP Basic client auth at /v5/oauth/token, continuous
// refresh (each refresh answers a new refresh token), 30-day access tokens. A channel pins to one
// board: the grant covers the account's boards (GET /v5/boards) and the person picks one. Pinterest
// documents no revocation endpoint: disconnecting erases the tokens.

interface UserAccount {
  username?: string;
  profile_image?: string;
  follower_count?: number;
}
interface Board {
  id: string;
  name?: string;
}

const api = (path: string) => platformUrl('pinterest', `https://api.pinterest.com/v5${path}`);
const detail = (res: HttpResponse) => {
  const b = res.body as { code?: number; message?: string } | undefined;
  return b?.message ? `${b.message} (code ${String(b.code ?? '?')})` : '';
};

function account(user: UserAccount, board: Board, credentials: Credentials): PlatformAccount {
  return {
    id: board.id,
    type: 'board',
    handle: `${user.username ?? '?'}/${board.name ?? board.id}`,
    name: board.name ?? null,
    avatar_url: user.profile_image ?? null,
    followers: count(user.follower_count),
    credentials: { ...credentials, account_id: board.id },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => ({
    name: 'pinterest',
    authorize: platformUrl('pinterest', 'https://www.pinterest.com/oauth/'),
    token: api('/oauth/token'),
    clientAuth: 'basic',
    pkce: false,
    scopeSeparator: ',',
    exchangeParams: { continuous_refresh: 'true' },
  }),
  scopes: ['boards:read', 'pins:read', 'pins:write', 'user_accounts:read'],
  required: ['boards:read', 'pins:write', 'user_accounts:read'],
  async accounts(tokens) {
    const token = tokens.access_token;
    const [user, boards] = await Promise.all([
      getJson<UserAccount>('pinterest', api('/user_account'), { token }, detail),
      getJson<{ items?: Board[] }>('pinterest', api('/boards?page_size=100'), { token }, detail),
    ]);
    return (boards.items ?? []).map((b) => account(user, b, oauthCredentials(tokens, b.id)));
  },
  async profile(credentials) {
    const token = accessToken('pinterest', credentials);
    const id = encodeURIComponent(String(credentials.account_id ?? ''));
    const [user, board] = await Promise.all([
      getJson<UserAccount>('pinterest', api('/user_account'), { token }, detail),
      getJson<Board>('pinterest', api(`/boards/${id}`), { token }, detail),
    ]);
    return account(user, board, credentials);
  },
  refresh: 'oauth',
};
