import type { TokenSet } from '../../oauth.ts';
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

const api = (path: string) => platformUrl('linkedin', `https://api.linkedin.com${path}`);

async function person(token: string, credentials: Credentials): Promise<PlatformAccount> {
  const me = await getJson<UserInfo>('linkedin', api('/v2/userinfo'), { token });
  const urn = `urn:li:person:${me.sub}`;
  return {
    id: urn,
    type: 'person',
    handle: me.name ?? urn,
    name: me.name ?? null,
    avatar_url: me.picture ?? null,
    // LinkedIn shows a member's follower count to no app outside its partner programs.
    followers: 0,
    credentials: { ...credentials, account_id: urn },
  };
}

async function organization(token: string, urn: string, credentials: Credentials): Promise<PlatformAccount> {
  const id = urn.split(':').at(-1) ?? '';
  const [org, size] = await Promise.all([
    getJson<Organization>('linkedin', api(`/rest/organizations/${encodeURIComponent(id)}`), {
      token,
      headers: REST,
    }),
    getJson<{ firstDegreeSize?: number }>(
      'linkedin',
      api(`/rest/networkSizes/${encodeURIComponent(urn)}?edgeType=COMPANY_FOLLOWED_BY_MEMBER`),
      { token, headers: REST },
    ),
  ]);
  return {
    id: urn,
    type: 'organization',
    handle: org.vanityName ?? org.localizedName ?? urn,
    name: org.localizedName ?? null,
    avatar_url: null,
    followers: count(size.firstDegreeSize),
    credentials: { ...credentials, account_id: urn },
  };
}

export const connect: OAuthConnect = {
  kind: 'oauth',
  server: () => ({
    name: 'linkedin',
    authorize: platformUrl('linkedin', 'https://www.linkedin.com/oauth/v2/authorization'),
    token: platformUrl('linkedin', 'https://www.linkedin.com/oauth/v2/accessToken'),
    revoke: platformUrl('linkedin', 'https://www.linkedin.com/oauth/v2/revoke'),
    clientAuth: 'post',
    pkce: false,
    scopeSeparator: ' ',
  }),
  // Organization pages need the Community Management API: add r_organization_admin and
  // w_organization_social to the platform app's scopes (herald platform-app set --scopes).
  scopes: ['openid', 'profile', 'w_member_social'],
  required: ['openid', 'profile', 'w_member_social'],
  async accounts(tokens: TokenSet) {
    const token = tokens.access_token;
    const member = await person(token, oauthCredentials(tokens, ''));
    if (!tokens.scope?.includes('r_organization_admin')) return [member];
    const acls = await getJson<Acls>(
      'linkedin',
      api('/rest/organizationAcls?q=roleAssignee&role=ADMINISTRATOR&state=APPROVED'),
      { token, headers: REST },
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
    const token = accessToken('linkedin', credentials);
    const urn = String(credentials.account_id ?? '');
    return urn.startsWith('urn:li:organization:')
      ? organization(token, urn, credentials)
      : person(token, credentials);
  },
  refresh: 'oauth',
};
