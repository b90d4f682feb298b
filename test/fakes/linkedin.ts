import { createHash } from 'node:crypto';
import { linkedinAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  defaultAccount,
  FakeOAuth,
  type FakeToken,
  type FakeUser,
  followersOf,
  formOf,
  hashDigits,
  hashId,
  namedAccount,
  serveAvatar,
} from './oauth.ts';
import {
  bearer,
  type FakeContext,
  type FakePlatform,
  type FakeRequest,
  type FakeResponse,
  type InboxSeed,
} from './server.ts';

// Contract fake of LinkedIn's versioned REST API: POST /rest/posts (201, URN in x-restli-id), GET
// /rest/posts?q=author, images (initializeUpload → uploadUrl, PUT bytes, GET status), videos
// (initializeUpload → uploadInstructions, PUT parts answering ETags, finalizeUpload, GET status),
// GET /rest/socialMetadata/{urn}, the organizations a member administers (GET
// /rest/organizationAcls?q=roleAssignee, GET /rest/organizations/{id}, GET
// /rest/networkSizes/{org urn}?edgeType=COMPANY_FOLLOWED_BY_MEMBER), OpenID userinfo (GET /v2/userinfo)
// and the OAuth 2.0 server of www.linkedin.com (3-legged flow, learn.microsoft.com "Authorization Code
// Flow"): GET /oauth/v2/authorization, POST /oauth/v2/accessToken (authorization_code and refresh_token;
// client_id and client_secret in the form, never Basic), POST /oauth/v2/revoke. Serve them from the same
// origin: the connector uses the API origin for OAuth when it is overridden locally.
// Requests to /rest without LinkedIn-Version or X-Restli-Protocol-Version: 2.0.0 are refused like LinkedIn
// does. Commentary is parsed as "little text": text after an unescaped reserved character is lost.
//
// OAuth shapes: scopes space-separated; PKCE optional (LinkedIn offers it to native apps). Denied consent
// redirects error=user_cancelled_authorize&error_description=The+user+cancelled+the+authorization; an
// unknown scope redirects error=unauthorized_scope_error. Token answer {access_token, expires_in: 5184000,
// refresh_token, refresh_token_expires_in, scope} with scope comma-separated and no token_type — except
// that a grant holding `openid` also gets token_type "Bearer" and an id_token, as the "Sign In with
// LinkedIn using OpenID Connect" guide shows (the id_token here is NOT signed verifiably). Refresh keeps
// the refresh token (no rotation) and its time to live counts down from the first authorization. Unsure:
// userinfo's `locale` — the fake sends the object {country, language} LinkedIn returns, where the OIDC
// guide's sample shows a string.
// Error answers, checked against published material (documented-errors.ts builds them):
// - /oauth/v2/accessToken ("Authorization Code Flow", API Error Details): 400 invalid_request "Unable to
//   retrieve access token: authorization code not found" for an unknown code; "…appid/redirect uri/code
//   verifier does not match authorization code. Or authorization code expired. Or external member binding
//   exists" for a used or expired code or another redirect_uri or verifier (the table names that error
//   invalid_redirect_uri; LinkedIn answers invalid_request — nvh95/react-linkedin-login-oauth2#26);
//   'A required parameter "code" is missing' (likewise redirect_uri, client_id, client_secret). Bad client
//   credentials: 401 invalid_client "Client authentication failed" (no WWW-Authenticate: the credentials
//   travel in the form). A refused refresh token ("Refresh Tokens with OAuth 2.0"): 400 invalid_request
//   "The provided authorization grant or refresh token is invalid, expired or revoked" — never invalid_grant.
// - API ("Error Handling" 401 cases): revoked tokens 401 {status, serviceErrorCode: 65601, code:
//   "REVOKED_ACCESS_TOKEN", message} (as reported in omniauth-linkedin-oauth2#81), unknown tokens 65600
//   INVALID_ACCESS_TOKEN "Invalid access token"; expired tokens EXPIRED_ACCESS_TOKEN — its serviceErrorCode
//   65602 is an assumption (not on the page).
// - Throttling ("Rate Limits"): 429 "Resource level throttle limit for calls to this resource is reached."
//   (serviceErrorCode 101, as reported in Automattic/wp-calypso#32007), daily limits, no rate-limit
//   headers. The fake never throttles on its own: inject documentedErrors.linkedin.throttled.
// Scope gates (tokens issued by the flow only): userinfo needs openid+profile (email needs email), the
// organization routes r_organization_admin or rw_organization_admin (networkSizes also
// r_organization_social), POST /rest/posts w_member_social for a person author and w_organization_social
// for an organization the member administers; otherwise 403 ACCESS_DENIED.
// Comments (Comments API, "Create a Comment" / "Get Comments on Shares"): POST
// /rest/socialActions/{post urn}/comments with {actor, object, message: {text}} answers 201 with the
// comment (id, commentUrn, $URN, actor, object, message, created) and its id in x-restli-id; the actor
// passes the same gates as a post's author (w_member_social / w_organization_social); a post that does
// not exist answers 404; a text over 1,250 characters 422 (the limit LinkedIn's comment box shows;
// unsure: the API's own wording). GET of the same path lists them, behind `canReadPosts` like the
// author's posts (r_member_social / r_organization_social). Comments made are kept in `comments`.
// The inbox (Comments API "Get Comments on Shares", "Get Comments on Comments", "Create a Comment";
// Social Metadata API "Batch Get a Summary of Social Metadata"): GET /rest/socialActions/{post or
// comment urn}/comments?start=&count= (count 1–100, default 10) pages the first-level comments of a
// post (newest first) or the replies to a comment, each with commentsSummary {aggregatedTotalComments,
// totalFirstLevelComments} and parentComment on replies; a token the flow issued needs
// r_organization_social or r_member_social (403 ACCESS_DENIED). POST to a comment's path with
// parentComment (that comment) and object (its post) makes a nested reply; a parent that is itself a
// reply is 422 (unsure: LinkedIn's wording; its pages show one level of replies). GET
// /rest/socialMetadata?ids=List({urn},…) answers {results: {urn: {commentSummary: {count,
// topLevelCount}, …}}, statuses, errors}. Seeds (`inbox(seed)`, POST /__fakes/linkedin/inbox) are
// comments by a member on a post of the organization `to` (default urn:li:organization:2414183; the
// post is made when `parent` names none the fake has), or replies when `parent` is a comment URN.
// Formats (Posts API "content" is one kind; Documents API; Poll API; Article Post API): documents
// (POST /rest/documents?action=initializeUpload {initializeUploadRequest: {owner}} → {value:
// {uploadUrl, uploadUrlExpiresAt, document}}, PUT the file, GET /rest/documents/{urn} PROCESSING →
// AVAILABLE after `processingPolls`; what is not a PDF/PPT(X)/DOC(X), over 100 MB or 300 pages fails
// processing) posted as content.media {id, title} (title required); content.poll {question ≤ 140,
// options [{text ≤ 30}] 2–4, settings {duration ONE_DAY|THREE_DAYS|SEVEN_DAYS|FOURTEEN_DAYS,
// voteSelectionType SINGLE_VOTE}}; content.article {source (required, a URL), title (required),
// description, thumbnail: an AVAILABLE image URN}. Two kinds at once (a poll with media) are 422, as
// is a document or thumbnail that is not AVAILABLE. Unsure: LinkedIn's exact wording of these 422s.

