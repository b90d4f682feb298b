import type { TokenSet } from '../../oauth.ts';
import { connectApi, type OAuthConnect, oauthCredentials, oauthServer, platformAccount } from '../connect.ts';
import type { Credentials } from '../types.ts';
import { REST_HEADERS as REST } from './client.ts';

// LinkedIn: OAuth 2.0 authorization code (client id and secret as form fields; no PKCE), 60-day
// access tokens, refresh tokens only for apps LinkedIn granted programmatic refresh. The grant
// covers the member (OpenID userinfo; product "Sign In with LinkedIn using OpenID Connect" and "Share
// on LinkedIn") and, with the Community Management API's r_organization_admin, the organizations
// the member administers. Revocation: POST /oauth/v2/revoke.

interface UserInfo {
  sub: string;
  name?: string;
  picture?: string;
}
interface Acls {
  elements?: Array<{ organization?: string; role?: string; state?: string }>;
}
interface Organization {
  id: number | string;
  localizedName?: string;
  vanityName?: string;
}

const get = connectApi('linkedin', 'https://api.linkedin.com');

async function person(auth: string | Credentials, credentials: Credentials) {
  const me = await get<UserInfo>('/v2/userinfo', auth);
  const urn = `urn:li:person:${me.sub}`;
  // LinkedIn shows a member's follower count to no app outside its partner programs.
  return platformAccount(credentials, {
    id: urn,
    type: 'person',
    handle: me.name ?? urn,
    name: me.name,
    avatar: me.picture,
    followers: 0,
  });
}

async function organization(auth: string | Credentials, urn: string, credentials: Credentials) {
  const id = urn.split(':').at(-1) ?? '';
  const [org, size] = await Promise.all([
    get<Organization>(`/rest/organizations/${encodeURIComponent(id)}`, auth, REST),
    get<{ firstDegreeSize?: number }>(
      `/rest/networkSizes/${encodeURIComponent(urn)}?edgeType=COMPANY_FOLLOWED_BY_MEMBER`,
      auth,
      REST,
    ),
  ]);
  return platformAccount(credentials, {
    id: urn,
    type: 'organization',
    handle: org.vanityName ?? org.localizedName ?? urn,
    name: org.localizedName,
    followers: size.firstDegreeSize,
  });
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () =>
    oauthServer('linkedin', {
      authorize: 'https://www.linkedin.com/oauth/v2/authorization',
      token: 'https://www.linkedin.com/oauth/v2/accessToken',
      revoke: 'https://www.linkedin.com/oauth/v2/revoke',
      clientAuth: 'post',
      pkce: false,
      scopeSeparator: ' ',
      // LinkedIn answers a revoked or expired refresh token, and a spent code, with invalid_request.
      grantRefusals: [
        { error: 'invalid_request', description: /invalid, expired or revoked|authorization code expired/i },
      ],
    }),
  // Organization pages need the Community Management API: add r_organization_admin and
  // w_organization_social to the platform app's scopes (herald platform-app set --scopes), and
  // r_organization_social for their inbox (core/inbox.ts INBOX). Not asked by default: LinkedIn
  // refuses the whole consent (unauthorized_scope_error) when the app lacks the product.
  scopes: ['openid', 'profile', 'w_member_social'],
  required: ['openid', 'profile', 'w_member_social'],
  async accounts(tokens: TokenSet) {
    const token = tokens.access_token;
    const member = await person(token, oauthCredentials(tokens, ''));
    if (!tokens.scope?.includes('r_organization_admin')) return [member];
    const acls = await get<Acls>(
      '/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED',
      token,
      REST,
    );
    const orgs = (acls.elements ?? [])
      .map((e) => e.organization)
      .filter((o): o is string => typeof o === 'string' && o.startsWith('urn:li:organization:'));
    return [
      member,
      ...(await Promise.all(orgs.map((urn) => organization(token, urn, oauthCredentials(tokens, urn))))),
    ];
  },
  async profile(credentials) {
    const urn = String(credentials.account_id ?? '');
    return urn.startsWith('urn:li:organization:')
      ? organization(credentials, urn, credentials)
      : person(credentials, credentials);
  },
  refresh: 'oauth',
};
