import { connectApi, type OAuthConnect, oauthCredentials, oauthServer, platformAccount } from '../connect.ts';
import type { HttpResponse } from '../http.ts';
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

const API = 'https://api.pinterest.com/v5';
const get = connectApi('pinterest', API, (res: HttpResponse) => {
  const b = res.body as { code?: number; message?: string } | undefined;
  return b?.message ? `${b.message} (code ${String(b.code ?? '?')})` : '';
});

const account = (user: UserAccount, board: Board, credentials: Credentials) =>
  platformAccount(credentials, {
    id: board.id,
    type: 'board',
    handle: `${user.username ?? '?'}/${board.name ?? board.id}`,
    name: board.name,
    avatar: user.profile_image,
    followers: user.follower_count,
  });

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () =>
    oauthServer('pinterest', {
      authorize: 'https://www.pinterest.com/oauth/',
      token: `${API}/oauth/token`,
      clientAuth: 'basic',
      pkce: false,
      scopeSeparator: ',',
      exchangeParams: { continuous_refresh: 'true' },
      // Pinterest's {"code": 1, "message": "Invalid refresh token."} (see the OAuth client).
      grantRefusals: [
        { error: 'invalid_request', description: /^Invalid (refresh token|authorization code)/i },
      ],
    }),
  scopes: ['boards:read', 'pins:read', 'pins:write', 'user_accounts:read'],
  required: ['boards:read', 'pins:write', 'user_accounts:read'],
  async accounts(tokens) {
    const token = tokens.access_token;
    const [user, boards] = await Promise.all([
      get<UserAccount>('/user_account', token),
      get<{ items?: Board[] }>('/boards?page_size=100', token),
    ]);
    return (boards.items ?? []).map((b) => account(user, b, oauthCredentials(tokens, b.id)));
  },
  async profile(credentials) {
    const id = encodeURIComponent(String(credentials.account_id ?? ''));
    const [user, board] = await Promise.all([
      get<UserAccount>('/user_account', credentials),
      get<Board>(`/boards/${id}`, credentials),
    ]);
    return account(user, board, credentials);
  },
  refresh: 'oauth',
};