export interface FakeLinkedInAsset {
  urn: string;
  kind: 'image' | 'video' | 'document';
  owner: string;
  bytes: Buffer;
  status: 'WAITING_UPLOAD' | 'PROCESSING' | 'AVAILABLE' | 'PROCESSING_FAILED';
  pollsLeft: number;
  parts: Array<{ firstByte: number; lastByte: number; etag: string; data: Buffer | null }>;
  uploadToken: string;
  fileSizeBytes: number;
}

export interface FakeLinkedInPost {
  urn: string;
  author: string;
  /** The commentary as sent (little text). */
  commentary: string;
  /** What LinkedIn would display: little text decoded, truncated at an unescaped reserved character. */
  text: string;
  visibility: string;
  body: Record<string, unknown>;
  createdAt: number;
  media: Array<{ urn: string; altText: string | null; bytes: Buffer }>;
  /** A document post's document (its title as the carousel shows it). */
  document?: { urn: string; title: string };
  /** A poll as LinkedIn keeps it (settings.duration defaulted). */
  poll?: { question: string; options: string[]; duration: string };
  /** An article (link card): the thumbnail's bytes when it has one. */
  article?: { source: string; title: string; description: string | null; thumbnail: Buffer | null };
}

export interface FakeLinkedInComment {
  urn: string;
  id: string;
  post: string;
  actor: string;
  text: string;
  createdAt: number;
  /** A reply: the comment it answers. */
  parent?: string;
}

export interface FakeLinkedIn extends FakePlatform {
  readonly oauth: FakeOAuth;
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  clients: Map<string, string>;
  assets: Map<string, FakeLinkedInAsset>;
  posts: FakeLinkedInPost[];
  /** URNs of the posts DELETE /rest/posts removed. */
  deleted: string[];
  /** Whether the app may read the author's posts (r_member_social / r_organization_social). */
  canReadPosts: boolean;
  /** GET status polls answering PROCESSING before a video is AVAILABLE. */
  processingPolls: number;
  failVideoProcessing: boolean;
  /** The next uploaded document fails LinkedIn's processing (PROCESSING_FAILED). */
  failDocumentProcessing: boolean;
  minted: Array<{ access_token: string; refresh_token: string }>;
  reactions: Map<string, { likes: number; comments: number }>;
  comments: FakeLinkedInComment[];
  /** The next comment is created but its answer is lost (HTTP 504). */
  loseNextCommentResponse: boolean;
  /** A member's comment on one of the organization's posts (see the inbox notes above). */
  inbox(seed: InboxSeed): { platform_id: string };
}

const li = (status: number, message: string, extra: Record<string, unknown> = {}): FakeResponse => ({
  status,
  body: { status, message, ...extra },
});
const RESERVED = '\\|{}@[]()<>#*_~';

/** Little text → displayed text; stops at an unescaped reserved character (LinkedIn drops the rest). */
function display(commentary: string): string {
  let out = '';
  for (let i = 0; i < commentary.length; i++) {
    const c = commentary[i] ?? '';
    if (c === '\\' && RESERVED.includes(commentary[i + 1] ?? '')) {
      out += commentary[i + 1];
      i++;
      continue;
    }
    if (RESERVED.includes(c)) break;
    out += c;
  }
  return out;
}

/** The organization a member administers. */
export interface FakeLinkedInOrg {
  id: number;
  localizedName: string;
  vanityName: string;
  followers: number;
}

const AUTHORIZE: AuthorizeSpec = {
  separator: / +/,
  knownScope: (s) => /^(openid|profile|email|(r|w|rw)_[A-Za-z0-9_]+)$/.test(s),
  publishes: (s) => /^w_(member|organization)_social/.test(s),
  pkce: 'optional',
  defaultScopes: null,
  scopeError: 'unauthorized_scope_error',
  scopeDescription: (unknown) => `Scope "${unknown[0]}" is not authorized for your application`,
  denied: { error: 'user_cancelled_authorize', error_description: 'The user cancelled the authorization' },
  page: (status, problem) =>
    errorPageLi(
      status,
      problem === 'client'
        ? 'The passed in client_id is invalid'
        : 'The redirect_uri does not match the registered value',
    ),
};

function errorPageLi(status: number, message: string): FakeResponse {
  return {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body: `<!doctype html><html><body><h1>Bummer, something went wrong.</h1><p>${message}</p></body></html>`,
  };
}

/** An OpenID id_token's shape (header.payload.signature); the signature is not verifiable. */
function idToken(user: FakeUser, clientId: string): string {
  const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return [
    b64({ typ: 'JWT', kid: 'fake', alg: 'RS256' }),
    b64({
      iss: 'https://www.linkedin.com/oauth',
      aud: clientId,
      iat: now,
      exp: now + 3600,
      sub: user.id,
      name: user.displayName,
      picture: null,
    }),
    Buffer.from('not-a-signature').toString('base64url'),
  ].join('.');
}

