import { DOORKEEPER, mastodonAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  basicAuth,
  defaultAccount,
  errorPage,
  FakeOAuth,
  type FakeUser,
  formOf,
  hashDigits,
  hashNumber,
  namedAccount,
  random,
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

// Contract fake of a Mastodon instance: POST /api/v2/media (multipart `file`, `description`; 200 for
// images, 202 with url null for video/audio until processed), GET /api/v1/media/:id (206 while
// processing), POST /api/v1/statuses with Idempotency-Key (a repeat returns the original status;
// in_reply_to_id makes a reply, 404 when that status does not exist; `poll` {options, expires_in,
// multiple, hide_totals} checked against the instance's configuration.polls, which GET
// /api/v2/instance states, and refused beside media_ids),
// GET /api/v1/statuses/:id, GET /api/v1/accounts/verify_credentials and
// /api/v1/accounts/:id/statuses (newest first, limit/max_id). Statuses carry HTML `content` the way
// Mastodon renders it. Ids are Mastodon's Snowflake-like ones (milliseconds << 16 | sequence), so a
// backdated seed sorts by its created_at.
//
// The inbox's read side (docs.joinmastodon.org methods/notifications, methods/conversations,
// methods/statuses#context; entities/Notification, entities/Conversation; app/lib/paginable and
// app/models/account_conversation.rb for the paging): someone else's status seeded by `inbox(seed)`
// (a comment: a reply to one of the account's statuses; a mention; a direct message, visibility
// direct) makes a `mention` notification for the account, as the instance does, and a message also
// puts the status into its conversation.
//   GET /api/v1/notifications  read or read:notifications; types[] / exclude_types[], limit (default
//                              40, max 80), max_id / since_id / min_id (min_id: the page immediately
//                              newer, still newest first); Link header rel="next" (max_id, when the
//                              page is full) and rel="prev" (min_id, when it is not empty)
//   GET /api/v1/conversations  read or read:statuses; {id, unread, accounts (the others), last_status},
//                              paged by the last status' id (limit default 20, max 40), same Link header
//   GET /api/v1/statuses/:id/context  {ancestors, descendants}, oldest first
// A direct reply (visibility direct, in_reply_to_id a message) moves the conversation's last_status.
// A seed's `to` is a user id or username of the fake (default: the default account, "acme"); its
// author's handle is `user@host` (default bob@other.example). Errors are `{"error": "…"}`: 401 "The access token is invalid", 422
// "Validation failed: …", 404 "Record not found".
//
// OAuth (docs.joinmastodon.org methods/apps and methods/oauth; Doorkeeper's wording for errors):
//   POST /api/v1/apps        JSON or form: client_name, redirect_uris (string, newline-separated string or
//                            array), scopes (space-separated, default read), website → CredentialApplication
//                            {id, name, website, scopes, redirect_uri, redirect_uris, client_id, client_secret,
//                            client_secret_expires_at: 0}; any number of apps, each remembered
//   GET  /oauth/authorize    response_type=code, client_id, redirect_uri (one the app registered;
//                            urn:ietf:wg:oauth:2.0:oob shows the code on a page), scope (space-separated,
//                            within the app's scopes; read covers read:*), state, code_challenge (S256)
//   POST /oauth/token        JSON or form, client auth in the body or Basic: authorization_code (code,
//                            redirect_uri, code_verifier when a challenge was sent) or client_credentials
//                            → {access_token, token_type: "Bearer", scope, created_at}; no refresh token,
//                            no expiry (fake_token_lifetime still applies)
//   POST /oauth/revoke       client_id, client_secret, token → 200 {} (idempotent); another app's token 403
// Error answers, from Mastodon's and Doorkeeper's source (documented-errors.ts builds them): the token
// endpoint answers Doorkeeper's OAuth::ErrorResponse — 401 invalid_client, 400 invalid_grant "The provided
// authorization grant is invalid, expired, revoked, does not match the redirection URI used in the
// authorization request, or was issued to another client." (and invalid_request, invalid_scope,
// unsupported_grant_type), every one with `WWW-Authenticate: Bearer realm="Doorkeeper", error="…",
// error_description="…"` and Cache-Control no-store — RFC 6749 §5.2's 401 and header for invalid_client.
// Dead tokens answer Api::BaseController's 401 {"error": "The access token was revoked" / "The access token
// expired" / "The access token is invalid"} (Doorkeeper's invalid_token wordings) with WWW-Authenticate
// error="invalid_token". Throttling (config/initializers/rack_attack.rb, docs.joinmastodon.org "Rate
// limits"): 429 {"error": "Too many requests"} with X-RateLimit-Limit, X-RateLimit-Remaining 0 and
// X-RateLimit-Reset as an ISO 8601 time — never produced on its own: inject
// documentedErrors.mastodon.throttled. A refusal redirects error=access_denied&error_description=The
// resource owner or authorization server denied the request. verify_credentials answers the token's user
// (needs read, read:accounts or profile); POST /api/v1/statuses needs write or write:statuses, POST
// /api/v2/media write or write:media (403 "This action is outside the authorized scopes"). Statuses are
// still authored by the default account whoever posts them, but a reply to one names the account
// whose token posted it (in_reply_to_account_id), so a comment on a fake_user's post is theirs.

export interface FakeMastodonMedia {
  id: string;
  type: 'image' | 'gifv' | 'video' | 'audio';
  mimeType: string;
  filename: string;
  bytes: Buffer;
  description: string | null;
  pendingPolls: number;
  ready: boolean;
}

/** The instance's poll limits (GET /api/v2/instance configuration.polls; Mastodon's defaults). */
export interface FakeMastodonPollLimits {
  max_options: number;
  max_characters_per_option: number;
  /** Seconds. */
  min_expiration: number;
  max_expiration: number;
}

export const MASTODON_POLL_LIMITS: FakeMastodonPollLimits = {
  max_options: 4,
  max_characters_per_option: 50,
  min_expiration: 300,
  max_expiration: 2_629_746,
};

/** A status' poll as the instance keeps it (entities/Poll). */
export interface FakeMastodonPoll {
  id: string;
  expires_at: string;
  multiple: boolean;
  hide_totals: boolean;
  options: Array<{ title: string; votes_count: number }>;
}

export interface FakeMastodonStatus {
  id: string;
  text: string;
  visibility: string;
  spoiler_text: string;
  sensitive: boolean;
  language: string | null;
  created_at: string;
  idempotencyKey: string | null;
  media: FakeMastodonMedia[];
  /** Its poll, or null. */
  poll?: FakeMastodonPoll | null;
  /** in_reply_to_id: the status this one answers, or null. */
  in_reply_to_id: string | null;
  /** The id of the account whose token posted it (a reply to it names that account), default the default account. */
  account_id?: string;
  favourites_count: number;
  reblogs_count: number;
  replies_count: number;
}

export interface FakeMastodon extends FakePlatform {
  readonly oauth: FakeOAuth;
  validTokens: Set<string>;
  media: Map<string, FakeMastodonMedia>;
  posts: FakeMastodonStatus[];
  /** How many GET /api/v1/media/:id answer 206 before an async attachment is ready. */
  processingPolls: number;
  /** Forget idempotency keys (as the instance does after an hour). */
  forgetIdempotencyKeys(): void;
  /** What GET /api/v2/instance states and POST /api/v1/statuses applies to polls (reset: the defaults). */
  pollLimits: FakeMastodonPollLimits;
  account: { id: string; username: string; acct: string };
  /** Statuses of other accounts that reached this one (seeded by `inbox`), by id. */
  others: Map<string, FakeMastodonOther>;
  notifications: FakeMastodonNotification[];
  conversations: Map<string, FakeMastodonConversation>;
}

export interface FakeMastodonAccount {
  id: string;
  username: string;
  acct: string;
  display_name: string;
}

export interface FakeMastodonOther {
  id: string;
  text: string;
  created_at: string;
  account: FakeMastodonAccount;
  visibility: 'public' | 'direct';
  in_reply_to_id: string | null;
  in_reply_to_account_id: string | null;
  /** The account it reaches (a user id of this fake). */
  to: string;
}

export interface FakeMastodonNotification {
  id: string;
  type: 'mention';
  created_at: string;
  to: string;
  accountId: string;
  statusId: string;
}

export interface FakeMastodonConversation {
  id: string;
  to: string;
  accounts: FakeMastodonAccount[];
  lastStatusId: string;
  unread: boolean;
}

/** Mastodon's pagination (app/lib/paginable.rb): newest first; min_id reads the page just above it. */
function paginate<T>(items: T[], key: (t: T) => string, q: URLSearchParams, def: number, max: number): T[] {
  const n = (v: string) => BigInt(v);
  const raw = Number(q.get('limit') ?? def);
  const limit = Math.max(1, Math.min(max, Number.isFinite(raw) && raw > 0 ? Math.floor(raw) : def));
  const maxId = q.get('max_id');
  const sinceId = q.get('since_id');
  const minId = q.get('min_id');
  let list = items.filter((t) => !maxId || n(key(t)) < n(maxId));
  if (minId) {
    list = list
      .filter((t) => n(key(t)) > n(minId))
      .sort((a, b) => (n(key(a)) > n(key(b)) ? 1 : -1))
      .slice(0, limit)
      .reverse();
    return list;
  }
  return list
    .filter((t) => !sinceId || n(key(t)) > n(sinceId))
    .sort((a, b) => (n(key(b)) > n(key(a)) ? 1 : -1))
    .slice(0, limit);
}

/** The Link header Mastodon sends with a page: next (older, when the page was full) and prev (newer). */
function linkHeader(url: string, q: URLSearchParams, page: string[], limit: number): Record<string, string> {
  if (!page.length) return {};
  const keep = [...q.entries()].filter(([k]) => !['max_id', 'since_id', 'min_id'].includes(k));
  const at = (k: string, v: string) => {
    const p = new URLSearchParams(keep);
    p.set(k, v);
    return `<${url}?${p}>`;
  };
  const links: string[] = [];
  if (page.length >= limit) links.push(`${at('max_id', page.at(-1) ?? '')}; rel="next"`);
  links.push(`${at('min_id', page[0] ?? '')}; rel="prev"`);
  return { link: links.join(', ') };
}

const err = (status: number, error: string): FakeResponse => ({ status, body: { error } });
const MAX_CHARS = 500;
const URL_RE = /https?:\/\/[^\s<>"]+/gu;

function escapeHtml(s: string) {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** Mastodon's rendering of plain text: paragraphs, <br />, linkified URLs with hidden scheme spans. */
function render(text: string): string {
  const paragraphs = text.split(/\n{2,}/);
  return paragraphs
    .map((p) => {
      let html = '';
      let last = 0;
      for (const m of p.matchAll(URL_RE)) {
        const url = m[0];
        const i = m.index ?? 0;
        html += escapeHtml(p.slice(last, i));
        const [, scheme = '', rest = ''] = /^(https?:\/\/)(.*)$/.exec(url) ?? [];
        const shown = rest.slice(0, 30);
        html += `<a href="${escapeHtml(url)}" target="_blank" rel="nofollow noopener" translate="no"><span class="invisible">${scheme}</span><span class="${rest.length > 30 ? 'ellipsis' : ''}">${escapeHtml(shown)}</span><span class="invisible">${escapeHtml(rest.slice(30))}</span></a>`;
        last = i + url.length;
      }
      html += escapeHtml(p.slice(last));
      return `<p>${html.replace(/\n/g, '<br />')}</p>`;
    })
    .join('');
}

/**
 * A status' `poll` param as the instance reads it, or why it refuses it: PollOptionsValidator and
 * PollExpirationValidator against the instance's configuration.polls, their errors as the status'
 * ActiveRecord::RecordInvalid words them ("Validation failed: Poll options must have more than one item").
 */
function pollRefused(
  raw: unknown,
  limits: FakeMastodonPollLimits,
):
  | { poll: { options: string[]; expires_in: number; multiple: boolean; hide_totals: boolean } }
  | { error: string } {
  const p = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const options = Array.isArray(p.options) ? p.options.map(String) : [];
  const expiresIn = Number(p.expires_in);
  const errors: string[] = [];
  if (!options.length) errors.push("Poll options can't be blank");
  if (options.length < 2) errors.push('Poll options must have more than one item');
  if (options.length > limits.max_options)
    errors.push(`Poll options can't contain more than ${limits.max_options} items`);
  if (options.some((o) => [...new Intl.Segmenter().segment(o)].length > limits.max_characters_per_option))
    errors.push(`Poll options cannot be longer than ${limits.max_characters_per_option} characters each`);
  if (new Set(options).size !== options.length) errors.push('Poll options contain duplicate items');
  if (!Number.isFinite(expiresIn)) errors.push("Poll expires at can't be blank");
  else if (expiresIn > limits.max_expiration) errors.push('Poll expires at is too far into the future');
  else if (expiresIn < limits.min_expiration) errors.push('Poll expires at is too soon');
  if (errors.length) return { error: `Validation failed: ${errors.join(', ')}` };
  return {
    poll: {
      options,
      expires_in: expiresIn,
      multiple: p.multiple === true || p.multiple === 'true',
      hide_totals: p.hide_totals === true || p.hide_totals === 'true',
    },
  };
}

function charCount(text: string) {
  return [...text.replace(URL_RE, 'x'.repeat(23))].length;
}

const SCOPE_RE = /^(read|write|follow|push|profile|(read|write):[a-z_]+|admin:(read|write)(:[a-z_]+)?)$/;
const OOB = 'urn:ietf:wg:oauth:2.0:oob';
const INVALID_CLIENT = DOORKEEPER.invalid_client;

const AUTHORIZE: AuthorizeSpec = {
  separator: /[ +]+/,
  knownScope: (s) => SCOPE_RE.test(s),
  publishes: (s) => s === 'write' || s === 'write:statuses',
  pkce: 'optional',
  defaultScopes: ['read'],
  denied: {
    error: 'access_denied',
    error_description: 'The resource owner or authorization server denied the request.',
  },
  page: (_status, problem) =>
    problem === 'client'
      ? errorPage(401, 'An error has occurred', INVALID_CLIENT)
      : errorPage(400, 'An error has occurred', 'The redirect uri included is not valid.'),
};

export function createFake(): FakeMastodon {
  let seq = 0;
  // Snowflake-like, as Mastodon's status ids: the time in ms, then a sequence.
  const idAt = (ms: number) => String((BigInt(ms) << 16n) | BigInt(++seq & 0xffff));
  const nextId = () => idAt(Date.now());
  let notificationSeq = 0;
  let conversationSeq = 0;
  const keys = new Map<string, string>();

  let appSeq = 0;
  const oauthError = (status: number, error: string, description: string): FakeResponse => ({
    status,
    body: { error, error_description: description },
  });

  function registerApp(req: FakeRequest): FakeResponse {
    const form = formOf(req);
    const name = form.get('client_name') ?? '';
    if (!name.trim()) return err(422, "Validation failed: Application name can't be blank");
    const uris = form
      .getAll('redirect_uris')
      .flatMap((u) => u.split(/\r?\n/))
      .concat(form.getAll('redirect_uris[]'))
      .map((u) => u.trim())
      .filter(Boolean);
    if (!uris.length) return err(422, "Validation failed: Redirect URI can't be blank");
    for (const u of uris) {
      let ok = u === OOB;
      try {
        ok ||= Boolean(new URL(u).protocol) && !new URL(u).hash;
      } catch {
        ok = false;
      }
      if (!ok) return err(422, 'Validation failed: Redirect URI must be an absolute URI.');
    }
    const scopes = (form.get('scopes') ?? 'read').split(/[ +]+/).filter(Boolean);
    if (scopes.some((sc) => !SCOPE_RE.test(sc)))
      return err(422, "Validation failed: Scopes doesn't match configured on the server.");
    const website = form.get('website') || null;
    const app = fake.oauth.register({
      id: String(563419 + ++appSeq),
      clientId: random(32),
      secret: random(32),
      redirectUris: uris,
      scopes,
      name,
      website,
    });
    return {
      status: 200,
      body: {
        id: app.id,
        name,
        website,
        scopes,
        redirect_uri: uris.join('\n'),
        redirect_uris: uris,
        client_id: app.clientId,
        client_secret: app.secret,
        client_secret_expires_at: 0,
      },
    };
  }

  function client(req: FakeRequest, form: URLSearchParams): string | FakeResponse {
    const basic = basicAuth(req);
    const id = basic?.id ?? form.get('client_id') ?? '';
    const secret = basic?.secret ?? form.get('client_secret') ?? '';
    return fake.oauth.checkClient(id, secret) === 'ok' ? id : mastodonAnswers.oauth('invalid_client');
  }

  function tokenEndpoint(req: FakeRequest): FakeResponse {
    const form = formOf(req);
    const c = client(req, form);
    if (typeof c !== 'string') return c;
    const grantType = form.get('grant_type');
    if (grantType === 'client_credentials') {
      const app = fake.oauth.apps.get(c);
      const scopes = (form.get('scope') ?? 'read').split(/[ +]+/).filter(Boolean);
      if (app?.scopes && scopes.some((sc) => !app.scopes?.includes(sc)))
        return mastodonAnswers.oauth('invalid_scope');
      // An app token acts for no user: its grant's user is the app itself, unknown to revokeUser.
      const grant = {
        id: `app-${c}`,
        clientId: c,
        user: {
          name: `app:${c}`,
          id: app?.id ?? c,
          username: '',
          displayName: app?.name ?? '',
          avatarPath: '',
          followers: 0,
          following: 0,
          posts: 0,
          isDefault: false,
        },
        requested: scopes,
        scopes,
        declined: [],
        lifetime: null,
        redirectUri: '',
        createdAt: Date.now(),
        revoked: null,
        extra: {},
        tokens: new Set<string>(),
      };
      const t = fake.oauth.issue(grant, 'access', null, { app: true });
      return {
        status: 200,
        body: {
          access_token: t.token,
          token_type: 'Bearer',
          scope: scopes.join(' '),
          created_at: Math.floor(t.issuedAt / 1000),
        },
      };
    }
    if (grantType !== 'authorization_code') return mastodonAnswers.oauth('unsupported_grant_type');
    if (!form.get('code') || !form.get('redirect_uri')) return mastodonAnswers.oauth('invalid_request');
    const r = fake.oauth.redeem(form.get('code') ?? '', {
      clientId: c,
      redirectUri: form.get('redirect_uri'),
      verifier: form.get('code_verifier'),
    });
    if (!r.ok) return mastodonAnswers.oauth('invalid_grant');
    const t = fake.oauth.issue(r.grant, 'access', null);
    return {
      status: 200,
      body: {
        access_token: t.token,
        token_type: 'Bearer',
        scope: r.grant.scopes.join(' '),
        created_at: Math.floor(t.issuedAt / 1000),
      },
    };
  }

  function revokeEndpoint(req: FakeRequest): FakeResponse {
    const form = formOf(req);
    const c = client(req, form);
    if (typeof c !== 'string') return c;
    const t = fake.oauth.find(form.get('token'));
    if (t && t.grant.clientId !== c)
      return oauthError(403, 'unauthorized_client', 'You are not authorized to revoke this token');
    if (t) fake.oauth.revokeToken(t.token, 'api');
    return { status: 200, body: {} };
  }

  const fake: FakeMastodon = {
    name: 'mastodon',
    oauth: new FakeOAuth({
      platform: 'mastodon',
      defaultUser: () =>
        defaultAccount({
          id: '109000000000000001',
          username: 'acme',
          displayName: 'Acme',
          followers: 640,
          following: 120,
          posts: 0,
        }),
      makeUser: (name) =>
        namedAccount(name, `109${hashDigits(name, 15, 'mastodon')}`, {
          following: hashNumber(name, 500, 'following'),
          posts: hashNumber(name, 3000, 'statuses'),
        }),
    }),
    validTokens: new Set(['token']),
    media: new Map(),
    posts: [],
    processingPolls: 0,
    pollLimits: { ...MASTODON_POLL_LIMITS },
    account: { id: '109000000000000001', username: 'acme', acct: 'acme' },
    others: new Map(),
    notifications: [],
    conversations: new Map(),
    inbox(seed: InboxSeed) {
      const created = seed.created_at ? Date.parse(seed.created_at) : Date.now();
      const at = Number.isFinite(created) ? created : Date.now();
      const to = seed.to ?? fake.account.id;
      const username = (seed.author?.handle ?? 'bob@other.example').replace(/^@/, '').split('@')[0] ?? 'bob';
      const author: FakeMastodonAccount = {
        id: seed.author?.id ?? `109${hashDigits(seed.author?.handle ?? 'bob', 15, 'mastodon-other')}`,
        username,
        acct: (seed.author?.handle ?? 'bob@other.example').replace(/^@/, ''),
        display_name: seed.author?.name ?? username,
      };
      const parent = seed.parent ?? null;
      const own = parent ? fake.posts.find((p) => p.id === parent) : undefined;
      const parentAccount = parent
        ? own
          ? (own.account_id ?? fake.account.id)
          : (fake.others.get(parent)?.account.id ?? null)
        : null;
      const mention = `@${fake.account.username}`;
      // A mention names the account in its text; a comment (a reply) and a message carry it as a
      // mention, the way clients prefix replies and direct messages.
      const text = seed.text.includes(mention) ? seed.text : `${mention} ${seed.text}`;
      const status: FakeMastodonOther = {
        id: idAt(at),
        text,
        created_at: new Date(at).toISOString(),
        account: author,
        visibility: seed.kind === 'message' ? 'direct' : 'public',
        in_reply_to_id: parent,
        in_reply_to_account_id: parentAccount,
        to,
      };
      fake.others.set(status.id, status);
      fake.notifications.push({
        id: String(++notificationSeq + 4000),
        type: 'mention',
        created_at: status.created_at,
        to,
        accountId: author.id,
        statusId: status.id,
      });
      if (seed.kind === 'message') {
        const existing = seed.conversation
          ? fake.conversations.get(seed.conversation)
          : [...fake.conversations.values()].find(
              (c) => c.to === to && c.accounts.some((a) => a.id === author.id),
            );
        const conv = existing ?? {
          id: seed.conversation ?? String(++conversationSeq + 700),
          to,
          accounts: [author],
          lastStatusId: status.id,
          unread: true,
        };
        if (BigInt(status.id) >= BigInt(conv.lastStatusId)) conv.lastStatusId = status.id;
        conv.unread = true;
        fake.conversations.set(conv.id, conv);
      }
      return { platform_id: status.id };
    },
    forgetIdempotencyKeys() {
      keys.clear();
    },
    reset() {
      seq = 0;
      appSeq = 0;
      notificationSeq = 0;
      conversationSeq = 0;
      fake.others = new Map();
      fake.notifications = [];
      fake.conversations = new Map();
      fake.oauth.reset();
      keys.clear();
      fake.validTokens = new Set(['token']);
      fake.media = new Map();
      fake.posts = [];
      fake.processingPolls = 0;
      fake.pollLimits = { ...MASTODON_POLL_LIMITS };
    },

    async handle(req: FakeRequest, ctx: FakeContext): Promise<FakeResponse | null> {
      if (req.method === 'POST' && req.path === '/api/v1/apps') return registerApp(req);
      if (req.method === 'GET' && req.path === '/oauth/authorize') {
        const res = fake.oauth.authorize(req, AUTHORIZE);
        const location = res.headers?.location ?? '';
        if (res.status === 302 && location.startsWith(OOB)) {
          const code = new URL(location).searchParams.get('code');
          if (code)
            return {
              status: 200,
              headers: { 'content-type': 'text/html; charset=utf-8' },
              body: `<!doctype html><html><body><h1>Authorization code</h1><input class="oauth-code" readonly value="${code}"></body></html>`,
            };
        }
        return res;
      }
      if (req.method === 'POST' && req.path === '/oauth/token') return tokenEndpoint(req);
      if (req.method === 'POST' && req.path === '/oauth/revoke') return revokeEndpoint(req);
      const avatar = serveAvatar(req);
      if (avatar) return avatar;
      // GET /api/v2/instance (methods/instance#v2, public): the part of `configuration` statuses obey.
      if (req.method === 'GET' && req.path === '/api/v2/instance')
        return {
          status: 200,
          body: {
            domain: new URL(ctx.base).host,
            title: 'Fake Mastodon',
            version: '4.3.0',
            configuration: {
              statuses: {
                max_characters: MAX_CHARS,
                max_media_attachments: 4,
                characters_reserved_per_url: 23,
              },
              polls: fake.pollLimits,
            },
          },
        };

      const token = bearer(req);
      const issued = fake.oauth.check(token);
      if (issued.state === 'revoked' || issued.state === 'expired')
        return mastodonAnswers.token(issued.state);
      if (!token || (issued.state === 'unknown' && !fake.validTokens.has(token)))
        return mastodonAnswers.token('unknown');
      const me: FakeUser | null =
        issued.state === 'valid'
          ? issued.token.meta.app
            ? null
            : issued.token.grant.user
          : fake.oauth.user();
      const outside = (...scopes: string[]) =>
        fake.oauth.allows(token, ...scopes) ? null : err(403, 'This action is outside the authorized scopes');
      if (req.method === 'POST' && req.path === '/api/v2/media') {
        const denied = outside('write', 'write:media');
        if (denied) return denied;
      }
      if (req.method === 'POST' && req.path === '/api/v1/statuses') {
        const denied = outside('write', 'write:statuses');
        if (denied) return denied;
        if (!me) return err(422, 'This method requires an authenticated user');
      }
      const base = ctx.base;
      const attachmentJson = (m: FakeMastodonMedia) => ({
        id: m.id,
        type: m.type,
        url: m.ready ? `${base}/system/media_attachments/files/${m.id}/original/${m.filename}` : null,
        preview_url: `${base}/system/media_attachments/files/${m.id}/small/${m.filename}`,
        remote_url: null,
        text_url: null,
        meta: {},
        description: m.description,
        blurhash: 'UFBWY:8_0Jxv?bIUt7xt',
      });
      const account = { ...fake.account, display_name: 'Acme', url: `${base}/@${fake.account.username}` };
      const accountJson = (a: FakeMastodonAccount) => ({
        ...a,
        url: `${base}/@${a.acct}`,
        avatar: `${base}/avatars/original/${a.id}.png`,
        avatar_static: `${base}/avatars/original/${a.id}.png`,
        bot: false,
      });
      // Mentions render as h-cards showing the username (as app/lib/text_formatter.rb does).
      const withMentions = (html: string) =>
        html.replace(
          /(^|[\s>])@([A-Za-z0-9_]+)(?:@([A-Za-z0-9.-]+))?/g,
          (_m, pre: string, user: string, host?: string) =>
            `${pre}<span class="h-card" translate="no"><a href="${base}/@${host ? `${user}@${host}` : user}" class="u-url mention">@<span>${user}</span></a></span>`,
        );
      const accountOf = (id: string | null) =>
        id === null
          ? null
          : id === fake.account.id
            ? fake.account.id
            : (fake.others.get(id)?.account.id ?? null);
      // entities/Poll: votes are hidden (null) while a hide_totals poll is open.
      const pollJson = (poll: FakeMastodonPoll) => {
        const expired = Date.parse(poll.expires_at) <= Date.now();
        const shown = expired || !poll.hide_totals;
        return {
          id: poll.id,
          expires_at: poll.expires_at,
          expired,
          multiple: poll.multiple,
          votes_count: 0,
          voters_count: poll.multiple ? 0 : null,
          voted: false,
          own_votes: [],
          options: poll.options.map((o) => ({ title: o.title, votes_count: shown ? o.votes_count : null })),
          emojis: [],
        };
      };
      const statusJson = (s: FakeMastodonStatus) => ({
        id: s.id,
        created_at: s.created_at,
        in_reply_to_id: s.in_reply_to_id,
        in_reply_to_account_id: s.in_reply_to_id
          ? fake.posts.some((p) => p.id === s.in_reply_to_id)
            ? (fake.posts.find((p) => p.id === s.in_reply_to_id)?.account_id ?? fake.account.id)
            : accountOf(s.in_reply_to_id)
          : null,
        sensitive: s.sensitive,
        spoiler_text: s.spoiler_text,
        visibility: s.visibility,
        language: s.language,
        uri: `${base}/users/${fake.account.username}/statuses/${s.id}`,
        url: `${base}/@${fake.account.username}/${s.id}`,
        replies_count: s.replies_count,
        reblogs_count: s.reblogs_count,
        favourites_count: s.favourites_count,
        content: withMentions(render(s.text)),
        account,
        media_attachments: s.media.map(attachmentJson),
        poll: s.poll ? pollJson(s.poll) : null,
        mentions: [],
        tags: [],
        emojis: [],
      });
      const otherJson = (s: FakeMastodonOther) => ({
        id: s.id,
        created_at: s.created_at,
        in_reply_to_id: s.in_reply_to_id,
        in_reply_to_account_id: s.in_reply_to_account_id,
        sensitive: false,
        spoiler_text: '',
        visibility: s.visibility,
        language: 'en',
        uri: `https://${s.account.acct.split('@')[1] ?? 'other.example'}/users/${s.account.username}/statuses/${s.id}`,
        url: `${base}/@${s.account.acct}/${s.id}`,
        replies_count: 0,
        reblogs_count: 0,
        favourites_count: 0,
        content: withMentions(render(s.text)),
        account: accountJson(s.account),
        media_attachments: [],
        mentions: [
          { id: fake.account.id, username: fake.account.username, acct: fake.account.acct, url: account.url },
        ],
        tags: [],
        emojis: [],
      });
      const anyJson = (id: string) => {
        const own = fake.posts.find((x) => x.id === id);
        if (own) return statusJson(own);
        const other = fake.others.get(id);
        return other ? otherJson(other) : null;
      };
      const parentOf = (id: string) =>
        fake.posts.find((x) => x.id === id)?.in_reply_to_id ?? fake.others.get(id)?.in_reply_to_id ?? null;
      const isMe = (to: string) => !!me && (to === me.id || to === me.username);

      if (req.method === 'POST' && req.path === '/api/v2/media') {
        let form: FormData;
        try {
          form = await new Response(req.body, {
            headers: { 'content-type': req.headers['content-type'] ?? '' },
          }).formData();
        } catch {
          return err(422, "Validation failed: File can't be blank");
        }
        const file = form.get('file');
        if (!file || typeof file === 'string') return err(422, "Validation failed: File can't be blank");
        const mimeType = file.type;
        const kind = mimeType.split('/')[0];
        if (!['image', 'video', 'audio'].includes(kind ?? ''))
          return err(422, 'Validation failed: File content type is invalid, File is invalid');
        const description = form.get('description');
        if (typeof description === 'string' && description.length > 1500) {
          return err(422, 'Validation failed: Description is too long (maximum is 1500 characters)');
        }
        const m: FakeMastodonMedia = {
          id: nextId(),
          type:
            kind === 'image' ? (mimeType === 'image/gif' ? 'gifv' : 'image') : (kind as 'video' | 'audio'),
          mimeType,
          filename: file.name,
          bytes: Buffer.from(await file.arrayBuffer()),
          description: typeof description === 'string' ? description : null,
          pendingPolls: fake.processingPolls,
          ready: kind === 'image' && mimeType !== 'image/gif',
        };
        fake.media.set(m.id, m);
        return { status: m.ready ? 200 : 202, body: attachmentJson(m) };
      }

      const mediaGet = /^\/api\/v1\/media\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && mediaGet) {
        const m = fake.media.get(decodeURIComponent(mediaGet[1] ?? ''));
        if (!m) return err(404, 'Record not found');
        if (!m.ready && m.pendingPolls > 0) {
          m.pendingPolls--;
          return { status: 206, body: attachmentJson(m) };
        }
        m.ready = true;
        return { status: 200, body: attachmentJson(m) };
      }

      if (req.method === 'POST' && req.path === '/api/v1/statuses') {
        const key = req.headers['idempotency-key'] ?? null;
        if (key && keys.has(key)) {
          const existing = fake.posts.find((s) => s.id === keys.get(key));
          if (existing) return { status: 200, body: statusJson(existing) };
        }
        const p = (req.json ?? {}) as Record<string, unknown>;
        const text = typeof p.status === 'string' ? p.status : '';
        const mediaIds = Array.isArray(p.media_ids) ? p.media_ids.map(String) : [];
        if (!text.trim() && mediaIds.length === 0) return err(422, "Validation failed: Text can't be blank");
        const spoiler = typeof p.spoiler_text === 'string' ? p.spoiler_text : '';
        if (charCount(text) + [...spoiler].length > MAX_CHARS)
          return err(422, `Validation failed: Text character limit of ${MAX_CHARS} exceeded`);
        if (mediaIds.length > 4) return err(422, 'Validation failed: Cannot attach more than 4 files');
        const poll = p.poll === undefined || p.poll === null ? null : pollRefused(p.poll, fake.pollLimits);
        // PostStatusService#validate_media!: media_ids with a poll raise the too_many ValidationError
        // (its message as is, no "Validation failed:").
        if (poll && mediaIds.length) return err(422, 'Cannot attach more than 4 files');
        if (poll && 'error' in poll) return err(422, poll.error);
        const visibility = p.visibility === undefined ? 'public' : String(p.visibility);
        if (!['public', 'unlisted', 'private', 'direct'].includes(visibility))
          return err(422, 'Validation failed: Visibility is not included in the list');
        // StatusesController#set_thread: a reply to a status that does not exist (or is not visible)
        // answers 404 with the instance's statuses.errors.in_reply_not_found text.
        const inReplyTo =
          p.in_reply_to_id === undefined || p.in_reply_to_id === null ? null : String(p.in_reply_to_id);
        const parent = inReplyTo ? fake.posts.find((x) => x.id === inReplyTo) : undefined;
        if (inReplyTo && !parent && !fake.others.has(inReplyTo))
          return err(404, 'The post you are trying to reply to does not appear to exist.');
        const attached: FakeMastodonMedia[] = [];
        for (const id of mediaIds) {
          const m = fake.media.get(id);
          if (!m) return err(422, 'Validation failed: Media ids are invalid');
          if (!m.ready)
            return err(422, 'Cannot attach files that have not finished processing. Try again in a moment!');
          attached.push(m);
        }
        const s: FakeMastodonStatus = {
          id: nextId(),
          text,
          visibility,
          spoiler_text: spoiler,
          sensitive: p.sensitive === true,
          language: typeof p.language === 'string' ? p.language : null,
          created_at: new Date().toISOString(),
          idempotencyKey: key,
          media: attached,
          poll:
            poll && 'poll' in poll
              ? {
                  id: nextId(),
                  expires_at: new Date(Date.now() + poll.poll.expires_in * 1000).toISOString(),
                  multiple: poll.poll.multiple,
                  hide_totals: poll.poll.hide_totals,
                  options: poll.poll.options.map((title) => ({ title, votes_count: 0 })),
                }
              : null,
          in_reply_to_id: inReplyTo,
          account_id: me?.id ?? fake.account.id,
          favourites_count: 0,
          reblogs_count: 0,
          replies_count: 0,
        };
        fake.posts.push(s);
        if (parent) parent.replies_count++;
        // A direct reply in a conversation becomes its last status (AccountConversation.add_status).
        if (visibility === 'direct' && inReplyTo)
          for (const c of fake.conversations.values())
            if (c.lastStatusId === inReplyTo || parentOf(c.lastStatusId) === inReplyTo) c.lastStatusId = s.id;
        if (key) keys.set(key, s.id);
        return { status: 200, body: statusJson(s) };
      }

      // DELETE /api/v1/statuses/:id (docs.joinmastodon.org methods/statuses#delete, scope write or
      // write:statuses): 200 with the deleted Status and its `text` source (for "delete and redraft");
      // the status is gone, so a second delete is 404 "Record not found". Another account's: 404 too.
      const statusDelete = /^\/api\/v1\/statuses\/([^/]+)$/.exec(req.path);
      if (req.method === 'DELETE' && statusDelete) {
        const denied = outside('write', 'write:statuses');
        if (denied) return denied;
        if (!me) return err(422, 'This method requires an authenticated user');
        const i = fake.posts.findIndex((x) => x.id === decodeURIComponent(statusDelete[1] ?? ''));
        const s = fake.posts[i];
        if (!s) return err(404, 'Record not found');
        fake.posts.splice(i, 1);
        return { status: 200, body: { ...statusJson(s), text: s.text } };
      }

      const statusGet = /^\/api\/v1\/statuses\/([^/]+)$/.exec(req.path);
      if (req.method === 'GET' && statusGet) {
        const s = anyJson(decodeURIComponent(statusGet[1] ?? ''));
        return s ? { status: 200, body: s } : err(404, 'Record not found');
      }

      // GET /api/v1/statuses/:id/context (methods/statuses#context): ancestors and descendants, oldest first.
      const context = /^\/api\/v1\/statuses\/([^/]+)\/context$/.exec(req.path);
      if (req.method === 'GET' && context) {
        const denied = outside('read', 'read:statuses');
        if (denied) return denied;
        const id = decodeURIComponent(context[1] ?? '');
        if (!anyJson(id)) return err(404, 'Record not found');
        const ancestors: unknown[] = [];
        for (let up = parentOf(id); up; up = parentOf(up)) {
          const j = anyJson(up);
          if (j) ancestors.unshift(j);
        }
        const all = [...fake.posts.map((p) => p.id), ...fake.others.keys()];
        const below = new Set<string>([id]);
        const descendants: string[] = [];
        for (const sid of all.sort((a, b) => (BigInt(a) > BigInt(b) ? 1 : -1))) {
          const up = parentOf(sid);
          if (up && below.has(up)) {
            below.add(sid);
            descendants.push(sid);
          }
        }
        return { status: 200, body: { ancestors, descendants: descendants.map(anyJson) } };
      }

      if (req.method === 'GET' && req.path === '/api/v1/notifications') {
        const denied = outside('read', 'read:notifications');
        if (denied) return denied;
        if (!me) return err(422, 'This method requires an authenticated user');
        const types = req.query.getAll('types[]');
        const excluded = req.query.getAll('exclude_types[]');
        const mine = fake.notifications.filter(
          (n) => isMe(n.to) && (!types.length || types.includes(n.type)) && !excluded.includes(n.type),
        );
        const raw = Number(req.query.get('limit') ?? 40);
        const limit = Math.max(1, Math.min(80, Number.isFinite(raw) && raw > 0 ? Math.floor(raw) : 40));
        const page = paginate(mine, (n) => n.id, req.query, 40, 80);
        return {
          status: 200,
          headers: linkHeader(
            `${base}/api/v1/notifications`,
            req.query,
            page.map((n) => n.id),
            limit,
          ),
          body: page.map((n) => {
            const st = fake.others.get(n.statusId);
            return {
              id: n.id,
              type: n.type,
              created_at: n.created_at,
              group_key: `ungrouped-${n.id}`,
              account: st ? accountJson(st.account) : null,
              status: st ? otherJson(st) : null,
            };
          }),
        };
      }

      if (req.method === 'GET' && req.path === '/api/v1/conversations') {
        const denied = outside('read', 'read:statuses');
        if (denied) return denied;
        if (!me) return err(422, 'This method requires an authenticated user');
        const mine = [...fake.conversations.values()].filter((c) => isMe(c.to));
        const raw = Number(req.query.get('limit') ?? 20);
        const limit = Math.max(1, Math.min(40, Number.isFinite(raw) && raw > 0 ? Math.floor(raw) : 20));
        const page = paginate(mine, (c) => c.lastStatusId, req.query, 20, 40);
        return {
          status: 200,
          headers: linkHeader(
            `${base}/api/v1/conversations`,
            req.query,
            page.map((c) => c.lastStatusId),
            limit,
          ),
          body: page.map((c) => ({
            id: c.id,
            unread: c.unread,
            accounts: c.accounts.map(accountJson),
            last_status: anyJson(c.lastStatusId),
          })),
        };
      }

      if (req.method === 'GET' && req.path === '/api/v1/accounts/verify_credentials') {
        const denied = outside('read', 'read:accounts', 'profile');
        if (denied) return denied;
        if (!me) return err(422, 'This method requires an authenticated user');
        const avatar = `${base}${me.avatarPath}`;
        return {
          status: 200,
          body: {
            id: me.id,
            username: me.username,
            acct: me.username,
            display_name: me.displayName,
            locked: false,
            bot: false,
            discoverable: true,
            group: false,
            created_at: '2022-11-01T00:00:00.000Z',
            note: '',
            url: `${base}/@${me.username}`,
            uri: `${base}/users/${me.username}`,
            avatar,
            avatar_static: avatar,
            header: `${base}/headers/original/missing.png`,
            header_static: `${base}/headers/original/missing.png`,
            followers_count: me.followers,
            following_count: me.following,
            statuses_count: me.posts + (me.isDefault ? fake.posts.length : 0),
            last_status_at: null,
            emojis: [],
            fields: [],
            source: { privacy: 'public', sensitive: false, language: null, note: '', fields: [] },
          },
        };
      }

      const accountStatuses = /^\/api\/v1\/accounts\/([^/]+)\/statuses$/.exec(req.path);
      if (req.method === 'GET' && accountStatuses) {
        if (decodeURIComponent(accountStatuses[1] ?? '') !== fake.account.id)
          return err(404, 'Record not found');
        const limit = Math.min(40, Number(req.query.get('limit') ?? 20));
        const maxId = req.query.get('max_id');
        const list = [...fake.posts]
          .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1))
          .filter((s) => !maxId || BigInt(s.id) < BigInt(maxId))
          .slice(0, limit);
        return { status: 200, body: list.map(statusJson) };
      }

      return null;
    },
  };
  return fake;
}