export function createFake(): FakeLinkedIn {
  let seq = 0;
  const next = () => String(7300000000000000000n + BigInt(++seq));

  function assetJson(a: FakeLinkedInAsset, base: string) {
    return {
      id: a.urn,
      owner: a.owner,
      status: a.status,
      ...(a.status === 'AVAILABLE'
        ? {
            downloadUrl: `${base}/dms/${encodeURIComponent(a.urn)}`,
            downloadUrlExpiresAt: Date.now() + 3600_000,
          }
        : {}),
      ...(a.status === 'PROCESSING_FAILED'
        ? { processingFailureReason: 'Media file is corrupt or in an unsupported format' }
        : {}),
    };
  }

  /** The organizations a member administers: one each. */
  function orgsOf(user: FakeUser): FakeLinkedInOrg[] {
    if (user.isDefault)
      return [{ id: 2414183, localizedName: 'Acme Corp', vanityName: 'acme-corp', followers: 5120 }];
    return [
      {
        id: Number(hashDigits(user.name, 8, 'org')),
        localizedName: `${user.name} Inc`,
        vanityName: `${user.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-inc`,
        followers: followersOf(`${user.name}/org`),
      },
    ];
  }
  function findOrg(id: number): FakeLinkedInOrg | undefined {
    const users = [fake.oauth.user(), ...fake.oauth.users.values()];
    return users.flatMap(orgsOf).find((o) => o.id === id);
  }

  const oauthError = (status: number, error: string, description: string): FakeResponse => ({
    status,
    body: { error, error_description: description },
  });

  /** Client credentials from the form (or query string); LinkedIn does not take HTTP Basic. */
  function client(form: URLSearchParams): string | FakeResponse {
    const id = form.get('client_id') ?? '';
    const secret = form.get('client_secret') ?? '';
    if (!id) return linkedinAnswers.missing('client_id');
    if (!secret) return linkedinAnswers.missing('client_secret');
    if (fake.clients.get(id) === secret) return id;
    if (fake.oauth.checkClient(id, secret) === 'ok') return id;
    return linkedinAnswers.badClient();
  }

  function answer(t: FakeToken, refresh: FakeToken) {
    const openid = t.grant.scopes.includes('openid');
    return {
      access_token: t.token,
      expires_in: fake.oauth.expiresIn(t) ?? 5184000,
      refresh_token: refresh.token,
      refresh_token_expires_in: fake.oauth.expiresIn(refresh) ?? 31536000,
      scope: t.grant.scopes.join(','),
      ...(openid ? { token_type: 'Bearer', id_token: idToken(t.grant.user, t.grant.clientId) } : {}),
    };
  }

  function tokenEndpoint(req: FakeRequest): FakeResponse {
    const form = formOf(req, true);
    const grantType = form.get('grant_type');
    const c = client(form);
    if (typeof c !== 'string') return c;
    if (!grantType) return linkedinAnswers.missing('grant_type');
    if (grantType === 'authorization_code') {
      for (const p of ['code', 'redirect_uri']) if (!form.get(p)) return linkedinAnswers.missing(p);
      const r = fake.oauth.redeem(form.get('code') ?? '', {
        clientId: c,
        redirectUri: form.get('redirect_uri'),
        verifier: form.get('code_verifier'),
      });
      if (!r.ok)
        return r.reason === 'unknown' ? linkedinAnswers.codeNotFound() : linkedinAnswers.codeMismatch();
      const access = fake.oauth.issue(r.grant, 'access', 5184000);
      const refresh = fake.oauth.issue(r.grant, 'refresh', 31536000);
      return { status: 200, body: answer(access, refresh) };
    }
    if (grantType !== 'refresh_token')
      return oauthError(400, 'unsupported_grant_type', 'grant_type is invalid');
    const old = form.get('refresh_token') ?? '';
    const invalid = linkedinAnswers.refreshInvalid;
    if (fake.oauth.find(old)) {
      const r = fake.oauth.useRefresh(old, c, false); // LinkedIn keeps the refresh token
      if (!r.ok) return invalid();
      const access = fake.oauth.issue(r.grant, 'access', 5184000);
      fake.minted.push({ access_token: access.token, refresh_token: old });
      return { status: 200, body: answer(access, r.token) };
    }
    if (!fake.refreshTokens.has(old)) return invalid();
    fake.oauth.countRefresh();
    const pair = { access_token: `AQV${next()}`, refresh_token: old };
    fake.validTokens.add(pair.access_token);
    fake.minted.push(pair);
    return {
      status: 200,
      body: {
        access_token: pair.access_token,
        expires_in: 5184000,
        refresh_token: old,
        refresh_token_expires_in: 31536000,
      },
    };
  }

  function revokeEndpoint(req: FakeRequest): FakeResponse {
    const form = formOf(req, true);
    const c = client(form);
    if (typeof c !== 'string') return c;
    const token = form.get('token');
    if (!token) return oauthError(400, 'invalid_request', 'A required parameter "token" is missing');
    const t = fake.oauth.find(token);
    if (t && t.grant.clientId === c) fake.oauth.revokeToken(token, 'api');
    return { status: 200 };
  }

  async function handle(req: FakeRequest, ctx: FakeContext): Promise<FakeResponse | null> {
    if (req.method === 'GET' && req.path === '/oauth/v2/authorization')
      return fake.oauth.authorize(req, AUTHORIZE);
    if (req.method === 'POST' && req.path === '/oauth/v2/accessToken') return tokenEndpoint(req);
    if (req.method === 'POST' && req.path === '/oauth/v2/revoke') return revokeEndpoint(req);
    const avatar = serveAvatar(req);
    if (avatar) return avatar;

    const token = bearer(req);
    const issued = fake.oauth.check(token);
    if (issued.state === 'revoked' || issued.state === 'expired') return linkedinAnswers.token(issued.state);
    if (!token || (issued.state === 'unknown' && !fake.validTokens.has(token)))
      return linkedinAnswers.token('invalid');
    const me = issued.state === 'valid' ? issued.token.grant.user : fake.oauth.user();
    const denied = (resource: string) =>
      li(403, `Not enough permissions to access: ${resource}`, {
        serviceErrorCode: 100,
        code: 'ACCESS_DENIED',
      });

    if (req.method === 'GET' && req.path === '/v2/userinfo') {
      if (!fake.oauth.allows(token, 'openid') || !fake.oauth.allows(token, 'profile'))
        return {
          status: 403,
          body: {
            serviceErrorCode: 100,
            message: 'Not enough permissions to access: userinfo.GET.NO_VERSION',
            status: 403,
          },
        };
      const [given, ...rest] = me.displayName.split(' ');
      return {
        status: 200,
        body: {
          sub: me.id,
          name: me.displayName,
          given_name: given ?? me.displayName,
          family_name: rest.join(' ') || 'Member',
          picture: `${ctx.base}${me.avatarPath}`,
          locale: { country: 'US', language: 'en' },
          ...(fake.oauth.allows(token, 'email')
            ? { email: `${me.username}@example.com`, email_verified: true }
            : {}),
        },
      };
    }

    // Upload URLs (pre-signed in reality; on the fake's origin here).
    const imagePut = /^\/dms-uploads\/image\/(.+)$/.exec(req.path);
    if (req.method === 'PUT' && imagePut) {
      const a = fake.assets.get(decodeURIComponent(imagePut[1] ?? ''));
      if (a?.status !== 'WAITING_UPLOAD') return li(400, 'Upload URL is invalid or was already used');
      a.bytes = Buffer.from(req.body);
      a.status = 'AVAILABLE';
      return { status: 201 };
    }
    // Documents API: PDF, PPT(X) and DOC(X), at most 100 MB and 300 pages; what is not one fails its
    // processing (the upload itself is accepted). Pages are counted the way a PDF names them.
    const documentPut = /^\/dms-uploads\/document\/(.+)$/.exec(req.path);
    if (req.method === 'PUT' && documentPut) {
      const a = fake.assets.get(decodeURIComponent(documentPut[1] ?? ''));
      if (a?.status !== 'WAITING_UPLOAD') return li(400, 'Upload URL is invalid or was already used');
      a.bytes = Buffer.from(req.body);
      const pdf = a.bytes.subarray(0, 5).toString('latin1') === '%PDF-';
      const office =
        a.bytes.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04])) ||
        a.bytes.subarray(0, 4).equals(Buffer.from([0xd0, 0xcf, 0x11, 0xe0]));
      const pages = pdf ? (a.bytes.toString('latin1').match(/\/Type\s*\/Page(?![s\w])/g) ?? []).length : 0;
      const refused =
        fake.failDocumentProcessing || (!pdf && !office) || a.bytes.length > 100 * 1024 * 1024 || pages > 300;
      fake.failDocumentProcessing = false;
      a.status = refused ? 'PROCESSING_FAILED' : 'PROCESSING';
      return { status: 201 };
    }
    const videoPut = /^\/dms-uploads\/video\/(.+)\/part\/(\d+)$/.exec(req.path);
    if (req.method === 'PUT' && videoPut) {
      const a = fake.assets.get(decodeURIComponent(videoPut[1] ?? ''));
      const part = a?.parts[Number(videoPut[2])];
      if (!a || !part) return li(400, 'Upload URL is invalid');
      if (req.body.length !== part.lastByte - part.firstByte + 1)
        return li(400, `Part size mismatch: expected ${part.lastByte - part.firstByte + 1} bytes`);
      part.data = Buffer.from(req.body);
      return { status: 200, headers: { etag: part.etag } };
    }

    if (!req.headers['linkedin-version'])
      return li(
        400,
        'A version must be present. Please specify a version by adding the LinkedIn-Version header.',
        { code: 'VERSION_MISSING' },
      );
    if (!/^20\d{4}$/.test(req.headers['linkedin-version']))
      return li(426, `Requested version ${req.headers['linkedin-version']} is not active`, {
        code: 'NONEXISTENT_VERSION',
      });
    if (req.headers['x-restli-protocol-version'] !== '2.0.0')
      return li(400, 'Restli protocol version 2.0.0 is required', { code: 'ILLEGAL_ARGUMENT' });
    const action = req.query.get('action');

    if (
      req.method === 'POST' &&
      (req.path === '/rest/images' || req.path === '/rest/videos' || req.path === '/rest/documents') &&
      action === 'initializeUpload'
    ) {
      const r = ((req.json ?? {}) as { initializeUploadRequest?: { owner?: string; fileSizeBytes?: number } })
        .initializeUploadRequest;
      if (!r?.owner || !/^urn:li:(person|organization):/.test(r.owner))
        return li(
          422,
          'ERROR :: /initializeUploadRequest/owner :: field is required but not found and has no default value',
        );
      const kind = req.path === '/rest/images' ? 'image' : req.path === '/rest/videos' ? 'video' : 'document';
      const urn = `urn:li:${kind}:${kind === 'document' ? 'D4D' : 'C4D'}${next()}`;
      if (kind !== 'video') {
        // Images and Documents APIs ("Initialize Document Upload"): {value: {uploadUrlExpiresAt,
        // uploadUrl, image | document}}; a document is processed after its PUT, an image is not.
        fake.assets.set(urn, {
          urn,
          kind,
          owner: r.owner,
          bytes: Buffer.alloc(0),
          status: 'WAITING_UPLOAD',
          pollsLeft: kind === 'document' ? fake.processingPolls : 0,
          parts: [],
          uploadToken: '',
          fileSizeBytes: 0,
        });
        return {
          status: 200,
          body: {
            value: {
              uploadUrlExpiresAt: Date.now() + 3600_000,
              uploadUrl: `${ctx.base}/dms-uploads/${kind}/${encodeURIComponent(urn)}`,
              [kind]: urn,
            },
          },
        };
      }
      const size = r.fileSizeBytes;
      if (typeof size !== 'number' || size <= 0)
        return li(
          422,
          'ERROR :: /initializeUploadRequest/fileSizeBytes :: field is required but not found and has no default value',
        );
      const PART = 4 * 1024 * 1024;
      const parts = [];
      for (let first = 0, i = 0; first < size; first += PART, i++) {
        parts.push({
          firstByte: first,
          lastByte: Math.min(size, first + PART) - 1,
          etag: `/ambry-video/signedId/${createHash('md5').update(`${urn}${i}`).digest('hex')}`,
          data: null,
        });
      }
      const uploadToken = parts.length > 1 ? `token-${next()}` : '';
      fake.assets.set(urn, {
        urn,
        kind,
        owner: r.owner,
        bytes: Buffer.alloc(0),
        status: 'WAITING_UPLOAD',
        pollsLeft: fake.processingPolls,
        parts,
        uploadToken,
        fileSizeBytes: size,
      });
      return {
        status: 200,
        body: {
          value: {
            uploadUrlsExpireAt: Date.now() + 3600_000,
            video: urn,
            uploadInstructions: parts.map((p, i) => ({
              uploadUrl: `${ctx.base}/dms-uploads/video/${encodeURIComponent(urn)}/part/${i}`,
              firstByte: p.firstByte,
              lastByte: p.lastByte,
            })),
            uploadToken,
          },
        },
      };
    }

    if (req.method === 'POST' && req.path === '/rest/videos' && action === 'finalizeUpload') {
      const r = (
        (req.json ?? {}) as {
          finalizeUploadRequest?: { video?: string; uploadToken?: string; uploadedPartIds?: string[] };
        }
      ).finalizeUploadRequest;
      const a = fake.assets.get(r?.video ?? '');
      if (!a) return li(404, `Video ${r?.video} not found`);
      if ((r?.uploadToken ?? '') !== a.uploadToken) return li(400, 'Invalid uploadToken');
      const ids = r?.uploadedPartIds ?? [];
      if (ids.length !== a.parts.length || a.parts.some((p, i) => p.etag !== ids[i] || !p.data)) {
        return li(400, 'The uploadedPartIds do not match the uploaded parts');
      }
      a.bytes = Buffer.concat(a.parts.map((p) => p.data ?? Buffer.alloc(0)));
      a.status = fake.failVideoProcessing ? 'PROCESSING_FAILED' : 'PROCESSING';
      return { status: 200 };
    }

    const assetGet = /^\/rest\/(images|videos|documents)\/(.+)$/.exec(req.path);
    if (req.method === 'GET' && assetGet) {
      const a = fake.assets.get(decodeURIComponent(assetGet[2] ?? ''));
      if (!a) return li(404, 'Not Found');
      if (a.status === 'PROCESSING') {
        if (a.pollsLeft > 0) a.pollsLeft--;
        else a.status = 'AVAILABLE';
      }
      return { status: 200, body: assetJson(a, ctx.base) };
    }

    const isAdmin = fake.oauth.allows(token, 'r_organization_admin', 'rw_organization_admin');
    if (req.method === 'GET' && req.path === '/rest/organizationAcls') {
      if (req.query.get('q') !== 'roleAssignee') return li(400, 'Invalid query parameters passed to request');
      if (!isAdmin) return denied('organizationAcls.FINDER-roleAssignee.20240501');
      const role = req.query.get('role');
      const state = req.query.get('state');
      const elements = orgsOf(me)
        .filter(() => (!role || role === 'ADMINISTRATOR') && (!state || state === 'APPROVED'))
        .map((o) => ({
          roleAssignee: `urn:li:person:${me.id}`,
          state: 'APPROVED',
          role: 'ADMINISTRATOR',
          organization: `urn:li:organization:${o.id}`,
        }));
      return {
        status: 200,
        body: { paging: { start: 0, count: 10, links: [], total: elements.length }, elements },
      };
    }
    const orgGet = /^\/rest\/organizations\/(\d+)$/.exec(req.path);
    if (req.method === 'GET' && orgGet) {
      if (!isAdmin) return denied('organizations.GET.20240501');
      const org = findOrg(Number(orgGet[1]));
      if (!org) return li(404, `Organization ${orgGet[1]} not found`);
      return {
        status: 200,
        body: {
          id: org.id,
          $URN: `urn:li:organization:${org.id}`,
          localizedName: org.localizedName,
          vanityName: org.vanityName,
          name: {
            localized: { en_US: org.localizedName },
            preferredLocale: { country: 'US', language: 'en' },
          },
          localizedWebsite: `https://${org.vanityName}.example`,
          primaryOrganizationType: 'NONE',
          logoV2: {
            original: `urn:li:digitalmediaAsset:C4E0B${hashId(String(org.id), 10, 'logo')}`,
            cropped: `urn:li:digitalmediaAsset:C4D0B${hashId(String(org.id), 10, 'logo')}`,
            cropInfo: { x: 0, y: 0, width: 0, height: 0 },
          },
          locations: [],
        },
      };
    }
    const sizes = /^\/rest\/networkSizes\/(.+)$/.exec(req.path);
    if (req.method === 'GET' && sizes) {
      if (!fake.oauth.allows(token, 'r_organization_admin', 'rw_organization_admin', 'r_organization_social'))
        return denied('networkSizes.GET.20240501');
      const urn = decodeURIComponent(sizes[1] ?? '');
      if (req.query.get('edgeType') !== 'COMPANY_FOLLOWED_BY_MEMBER')
        return li(400, 'edgeType must be COMPANY_FOLLOWED_BY_MEMBER for an organization');
      const org = findOrg(Number(/^urn:li:organization:(\d+)$/.exec(urn)?.[1] ?? Number.NaN));
      if (!org) return li(404, `Entity ${urn} not found`);
      return { status: 200, body: { firstDegreeSize: org.followers } };
    }

    if (req.method === 'POST' && req.path === '/rest/posts') {
      const author = String(((req.json ?? {}) as Record<string, unknown>).author ?? '');
      if (
        author.startsWith('urn:li:person:') &&
        (!fake.oauth.allows(token, 'w_member_social') ||
          (fake.oauth.find(token) && author !== `urn:li:person:${me.id}`))
      )
        return denied('partnerApiPostsExternal.CREATE.20240501');
      if (
        author.startsWith('urn:li:organization:') &&
        fake.oauth.find(token) &&
        (!fake.oauth.allows(token, 'w_organization_social') ||
          !orgsOf(me).some((o) => `urn:li:organization:${o.id}` === author))
      )
        return denied('partnerApiPostsExternal.CREATE.20240501');
    }
    if (req.method === 'POST' && req.path === '/rest/posts') {
      const b = (req.json ?? {}) as Record<string, unknown>;
      for (const field of ['author', 'lifecycleState', 'distribution', 'visibility'] as const) {
        if (b[field] === undefined)
          return li(422, `ERROR :: /${field} :: field is required but not found and has no default value`);
      }
      const author = String(b.author);
      if (!/^urn:li:(person|organization):[A-Za-z0-9_-]+$/.test(author))
        return li(422, `ERROR :: /author :: "${author}" is not a valid author URN`);
      if (!['PUBLIC', 'CONNECTIONS', 'LOGGED_IN'].includes(String(b.visibility)))
        return li(422, `ERROR :: /visibility :: Invalid value ${String(b.visibility)}`);
      const dist = b.distribution as { feedDistribution?: string };
      if (!['MAIN_FEED', 'NONE'].includes(String(dist.feedDistribution)))
        return li(422, 'ERROR :: /distribution/feedDistribution :: field is required');
      if (b.lifecycleState !== 'PUBLISHED' && b.lifecycleState !== 'DRAFT')
        return li(422, 'ERROR :: /lifecycleState :: Invalid value');
      const commentary = typeof b.commentary === 'string' ? b.commentary : '';
      if ([...commentary].length > 3000)
        return li(422, 'ERROR :: /commentary :: length of commentary exceeds 3000 characters');
      const content = b.content as
        | {
            media?: { id?: string; altText?: string; title?: string };
            multiImage?: { images?: Array<{ id?: string; altText?: string }> };
            poll?: {
              question?: unknown;
              options?: Array<{ text?: unknown }>;
              settings?: { duration?: unknown; voteSelectionType?: unknown };
            };
            article?: {
              source?: unknown;
              title?: unknown;
              description?: unknown;
              thumbnail?: unknown;
              thumbnailAltText?: unknown;
            };
          }
        | undefined;
      // Posts API: `content` is one kind (media, multiImage, poll, article …): a poll takes no media.
      const kinds = Object.keys(content ?? {});
      if (kinds.length > 1)
        return li(
          422,
          `ERROR :: /content :: content must be exactly one of its kinds, not ${kinds.join(' and ')}`,
        );
      if (kinds[0] && !['media', 'multiImage', 'poll', 'article'].includes(kinds[0]))
        return li(422, `ERROR :: /content/${kinds[0]} :: not supported for organic posts by this fake`);
      const refs: Array<{ id?: string; altText?: string; title?: string }> = content?.media
        ? [content.media]
        : (content?.multiImage?.images ?? []);
      if (content?.multiImage && (refs.length < 2 || refs.length > 20))
        return li(422, 'ERROR :: /content/multiImage/images :: multiImage needs 2 to 20 images');
      const media: FakeLinkedInPost['media'] = [];
      let document: FakeLinkedInPost['document'];
      for (const ref of refs) {
        const a = fake.assets.get(ref.id ?? '');
        if (!a) return li(422, `ERROR :: /content/media/id :: ${ref.id} does not exist`);
        if (a.status !== 'AVAILABLE')
          return li(422, `ERROR :: /content/media/id :: ${ref.id} is not AVAILABLE (${a.status})`);
        if (content?.multiImage && a.kind !== 'image')
          return li(422, 'ERROR :: /content/multiImage/images :: only images are allowed');
        if (a.kind === 'document') {
          // Posts API, MediaContent.title: "required for documents".
          if (typeof ref.title !== 'string' || !ref.title.trim())
            return li(422, 'ERROR :: /content/media/title :: field is required for a document');
          document = { urn: a.urn, title: ref.title };
        }
        media.push({ urn: a.urn, altText: ref.altText ?? null, bytes: a.bytes });
      }
      let poll: FakeLinkedInPost['poll'];
      if (content?.poll) {
        // Poll API: a question of at most 140 characters, 2 to 4 options of at most 30, a duration.
        const q = content.poll.question;
        if (typeof q !== 'string' || !q.trim())
          return li(
            422,
            'ERROR :: /content/poll/question :: field is required but not found and has no default value',
          );
        if ([...q].length > 140)
          return li(422, 'ERROR :: /content/poll/question :: length exceeds 140 characters');
        const options = content.poll.options;
        if (!Array.isArray(options) || options.length < 2 || options.length > 4)
          return li(422, 'ERROR :: /content/poll/options :: a poll has 2 to 4 options');
        for (const [i, o] of options.entries()) {
          if (typeof o?.text !== 'string' || !o.text.trim())
            return li(422, `ERROR :: /content/poll/options/${i}/text :: field is required`);
          if ([...o.text].length > 30)
            return li(422, `ERROR :: /content/poll/options/${i}/text :: length exceeds 30 characters`);
        }
        const duration = content.poll.settings?.duration ?? 'SEVEN_DAYS';
        if (!['ONE_DAY', 'THREE_DAYS', 'SEVEN_DAYS', 'FOURTEEN_DAYS'].includes(String(duration)))
          return li(422, `ERROR :: /content/poll/settings/duration :: Invalid value ${String(duration)}`);
        const vote = content.poll.settings?.voteSelectionType;
        if (vote !== undefined && vote !== 'SINGLE_VOTE')
          return li(
            422,
            `ERROR :: /content/poll/settings/voteSelectionType :: Invalid value ${String(vote)}`,
          );
        poll = { question: q, options: options.map((o) => String(o.text)), duration: String(duration) };
      }
      let article: FakeLinkedInPost['article'];
      if (content?.article) {
        // Article Post API: LinkedIn does not scrape the URL; source and title are required, the
        // thumbnail is an image URN uploaded through the Images API.
        const { source, title, description, thumbnail } = content.article;
        if (typeof source !== 'string' || !source)
          return li(
            422,
            'ERROR :: /content/article/source :: field is required but not found and has no default value',
          );
        if (!/^https?:\/\/\S+$/.test(source))
          return li(422, `ERROR :: /content/article/source :: ${source} is not a valid URL`);
        if (typeof title !== 'string' || !title.trim())
          return li(
            422,
            'ERROR :: /content/article/title :: field is required but not found and has no default value',
          );
        let thumb: Buffer | null = null;
        if (thumbnail !== undefined) {
          const a = fake.assets.get(String(thumbnail));
          if (a?.kind !== 'image')
            return li(422, `ERROR :: /content/article/thumbnail :: ${String(thumbnail)} is not an image`);
          if (a.status !== 'AVAILABLE')
            return li(422, `ERROR :: /content/article/thumbnail :: ${a.urn} is not AVAILABLE (${a.status})`);
          thumb = a.bytes;
        }
        article = {
          source,
          title,
          description: typeof description === 'string' ? description : null,
          thumbnail: thumb,
        };
      }
      const text = display(commentary);
      if (fake.posts.some((p) => p.author === author && p.commentary === commentary && commentary !== '')) {
        const dup = fake.posts.find((p) => p.author === author && p.commentary === commentary);
        return {
          status: 422,
          body: {
            errorDetailType: 'com.linkedin.common.error.BadRequest',
            message: `com.linkedin.content.common.exception.BadRequestResponseException: Content is a duplicate of ${dup?.urn}`,
            errorDetails: {
              inputErrors: [{ description: 'Duplicate post is detected', input: {}, code: 'DUPLICATE_POST' }],
            },
            status: 422,
          },
        };
      }
      const urn = `urn:li:share:${next()}`;
      fake.posts.push({
        urn,
        author,
        commentary,
        text,
        visibility: String(b.visibility),
        body: b,
        createdAt: Date.now(),
        media,
        ...(document ? { document } : {}),
        ...(poll ? { poll } : {}),
        ...(article ? { article } : {}),
      });
      return { status: 201, headers: { 'x-restli-id': urn, 'x-linkedin-id': urn } };
    }

    if (req.method === 'GET' && req.path === '/rest/posts' && req.query.get('q') === 'author') {
      if (!fake.canReadPosts) {
        return li(403, 'Not enough permissions to access: partnerApiPostsExternal.FINDER-author.20240501', {
          serviceErrorCode: 100,
          code: 'ACCESS_DENIED',
        });
      }
      const author = req.query.get('author') ?? '';
      const count = Math.min(100, Number(req.query.get('count') ?? 10));
      const elements = fake.posts
        .filter((p) => p.author === author)
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, count)
        .map((p) => ({
          id: p.urn,
          author: p.author,
          commentary: p.commentary,
          visibility: p.visibility,
          lifecycleState: 'PUBLISHED',
          createdAt: p.createdAt,
          publishedAt: p.createdAt,
          lastModifiedAt: p.createdAt,
          distribution: {
            feedDistribution: 'MAIN_FEED',
            targetEntities: [],
            thirdPartyDistributionChannels: [],
          },
          isReshareDisabledByAuthor: false,
          ...(p.body.content ? { content: p.body.content } : {}),
        }));
      return {
        status: 200,
        body: { paging: { start: 0, count, links: [], total: elements.length }, elements },
      };
    }

    const commented = /^\/rest\/socialActions\/([^/]+)\/comments$/.exec(req.path);
    if (commented && (req.method === 'POST' || req.method === 'GET')) {
      const target = decodeURIComponent(commented[1] ?? '');
      const onComment = fake.comments.find((c) => c.urn === target);
      const post = onComment?.post ?? target;
      if (req.method === 'GET') {
        if (!fake.canReadPosts) return denied('socialActions.comments.FINDER.20240501');
        if (fake.oauth.find(token) && !fake.oauth.allows(token, 'r_organization_social', 'r_member_social'))
          return denied('socialActions.comments.FINDER.20240501');
        if (!onComment && !fake.posts.some((p) => p.urn === post))
          return li(404, `Entity ${target} not found`);
        const start = Number(req.query.get('start') ?? 0);
        const count = Number(req.query.get('count') ?? 10);
        if (!Number.isInteger(start) || start < 0 || !Number.isInteger(count) || count < 1 || count > 100)
          return li(400, 'Invalid paging parameters: start must be ≥ 0 and count between 1 and 100');
        const all = fake.comments
          .filter((c) => (onComment ? c.parent === onComment.urn : c.post === post && !c.parent))
          .sort((a, b) => b.createdAt - a.createdAt);
        const elements = all.slice(start, start + count).map(commentJson);
        return { status: 200, body: { paging: { start, count, links: [], total: all.length }, elements } };
      }
      const b = (req.json ?? {}) as { actor?: unknown; object?: unknown; message?: { text?: unknown } };
      const actor = String(b.actor ?? '');
      if (!/^urn:li:(person|organization):[A-Za-z0-9_-]+$/.test(actor))
        return li(422, 'ERROR :: /actor :: field is required but not found and has no default value');
      const mine = fake.oauth.find(token);
      if (
        (actor.startsWith('urn:li:person:') &&
          (!fake.oauth.allows(token, 'w_member_social') || (mine && actor !== `urn:li:person:${me.id}`))) ||
        (actor.startsWith('urn:li:organization:') &&
          mine &&
          (!fake.oauth.allows(token, 'w_organization_social') ||
            !orgsOf(me).some((o) => `urn:li:organization:${o.id}` === actor)))
      )
        return denied('socialActions.comments.CREATE.20240501');
      const text = typeof b.message?.text === 'string' ? b.message.text : '';
      if (!text.trim()) return li(422, 'ERROR :: /message/text :: field is required but not found');
      if ([...text].length > 1250) return li(422, 'ERROR :: /message/text :: length exceeds 1250 characters');
      if (b.object !== undefined && b.object !== post)
        return li(400, `ERROR :: /object :: ${String(b.object)} does not match ${post}`);
      const parentComment = (b as { parentComment?: unknown }).parentComment;
      if (onComment && parentComment !== onComment.urn)
        return li(422, 'ERROR :: /parentComment :: must name the comment of the request path');
      if (onComment?.parent)
        return li(422, 'ERROR :: /parentComment :: a reply cannot be answered in a reply');
      if (!onComment && !fake.posts.some((p) => p.urn === post)) return li(404, `Entity ${target} not found`);
      const id = next();
      const c: FakeLinkedInComment = {
        urn: `urn:li:comment:(${post},${id})`,
        id,
        post,
        actor,
        text,
        createdAt: Date.now(),
        ...(onComment ? { parent: onComment.urn } : {}),
      };
      fake.comments.push(c);
      if (fake.loseNextCommentResponse) {
        fake.loseNextCommentResponse = false;
        return { status: 504, body: 'upstream request timeout' };
      }
      return { status: 201, headers: { 'x-restli-id': id }, body: commentJson(c) };
    }

    // DELETE /rest/posts/{encoded post URN} with X-RestLi-Method: DELETE (Posts API, "Delete Posts";
    // the author's w_member_social or w_organization_social) → 204. Deletes are idempotent: a post
    // deleted before answers 204 again; a URN that never was a post, 404.
    const removing = /^\/rest\/posts\/(.+)$/.exec(req.path);
    if (req.method === 'DELETE' && removing) {
      const urn = decodeURIComponent(removing[1] ?? '');
      if (req.headers['x-restli-method']?.toUpperCase() !== 'DELETE')
        return li(400, 'X-RestLi-Method header is required for a DELETE');
      const i = fake.posts.findIndex((p) => p.urn === urn);
      const post = fake.posts[i];
      if (post) {
        const scope = post.author.startsWith('urn:li:person:') ? 'w_member_social' : 'w_organization_social';
        if (!fake.oauth.allows(token, scope)) return denied('partnerApiPostsExternal.DELETE.20240501');
        fake.posts.splice(i, 1);
        fake.deleted.push(urn);
        return { status: 204 };
      }
      return fake.deleted.includes(urn) ? { status: 204 } : li(404, `Entity ${urn} not found`);
    }

    if (req.method === 'GET' && req.path === '/rest/socialMetadata') {
      const m = /^List\((.*)\)$/.exec(req.query.get('ids') ?? '');
      if (!m) return li(400, 'ids must be a List(...) of post URNs');
      const urns = (m[1] ?? '').split(',').filter(Boolean).map(decodeURIComponent);
      const results: Record<string, unknown> = {};
      const errors: Record<string, unknown> = {};
      for (const urn of urns) {
        if (fake.posts.some((p) => p.urn === urn)) results[urn] = metadata(urn);
        else errors[urn] = { status: 404, message: `Entity ${urn} not found` };
      }
      return { status: 200, body: { results, statuses: {}, errors } };
    }
    const social = /^\/rest\/socialMetadata\/(.+)$/.exec(req.path);
    if (req.method === 'GET' && social) {
      const urn = decodeURIComponent(social[1] ?? '');
      if (!fake.posts.some((p) => p.urn === urn)) return li(404, `Entity ${urn} not found`);
      return { status: 200, body: metadata(urn) };
    }

    return null;
  }

  /** A post's social metadata: the reactions set on it, and its comments (those set plus those made). */
  function metadata(urn: string) {
    const r = fake.reactions.get(urn) ?? { likes: 0, comments: 0 };
    const made = fake.comments.filter((c) => c.post === urn);
    const count = r.comments + made.length;
    const topLevelCount = r.comments + made.filter((c) => !c.parent).length;
    return {
      entity: urn,
      reactionSummaries: r.likes
        ? {
            LIKE: { reactionType: 'LIKE', count: r.likes - 1 },
            PRAISE: { reactionType: 'PRAISE', count: 1 },
          }
        : {},
      commentsState: 'OPEN',
      commentSummary: { count, topLevelCount },
    };
  }

  function commentJson(c: FakeLinkedInComment) {
    const replies = fake.comments.filter((r) => r.parent === c.urn).length;
    return {
      id: c.id,
      commentUrn: c.urn,
      $URN: c.urn,
      actor: c.actor,
      object: c.post,
      ...(c.parent ? { parentComment: c.parent } : {}),
      commentsSummary: {
        aggregatedTotalComments: replies,
        totalFirstLevelComments: replies,
        selectedComments: [],
      },
      message: { text: c.text, attributes: [] },
      created: { actor: c.actor, time: c.createdAt },
      lastModified: { actor: c.actor, time: c.createdAt },
    };
  }

  const fake: FakeLinkedIn = {
    name: 'linkedin',
    oauth: new FakeOAuth({
      platform: 'linkedin',
      prefixes: { access: 'AQV', refresh: 'AQX', code: 'AQT' },
      defaultUser: () =>
        defaultAccount({
          id: 'abc',
          username: 'acme',
          displayName: 'Ada Acme',
          followers: 830,
          following: 0,
          posts: 0,
        }),
      makeUser: (name) => namedAccount(name, hashId(name, 10, 'linkedin'), { displayName: `${name} Member` }),
    }),
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clients: new Map([['client-id', 'client-secret']]),
    assets: new Map(),
    posts: [],
    deleted: [],
    canReadPosts: true,
    processingPolls: 0,
    failVideoProcessing: false,
    failDocumentProcessing: false,
    minted: [],
    reactions: new Map(),
    comments: [],
    loseNextCommentResponse: false,
    inbox(seed: InboxSeed): { platform_id: string } {
      if (seed.kind !== 'comment')
        throw new Error('linkedin: only comments come back to an organization page');
      const to = seed.to ?? 'urn:li:organization:2414183';
      const at = seed.created_at ? Date.parse(seed.created_at) : Date.now();
      const parent = seed.parent ? fake.comments.find((c) => c.urn === seed.parent) : undefined;
      let post = parent?.post ?? seed.parent ?? fake.posts.filter((p) => p.author === to).at(-1)?.urn;
      if (!post || !fake.posts.some((p) => p.urn === post)) {
        post = post ?? `urn:li:share:${next()}`;
        fake.posts.push({
          urn: post,
          author: to,
          commentary: 'A post of the page',
          text: 'A post of the page',
          visibility: 'PUBLIC',
          body: {},
          createdAt: Number.isFinite(at) ? at - 60_000 : Date.now(),
          media: [],
        });
      }
      const id = next();
      const c: FakeLinkedInComment = {
        urn: `urn:li:comment:(${post},${id})`,
        id,
        post,
        actor: `urn:li:person:${seed.author?.id ?? hashId(seed.author?.handle ?? 'member', 10, 'linkedin')}`,
        text: seed.text,
        createdAt: Number.isFinite(at) ? at : Date.now(),
        ...(parent ? { parent: parent.parent ?? parent.urn } : {}),
      };
      fake.comments.push(c);
      return { platform_id: c.urn };
    },
    reset() {
      seq = 0;
      fake.oauth.reset();
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.clients = new Map([['client-id', 'client-secret']]);
      fake.assets = new Map();
      fake.posts = [];
      fake.deleted = [];
      fake.canReadPosts = true;
      fake.processingPolls = 0;
      fake.failVideoProcessing = false;
      fake.failDocumentProcessing = false;
      fake.minted = [];
      fake.reactions = new Map();
      fake.comments = [];
      fake.loseNextCommentResponse = false;
    },
    handle,
  };
  return fake;
}
