import { createHash, type Hash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { textLength } from '#core/platforms';
import { xAnswers } from './documented-errors.ts';
import {
  type AuthorizeSpec,
  basicAuth,
  defaultAccount,
  FakeOAuth,
  type FakeToken,
  type FakeUser,
  hashDigits,
  hashNumber,
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

// Contract fake of the X API v2: OAuth 2.0 authorization code flow with PKCE (GET /i/oauth2/authorize on
// x.com; POST /2/oauth2/token for authorization_code and refresh_token grants, single-use refresh tokens;
// POST /2/oauth2/revoke), GET /2/users/me, media upload (simple POST /2/media/upload for images;
// initialize / {id}/append / {id}/finalize and GET ?command=STATUS with processing_info for video and GIFs;
// POST /2/media/metadata for alt text), POST /2/tweets (its body checked against the OpenAPI document's
// CreatePostsRequest in schemas/x-openapi-2.167-inbox.json; a poll kept as X's Poll object, refused
// beside media as the document says; replies: `reply.in_reply_to_tweet_id`; to a
// missing tweet, X's 403 "You attempted to reply to a Tweet that is deleted or not visible to you."),
// GET /2/users/:id/tweets (text as X returns it: links as t.co, a media link appended, & < > escaped;
// `exclude=replies`, `post.fields=referenced_tweets` naming a reply's `replied_to`) and GET /2/tweets?ids=&post.fields=public_metrics
// (field and parameter names as X's OpenAPI document v2.167 declares them).
// Errors are RFC 7807 problems as X sends them; every API answer carries x-rate-limit-limit/-remaining/-reset.
//
// OAuth (docs.x.com "OAuth 2.0 Authorization Code Flow with PKCE"): scopes space-separated; state and an
// S256 (or plain) code_challenge are required. The registered app FAKE_APPS.x is a confidential client:
// the token and revoke endpoints want HTTP Basic; the legacy public client `client-id` sends client_id in
// the form. Token answer {token_type: "bearer", expires_in: 7200, access_token, scope, refresh_token} —
// refresh_token only with offline.access. Revoke answers 200 {"revoked": true}, also for unknown tokens
// (RFC 7009). Unsure: the exact deny redirect (the fake sends error=access_denied&state=…, no
// error_description) and the 403 body for a token lacking a scope (the fake answers the plain Forbidden
// problem).
//
// Error answers, checked against published material (see documented-errors.ts, which builds them):
// - Token endpoint, bad client credentials: 401 {"error": "unauthorized_client", "error_description":
//   "Missing valid authorization header"} — X's answer (node-twitter-api-v2#319, omniauth-twitter2#4), not
//   RFC 6749 §5.2's invalid_client, and without the WWW-Authenticate §5.2 asks for after HTTP Basic.
// - Token endpoint, refused grants: 400 invalid_request (X never answers invalid_grant): "Value passed for
//   the authorization code was invalid." (unknown, used or expired code, other redirect_uri), "Value passed
//   for the code verifier did not match the code challenge." (xdevplatform/twitter-api-typescript-sdk#26),
//   "Value passed for the token was invalid." (used, revoked or unknown refresh token).
// - API, revoked or expired token: 401 {"title": "Unauthorized", "type": "about:blank", "status": 401,
//   "detail": "Unauthorized"} as application/problem+json — the Problem / GenericProblem of X's OpenAPI
//   document 2.159 (xdevplatform/xdk latest-openapi.json; 2.167 in specs/openapi.json lists typed problems
//   only). test/unit/fakes/documented-errors.test.ts validates it against that schema.
// - Throttling: 429 with the same generic problem ("Too Many Requests") and x-rate-limit-remaining 0,
//   x-rate-limit-reset in epoch seconds (docs.x.com "Rate limits"). The fake never throttles on its own:
//   inject documentedErrors.x.throttled (FakePlatforms.failDocumented('x', 'throttled')).
//
// The inbox's read side (docs.x.com "User mention timeline", "Direct Messages lookup" and "Manage Direct
// Messages"), its requests checked against X's OpenAPI document 2.167 (the excerpt in
// schemas/x-openapi-2.167-inbox.json: parameter names, ranges, patterns, enums, the DM body): `inbox(seed)`
// adds someone else's post mentioning the account (a comment: a reply to one of its posts, which X shows
// with the @mention) or a direct message in their one-to-one conversation (id `<low id>-<high id>`).
// A seed's `to` is a user id or username (default: the author of the post it answers, else the default
// account "acme"); `author.id` fixes the other account's id (default: derived from its handle).
//   GET  /2/users/:id/mentions   since_id, start_time, until_id, end_time, pagination_token, max_results
//                                5–100 (default 10), expansions=author_id (includes.users), post.fields
//                                created_at, conversation_id, in_reply_to_user_id, referenced_tweets,
//                                author_id; newest first, meta {result_count, newest_id, oldest_id, next_token}
//   GET  /2/dm_events            event_types, dm_event.fields, expansions=sender_id, max_results 1–100
//                                (default 100), pagination_token (≥ 16 characters); events of the last 30 days
//   GET  /2/dm_conversations/:id/dm_events   the same, for one conversation of the account
//   POST /2/dm_conversations/:id/messages    {text (1–10,000 characters)} → 201 {data: {dm_conversation_id,
//                                dm_event_id}}; dm.write
// Reads need tweet.read and users.read, and dm.read for direct messages (else the 403 Forbidden problem).

export interface FakeXMedia {
  id: string;
  media_key: string;
  category: string;
  mimeType: string;
  totalBytes: number;
  segments: Map<number, Buffer>;
  bytes: Buffer;
  /** SHA-256 (hex) of the bytes in segment order, and their count. */
  sha256: string;
  size: number;
  state: 'uploading' | 'pending' | 'in_progress' | 'succeeded' | 'failed';
  pollsLeft: number;
  alt: string | null;
}

export interface FakeXPoll {
  id: string;
  options: Array<{ position: number; label: string; votes: number }>;
  duration_minutes: number;
  end_datetime: string;
  voting_status: 'open' | 'closed';
}

export interface FakeTweet {
  id: string;
  text: string;
  author_id: string;
  created_at: string;
  media: FakeXMedia[];
  reply_settings: string | null;
  /** The tweet this one replies to (`reply.in_reply_to_tweet_id`), or null. */
  in_reply_to: string | null;
  /** Its poll, as X's Poll object shows it, or null. */
  poll: FakeXPoll | null;
  public_metrics: {
    retweet_count: number;
    reply_count: number;
    like_count: number;
    quote_count: number;
    bookmark_count: number;
    impression_count: number;
  };
}

export interface FakeXDmEvent {
  id: string;
  event_type: 'MessageCreate';
  text: string;
  sender_id: string;
  dm_conversation_id: string;
  created_at: string;
  participant_ids: string[];
}

export interface FakeX extends FakePlatform {
  readonly oauth: FakeOAuth;
  validTokens: Set<string>;
  refreshTokens: Set<string>;
  /** client_ids accepted by the token endpoint. */
  clientIds: Set<string>;
  user: { id: string; username: string };
  media: Map<string, FakeXMedia>;
  posts: FakeTweet[];
  /** STATUS polls that answer in_progress before a video succeeds. */
  processingPolls: number;
  /** Make processing of the next chunked upload fail (InvalidMedia). */
  failProcessing: boolean;
  /**
   * Keep no segment bytes, only a hash and count (`bytes` stays empty): the media bench's 500 MB.
   * Segments must then come in order, as the connector sends them.
   */
  countOnly: boolean;
  /** Tokens minted by refreshes, newest last. */
  minted: Array<{ access_token: string; refresh_token: string }>;
  /** Ids of the posts DELETE /2/tweets/:id removed, in order. */
  deleted: string[];
  /** Other accounts that mention or message the account (seeded by `inbox`), by id. */
  users: Map<string, { id: string; username: string; name: string }>;
  /** The posts' mentioned user ids (a comment mentions the author it answers), by post id. */
  mentions: Map<string, string[]>;
  dmEvents: FakeXDmEvent[];
}

const problem = (status: number, title: string, detail: string, type = 'about:blank'): FakeResponse => ({
  status,
  headers: { 'content-type': 'application/problem+json' },
  body: { title, detail, type, status },
});
const invalid = (message: string, parameters: Record<string, unknown> = {}): FakeResponse => ({
  status: 400,
  body: {
    errors: [{ parameters, message }],
    title: 'Invalid Request',
    detail: 'One or more parameters to your request was invalid.',
    type: 'https://api.twitter.com/2/problems/invalid-request',
  },
});

/**
 * The query parameters X's OpenAPI document (v2.167) declares for the post lookups: any other is a
 * 400 naming the ones allowed, as X answers. Post fields are `post.fields` there.
 */
const POST_QUERY = [
  'post.fields',
  'expansions',
  'user.fields',
  'media.fields',
  'poll.fields',
  'place.fields',
];
const QUERY: Record<'lookup' | 'timeline', string[]> = {
  lookup: ['ids', ...POST_QUERY],
  timeline: [
    'max_results',
    'pagination_token',
    'start_time',
    'end_time',
    'since_id',
    'until_id',
    'exclude',
    ...POST_QUERY,
  ],
};

function unknownQuery(query: URLSearchParams, allowed: string[]): FakeResponse | null {
  for (const name of query.keys())
    if (!allowed.includes(name))
      return invalid(`The query parameter [${name}] is not one of [${allowed.join(',')}]`, {
        [name]: [query.get(name)],
      });
  return null;
}

/** The one-shot upload's JSON body allows these fields only (additionalProperties: false). */
const UPLOAD_FIELDS = ['media', 'media_category', 'additional_owners'];

/** An image's type from its first bytes, as X's upload service sniffs it. */
function sniff(bytes: Buffer): string {
  if (bytes.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) return 'image/png';
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'image/jpeg';
  if (
    bytes.subarray(0, 4).toString('latin1') === 'RIFF' &&
    bytes.subarray(8, 12).toString('latin1') === 'WEBP'
  )
    return 'image/webp';
  if (bytes.subarray(0, 2).toString('latin1') === 'BM') return 'image/bmp';
  return 'application/octet-stream';
}

const IMAGE_TYPES = ['image/jpeg', 'image/bmp', 'image/png', 'image/webp', 'image/pjpeg', 'image/tiff'];
const CHUNKED_TYPES = [
  'video/mp4',
  'video/webm',
  'video/mp2t',
  'video/quicktime',
  'image/gif',
  ...IMAGE_TYPES,
];

const X_SCOPES = new Set([
  'tweet.read',
  'tweet.write',
  'tweet.moderate.write',
  'users.email',
  'users.read',
  'follows.read',
  'follows.write',
  'offline.access',
  'space.read',
  'mute.read',
  'mute.write',
  'like.read',
  'like.write',
  'list.read',
  'list.write',
  'block.read',
  'block.write',
  'bookmark.read',
  'bookmark.write',
  'dm.read',
  'dm.write',
  'media.write',
]);

const AUTHORIZE: AuthorizeSpec = {
  separator: / +/,
  knownScope: (s) => X_SCOPES.has(s),
  publishes: (s) => s === 'tweet.write' || s === 'media.write',
  pkce: 'required',
  pkceMethods: ['S256', 'plain'],
  requireState: true,
  defaultScopes: null,
  denied: { error: 'access_denied' },
  page: () => errorPageX(),
};

function errorPageX(): FakeResponse {
  return {
    status: 400,
    headers: { 'content-type': 'text/html; charset=utf-8' },
    body: '<!doctype html><html><body><h1>Something went wrong</h1><p>You weren’t able to give access to the App. Go back and try logging in again.</p></body></html>',
  };
}

const oauthError = (status: number, error: string, description: string): FakeResponse => ({
  status,
  body: { error, error_description: description },
});
const BAD_CLIENT = xAnswers.badClient;

// --- the OpenAPI document's request rules (schemas/x-openapi-2.167-inbox.json) -------------------

interface Param {
  name: string;
  in: string;
  required?: boolean;
  schema?: {
    type?: string;
    minimum?: number;
    maximum?: number;
    pattern?: string;
    minLength?: number;
    items?: { enum?: string[] };
  };
}
interface Operation {
  parameters: Param[];
  requestBody?: { content: { 'application/json': { schema: BodySchema } } };
}
interface BodySchema {
  properties: Record<string, { type?: string; minLength?: number }>;
  additionalProperties?: boolean;
  anyOf?: Array<{ required: string[] }>;
}

const INBOX_DOC = JSON.parse(
  readFileSync(new URL('./schemas/x-openapi-2.167-inbox.json', import.meta.url), 'utf8'),
) as { paths: Record<string, Record<string, Operation>> };

/**
 * A query the document's operation refuses, answered as X does (400 Invalid Request), or null.
 * `post.fields` values are not checked against the document's enum: 2.167 renamed the post fields
 * it lists (referenced_posts …) while X's reference and API take referenced_tweets, author_id and
 * in_reply_to_user_id, which the connector asks for.
 */
function checkQuery(path: string, method: string, query: URLSearchParams): FakeResponse | null {
  const op = INBOX_DOC.paths[path]?.[method];
  if (!op) return null;
  const params = op.parameters.filter((p) => p.in === 'query');
  const names = params.map((p) => p.name);
  const unknown = unknownQuery(query, names);
  if (unknown) return unknown;
  for (const p of params) {
    const v = query.get(p.name);
    if (v === null) {
      if (p.required) return invalid(`The \`${p.name}\` query parameter can not be empty`, { [p.name]: [] });
      continue;
    }
    const sc = p.schema ?? {};
    if (sc.type === 'integer') {
      const n = Number(v);
      if (
        !Number.isInteger(n) ||
        (sc.minimum !== undefined && n < sc.minimum) ||
        (sc.maximum !== undefined && n > sc.maximum)
      )
        return invalid(
          `The \`${p.name}\` query parameter value [${v}] is not between ${sc.minimum} and ${sc.maximum}`,
          {
            [p.name]: [v],
          },
        );
    }
    if (sc.type === 'string') {
      if (sc.minLength !== undefined && v.length < sc.minLength)
        return invalid(
          `The \`${p.name}\` query parameter value [${v}] must be at least ${sc.minLength} characters`,
          {
            [p.name]: [v],
          },
        );
      if (sc.pattern && !new RegExp(sc.pattern).test(v))
        return invalid(`The \`${p.name}\` query parameter value [${v}] does not match ${sc.pattern}`, {
          [p.name]: [v],
        });
      if (p.name.endsWith('_time') && Number.isNaN(Date.parse(v)))
        return invalid(`Invalid '${p.name}':'${v}'. '${p.name}' must be a valid RFC 3339 date-time.`, {
          [p.name]: [v],
        });
    }
    if (sc.type === 'array' && sc.items?.enum && p.name !== 'post.fields') {
      const bad = v.split(',').find((x) => !sc.items?.enum?.includes(x));
      if (bad !== undefined)
        return invalid(
          `The \`${p.name}\` query parameter value [${bad}] is not one of [${sc.items.enum.join(',')}]`,
          {
            [p.name]: [v],
          },
        );
    }
  }
  return null;
}

/** A JSON body the operation's schema refuses (additional properties, a required one missing, too short). */
function checkBody(path: string, method: string, body: unknown): FakeResponse | null {
  const schema = INBOX_DOC.paths[path]?.[method]?.requestBody?.content['application/json'].schema;
  if (!schema) return null;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return invalid('$: must be an object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b))
    if (!(k in schema.properties) && schema.additionalProperties === false)
      return invalid(
        `$.${k}: is not defined in the schema and the schema does not allow additional properties`,
      );
  if (schema.anyOf && !schema.anyOf.some((a) => a.required.every((r) => r in b)))
    return invalid(`$: must have one of ${schema.anyOf.map((a) => a.required.join('+')).join(', ')}`);
  for (const [k, rule] of Object.entries(schema.properties)) {
    const v = b[k];
    if (v === undefined) continue;
    if (rule.type === 'string' && typeof v !== 'string')
      return invalid(`$.${k}: string found, ${typeof v} expected`);
    if (rule.minLength !== undefined && typeof v === 'string' && v.length < rule.minLength)
      return invalid(`$.${k}: must be at least ${rule.minLength} characters long`);
  }
  return null;
}

/** The JSON Schema keywords the excerpt's request bodies use (OpenAPI 3.0, $refs resolved). */
interface JsonRule {
  type?: string;
  properties?: Record<string, JsonRule>;
  required?: string[];
  additionalProperties?: boolean;
  items?: JsonRule;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  enum?: string[];
}

const typeOf = (v: unknown) =>
  Array.isArray(v) ? 'array' : v === null ? 'null' : Number.isInteger(v) ? 'integer' : typeof v;

/**
 * The first place `value` breaks `rule`, worded as X's validator words it ("$.poll.options: there
 * must be a minimum of 2 items in the array"), or null. Lengths count UTF-16 units, as Java does.
 */
function ruleBroken(rule: JsonRule, value: unknown, at: string): string | null {
  const t = typeOf(value);
  if (rule.type && rule.type !== t && !(rule.type === 'number' && t === 'integer'))
    return `${at}: ${t} found, ${rule.type} expected`;
  if (rule.enum && !rule.enum.includes(String(value)))
    return `${at}: does not have a value in the enumeration [${rule.enum.join(', ')}]`;
  if (typeof value === 'string') {
    if (rule.minLength !== undefined && value.length < rule.minLength)
      return `${at}: must be at least ${rule.minLength} characters long`;
    if (rule.maxLength !== undefined && value.length > rule.maxLength)
      return `${at}: may only be ${rule.maxLength} characters long`;
    if (rule.pattern && !new RegExp(rule.pattern).test(value))
      return `${at}: does not match the regex pattern ${rule.pattern}`;
  }
  if (typeof value === 'number') {
    if (rule.minimum !== undefined && value < rule.minimum)
      return `${at}: must have a minimum value of ${rule.minimum}`;
    if (rule.maximum !== undefined && value > rule.maximum)
      return `${at}: must have a maximum value of ${rule.maximum}`;
  }
  if (Array.isArray(value)) {
    if (rule.minItems !== undefined && value.length < rule.minItems)
      return `${at}: there must be a minimum of ${rule.minItems} items in the array`;
    if (rule.maxItems !== undefined && value.length > rule.maxItems)
      return `${at}: there must be a maximum of ${rule.maxItems} items in the array`;
    for (const [i, item] of value.entries()) {
      const broken = rule.items ? ruleBroken(rule.items, item, `${at}[${i}]`) : null;
      if (broken) return broken;
    }
  }
  if (t === 'object') {
    const o = value as Record<string, unknown>;
    for (const k of rule.required ?? []) if (!(k in o)) return `${at}.${k}: is missing but it is required`;
    for (const [k, v] of Object.entries(o)) {
      const sub = rule.properties?.[k];
      if (!sub) {
        if (rule.additionalProperties === false)
          return `${at}.${k}: is not defined in the schema and the schema does not allow additional properties`;
        continue;
      }
      const broken = ruleBroken(sub, v, `${at}.${k}`);
      if (broken) return broken;
    }
  }
  return null;
}

/** A JSON body the excerpt's schema for the operation refuses, as X's 400 Invalid Request, or null. */
function checkJson(path: string, method: string, body: unknown): FakeResponse | null {
  const schema = INBOX_DOC.paths[path]?.[method]?.requestBody?.content['application/json'].schema;
  if (!schema) return null;
  const broken = ruleBroken(schema as JsonRule, body, '$');
  return broken ? invalid(broken) : null;
}

/** X's Snowflake ids: milliseconds since its epoch, then a sequence. */
const snowflakeAt = (ms: number, seq: number) =>
  String((BigInt(ms - 1288834974657) << 22n) | BigInt(seq & 0x3fffff));
/** A page token of at least 16 characters (dm_events asks that much). */
const pageToken = (offset: number) => Buffer.from(`page:${String(offset).padStart(8, '0')}`).toString('hex');
const offsetOf = (token: string | null) => {
  if (!token) return 0;
  const m = /^page:(\d+)$/.exec(Buffer.from(token, 'hex').toString('utf8'));
  return m ? Number(m[1]) : Number.NaN;
};

export function createFake(): FakeX {
  let seq = 0;
  /** Running hashes of count-only uploads, by media id. */
  const counting = new Map<string, Hash>();
  const snowflake = () => String(1860000000000000000n + BigInt(++seq) * 4096n);

  function withLimits(res: FakeResponse): FakeResponse {
    return { ...res, headers: { ...xAnswers.limitHeaders(99), ...res.headers } };
  }

  function mediaJson(m: FakeXMedia) {
    const processing =
      m.state === 'pending' || m.state === 'in_progress' || m.state === 'failed'
        ? {
            processing_info: {
              state: m.state,
              ...(m.state === 'failed'
                ? { error: { code: 1, name: 'InvalidMedia', message: 'Unsupported video format' } }
                : { check_after_secs: 0, progress_percent: m.state === 'pending' ? 0 : 50 }),
            },
          }
        : m.category.includes('video') || m.category === 'tweet_gif'
          ? { processing_info: { state: 'succeeded', progress_percent: 100 } }
          : {};
    return { id: m.id, media_key: m.media_key, size: m.totalBytes, expires_after_secs: 86400, ...processing };
  }

  function shown(t: FakeTweet): string {
    let n = 0;
    const text = t.text
      .replace(/https?:\/\/[^\s]+/gu, () => `https://t.co/${(++n).toString(36).padStart(10, 'a')}`)
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;');
    return t.media.length ? `${text} https://t.co/m${t.id.slice(-9)}` : text;
  }

  function defaultUser(): FakeUser {
    return fake.oauth.user();
  }

  /** Client authentication: Basic for confidential clients, client_id in the form for public ones. */
  function client(req: FakeRequest, form: URLSearchParams): { id: string } | FakeResponse {
    const basic = basicAuth(req);
    const id = basic?.id ?? form.get('client_id') ?? '';
    if (!id) return oauthError(400, 'invalid_request', 'Missing required parameter [client_id].');
    if (fake.clientIds.has(id)) return { id }; // legacy public client
    const app = fake.oauth.apps.get(id);
    if (!app) return BAD_CLIENT();
    if (app.secret !== null && (!basic || basic.secret !== app.secret)) return BAD_CLIENT();
    return { id };
  }

  function tokenAnswer(t: FakeToken, refresh: FakeToken | null) {
    return {
      token_type: 'bearer',
      expires_in: fake.oauth.expiresIn(t) ?? 7200,
      access_token: t.token,
      scope: t.grant.scopes.join(' '),
      ...(refresh ? { refresh_token: refresh.token } : {}),
    };
  }

  function mint(grant: FakeToken['grant']) {
    const access = fake.oauth.issue(grant, 'access', 7200);
    const refresh = grant.scopes.includes('offline.access')
      ? fake.oauth.issue(grant, 'refresh', 180 * 86400)
      : null;
    return tokenAnswer(access, refresh);
  }

  function tokenEndpoint(req: FakeRequest): FakeResponse {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const c = client(req, form);
    if ('status' in c) return c;
    const grantType = form.get('grant_type');
    if (grantType === 'authorization_code') {
      for (const p of ['code', 'redirect_uri', 'code_verifier'])
        if (!form.get(p)) return oauthError(400, 'invalid_request', `Missing required parameter [${p}].`);
      const r = fake.oauth.redeem(form.get('code') ?? '', {
        clientId: c.id,
        redirectUri: form.get('redirect_uri'),
        verifier: form.get('code_verifier'),
      });
      if (!r.ok) return xAnswers.badGrant(r.reason === 'pkce' ? 'verifier' : 'code');
      return { status: 200, body: mint(r.grant) };
    }
    if (grantType !== 'refresh_token')
      return oauthError(400, 'unsupported_grant_type', 'grant_type not supported');
    const old = form.get('refresh_token') ?? '';
    if (fake.oauth.find(old)) {
      const r = fake.oauth.useRefresh(old, c.id, true); // single use
      if (!r.ok) return xAnswers.badGrant('token');
      const access = fake.oauth.issue(r.grant, 'access', 7200);
      const refresh = fake.oauth.issue(r.grant, 'refresh', 180 * 86400);
      fake.minted.push({ access_token: access.token, refresh_token: refresh.token });
      return { status: 200, body: tokenAnswer(access, refresh) };
    }
    if (!fake.refreshTokens.has(old)) return xAnswers.badGrant('token');
    fake.refreshTokens.delete(old); // single use
    fake.oauth.countRefresh();
    const pair = { access_token: `at-${snowflake()}`, refresh_token: `rt-${snowflake()}` };
    fake.validTokens.add(pair.access_token);
    fake.refreshTokens.add(pair.refresh_token);
    fake.minted.push(pair);
    return {
      status: 200,
      body: {
        token_type: 'bearer',
        expires_in: 7200,
        scope: 'tweet.read tweet.write users.read offline.access media.write',
        ...pair,
      },
    };
  }

  function revokeEndpoint(req: FakeRequest): FakeResponse {
    const form = new URLSearchParams(req.body.toString('utf8'));
    const c = client(req, form);
    if ('status' in c) return c;
    const token = form.get('token');
    if (!token) return oauthError(400, 'invalid_request', 'Missing required parameter [token].');
    const t = fake.oauth.find(token);
    if (t && t.grant.clientId === c.id) fake.oauth.revokeToken(token, 'api');
    return { status: 200, body: { revoked: true } };
  }

  async function handle(req: FakeRequest, ctx: FakeContext): Promise<FakeResponse> {
    if (req.method === 'POST' && req.path === '/2/oauth2/token') return tokenEndpoint(req);
    if (req.method === 'POST' && req.path === '/2/oauth2/revoke') return revokeEndpoint(req);

    const token = bearer(req);
    const issued = fake.oauth.check(token);
    if (!token || (issued.state === 'unknown' ? !fake.validTokens.has(token) : issued.state !== 'valid'))
      return xAnswers.generic(401);
    /** The user the token acts for. */
    const me: FakeUser = issued.state === 'valid' ? issued.token.grant.user : defaultUser();
    const forbidden = (...scopes: string[]) =>
      scopes.some((sc) => !fake.oauth.allows(token, sc)) ? problem(403, 'Forbidden', 'Forbidden') : null;

    if (req.method === 'GET' && req.path === '/2/users/me') {
      const denied = forbidden('users.read', 'tweet.read');
      if (denied) return denied;
      const fields = (req.query.get('user.fields') ?? '').split(',');
      const data: Record<string, unknown> = { id: me.id, name: me.displayName, username: me.username };
      if (fields.includes('profile_image_url')) data.profile_image_url = `${ctx.base}${me.avatarPath}`;
      if (fields.includes('public_metrics'))
        data.public_metrics = {
          followers_count: me.followers,
          following_count: me.following,
          tweet_count: me.posts + fake.posts.filter((t) => t.author_id === me.id).length,
          listed_count: Math.floor(me.followers / 100),
          like_count: 0,
          media_count: 0,
        };
      if (fields.includes('created_at')) data.created_at = '2020-01-01T00:00:00.000Z';
      if (fields.includes('description')) data.description = '';
      if (fields.includes('verified')) data.verified = false;
      if (fields.includes('protected')) data.protected = false;
      return { status: 200, body: { data } };
    }
    if (req.method === 'POST' && req.path.startsWith('/2/media/')) {
      const denied = forbidden('media.write');
      if (denied) return denied;
    }
    if (req.method === 'POST' && req.path === '/2/tweets') {
      const denied = forbidden('tweet.write');
      if (denied) return denied;
    }

    if (req.method === 'POST' && req.path === '/2/media/upload') {
      const b = (req.json ?? {}) as Record<string, unknown>;
      if (typeof b.media !== 'string' || !b.media)
        return invalid('The `media` field is required.', { media: [] });
      if (!['tweet_image', 'dm_image', 'subtitles'].includes(String(b.media_category))) {
        return invalid(
          `The \`media_category\` query parameter value [${String(b.media_category)}] is not one of [tweet_image,dm_image,subtitles]`,
        );
      }
      const extra = Object.keys(b).find((k) => !UPLOAD_FIELDS.includes(k));
      if (extra) return invalid(`The \`${extra}\` field is not allowed in this request.`, { [extra]: [] });
      const bytes = Buffer.from(b.media, 'base64');
      const mimeType = sniff(bytes);
      if (!IMAGE_TYPES.includes(mimeType)) return invalid(`Unsupported media type ${mimeType}`);
      const id = snowflake();
      const m: FakeXMedia = {
        id,
        media_key: `3_${id}`,
        category: String(b.media_category),
        mimeType,
        totalBytes: bytes.length,
        segments: new Map([[0, bytes]]),
        bytes,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: bytes.length,
        state: 'succeeded',
        pollsLeft: 0,
        alt: null,
      };
      fake.media.set(id, m);
      return { status: 200, body: { data: mediaJson(m) } };
    }

    if (req.method === 'POST' && req.path === '/2/media/upload/initialize') {
      const b = (req.json ?? {}) as Record<string, unknown>;
      if (!CHUNKED_TYPES.includes(String(b.media_type)))
        return invalid(`Unsupported media_type ${String(b.media_type)}`, { media_type: [b.media_type] });
      if (typeof b.total_bytes !== 'number' || b.total_bytes <= 0)
        return invalid('The `total_bytes` field is required.');
      const category = String(b.media_category ?? 'tweet_video');
      if (
        ![
          'amplify_video',
          'tweet_gif',
          'tweet_image',
          'tweet_video',
          'dm_gif',
          'dm_image',
          'dm_video',
          'subtitles',
        ].includes(category)
      ) {
        return invalid(`Unsupported media_category ${category}`);
      }
      const id = snowflake();
      fake.media.set(id, {
        id,
        media_key: `7_${id}`,
        category,
        mimeType: String(b.media_type),
        totalBytes: b.total_bytes,
        segments: new Map(),
        bytes: Buffer.alloc(0),
        sha256: '',
        size: 0,
        state: 'uploading',
        pollsLeft: fake.processingPolls,
        alt: null,
      });
      return { status: 200, body: { data: { id, media_key: `7_${id}`, expires_after_secs: 86399 } } };
    }

    const append = /^\/2\/media\/upload\/(\d+)\/append$/.exec(req.path);
    if (req.method === 'POST' && append) {
      const m = fake.media.get(append[1] ?? '');
      if (m?.state !== 'uploading') return invalid('Invalid media id or upload session.');
      const form = await new Response(req.body, {
        headers: { 'content-type': req.headers['content-type'] ?? '' },
      }).formData();
      const segment = Number(form.get('segment_index'));
      const media = form.get('media');
      if (!Number.isInteger(segment) || segment < 0 || segment > 999)
        return invalid('segment_index must be between 0 and 999');
      if (!media || typeof media === 'string') return invalid('The `media` field is required.');
      const chunk = Buffer.from(await media.arrayBuffer());
      if (chunk.length > 5 * 1024 * 1024) return invalid('Segment too large: must be <= 5 MB');
      if (fake.countOnly) {
        // Only in order: the running hash then is the file's.
        if (segment !== m.segments.size) return invalid(`segment ${segment} out of order (count-only fake)`);
        (counting.get(m.id) ?? counting.set(m.id, createHash('sha256')).get(m.id))?.update(chunk);
        m.size += chunk.length;
        m.segments.set(segment, Buffer.alloc(0));
      } else m.segments.set(segment, chunk);
      return { status: 200, body: { data: { expires_at: Math.floor(Date.now() / 1000) + 86400 } } };
    }

    const finalize = /^\/2\/media\/upload\/(\d+)\/finalize$/.exec(req.path);
    if (req.method === 'POST' && finalize) {
      const m = fake.media.get(finalize[1] ?? '');
      if (m?.state !== 'uploading') return invalid('Invalid media id or upload session.');
      const order = [...m.segments.keys()].sort((a, b) => a - b);
      if (order.some((s, i) => s !== i))
        return invalid('Segments missing: upload every segment_index from 0.');
      if (fake.countOnly) {
        m.sha256 = counting.get(m.id)?.digest('hex') ?? '';
        counting.delete(m.id);
      } else {
        m.bytes = Buffer.concat(order.map((s) => m.segments.get(s) ?? Buffer.alloc(0)));
        m.sha256 = createHash('sha256').update(m.bytes).digest('hex');
        m.size = m.bytes.length;
      }
      if (m.size !== m.totalBytes)
        return invalid(`File size mismatch: expected ${m.totalBytes} bytes, got ${m.size}`);
      m.state = fake.failProcessing
        ? 'failed'
        : m.pollsLeft > 0 || m.category !== 'tweet_image'
          ? 'pending'
          : 'succeeded';
      fake.failProcessing = false;
      return { status: 200, body: { data: mediaJson(m) } };
    }

    if (req.method === 'GET' && req.path === '/2/media/upload') {
      if (req.query.get('command') !== 'STATUS') return invalid('command must be STATUS');
      const m = fake.media.get(req.query.get('media_id') ?? '');
      if (!m) return invalid('Invalid media id.', { media_id: [req.query.get('media_id')] });
      if (m.state === 'pending' || m.state === 'in_progress') {
        if (m.pollsLeft > 0) {
          m.pollsLeft--;
          m.state = 'in_progress';
        } else {
          m.state = 'succeeded';
        }
      }
      return { status: 200, body: { data: mediaJson(m) } };
    }

    if (req.method === 'POST' && req.path === '/2/media/metadata') {
      const b = (req.json ?? {}) as { id?: string; metadata?: { alt_text?: { text?: string } } };
      const m = fake.media.get(String(b.id ?? ''));
      if (!m) return invalid('Invalid media id.');
      const alt = b.metadata?.alt_text?.text;
      if (typeof alt === 'string' && alt.length > 1000) return invalid('alt_text must be <= 1000 characters');
      m.alt = alt ?? null;
      return { status: 200, body: { data: { id: m.id, associated_metadata: b.metadata ?? {} } } };
    }

    if (req.method === 'POST' && req.path === '/2/tweets') {
      const b = (req.json ?? {}) as {
        text?: unknown;
        media?: { media_ids?: unknown };
        reply_settings?: unknown;
        reply?: unknown;
        poll?: { options: string[]; duration_minutes: number };
      };
      const text = typeof b.text === 'string' ? b.text : '';
      const ids = Array.isArray(b.media?.media_ids) ? b.media.media_ids.map(String) : [];
      if (!text && ids.length === 0) return invalid('Tweet text or media is required.');
      if (textLength('x_weighted', text) > 280)
        return problem(
          403,
          'Forbidden',
          'Your Tweet text is too long. For help, please check the length of the Tweet.',
        );
      if (ids.length > 4)
        return invalid('media.media_ids: size must be between 1 and 4', { 'media.media_ids': ids });
      if (
        b.reply_settings !== undefined &&
        !['following', 'mentionedUsers', 'subscribers', 'verified'].includes(String(b.reply_settings))
      ) {
        return invalid(
          `$.reply_settings: does not have a value in the enumeration [following, mentionedUsers, subscribers, verified]`,
        );
      }
      // TweetCreateRequest.reply: {in_reply_to_tweet_id (required), exclude_reply_user_ids?}, no
      // other field. A reply to a tweet that is gone (or never was) is refused with X's 403.
      let inReplyTo: string | null = null;
      if (b.reply !== undefined) {
        const reply = (typeof b.reply === 'object' && b.reply !== null ? b.reply : {}) as Record<
          string,
          unknown
        >;
        for (const k of Object.keys(reply))
          if (k !== 'in_reply_to_tweet_id' && k !== 'exclude_reply_user_ids')
            return invalid(
              `$.reply.${k}: is not defined in the schema and the schema does not allow additional properties`,
            );
        const id = reply.in_reply_to_tweet_id;
        if (id === undefined)
          return invalid('$.reply.in_reply_to_tweet_id: is missing but it is required', {
            '$.reply': ['{}'],
          });
        if (typeof id !== 'string' || !/^[0-9]{1,19}$/.test(id))
          return invalid(`$.reply.in_reply_to_tweet_id: does not match the regex pattern ^[0-9]{1,19}$`);
        if (!fake.posts.some((t) => t.id === id))
          return problem(
            403,
            'Forbidden',
            'You attempted to reply to a Tweet that is deleted or not visible to you.',
          );
        inReplyTo = id;
      }
      // The rest of CreatePostsRequest (the poll's 2–4 options of 1–25 characters, 5–10080 minutes)
      // as the document's schema states it.
      const bad = checkJson('/2/tweets', 'post', req.json ?? {});
      if (bad) return bad;
      // The document: poll "is mutually exclusive from Media, Quote Tweet Id, and Card URI".
      if (b.poll && (b.media !== undefined || 'quote_tweet_id' in b || 'card_uri' in b))
        return invalid('$.poll: is mutually exclusive with media, quote_tweet_id and card_uri', {
          poll: [JSON.stringify(b.poll)],
        });
      const media: FakeXMedia[] = [];
      for (const id of ids) {
        const m = fake.media.get(id);
        if (m?.state !== 'succeeded')
          return invalid(`Your media IDs are invalid.`, { 'media.media_ids': [id] });
        media.push(m);
      }
      if (text && fake.posts.some((t) => t.author_id === me.id && t.text === text)) {
        return problem(403, 'Forbidden', 'You are not allowed to create a Tweet with duplicate content.');
      }
      const tweet: FakeTweet = {
        id: snowflake(),
        text,
        author_id: me.id,
        created_at: new Date().toISOString(),
        media,
        reply_settings: typeof b.reply_settings === 'string' ? b.reply_settings : null,
        in_reply_to: inReplyTo,
        poll: null,
        public_metrics: {
          retweet_count: 0,
          reply_count: 0,
          like_count: 0,
          quote_count: 0,
          bookmark_count: 0,
          impression_count: 0,
        },
      };
      if (b.poll) {
        // Kept as X's Poll object shows it (data dictionary "Poll object").
        const ends = new Date(Date.parse(tweet.created_at) + b.poll.duration_minutes * 60_000);
        tweet.poll = {
          id: snowflake(),
          options: b.poll.options.map((label, i) => ({ position: i + 1, label, votes: 0 })),
          duration_minutes: b.poll.duration_minutes,
          end_datetime: ends.toISOString(),
          voting_status: 'open',
        };
      }
      fake.posts.push(tweet);
      const parent = inReplyTo ? fake.posts.find((t) => t.id === inReplyTo) : undefined;
      if (parent) parent.public_metrics.reply_count++;
      return {
        status: 201,
        body: { data: { id: tweet.id, text: shown(tweet), edit_history_tweet_ids: [tweet.id] } },
      };
    }

    const mentionsOf = /^\/2\/users\/(\d+)\/mentions$/.exec(req.path);
    if (req.method === 'GET' && mentionsOf) {
      const denied = forbidden('tweet.read', 'users.read');
      if (denied) return denied;
      const bad = checkQuery('/2/users/{id}/mentions', 'get', req.query);
      if (bad) return bad;
      const user = mentionsOf[1] ?? '';
      const q = req.query;
      const max = Number(q.get('max_results') ?? 10);
      const offset = offsetOf(q.get('pagination_token'));
      if (!Number.isFinite(offset)) return invalid('The `pagination_token` query parameter value is invalid');
      const n = (v: string) => BigInt(v);
      // since_id takes precedence over start_time, until_id over end_time (the reference says so).
      const since = q.get('since_id');
      const until = q.get('until_id');
      const start = since ? null : q.get('start_time');
      const end = until ? null : q.get('end_time');
      const all = fake.posts
        .filter((t) => (fake.mentions.get(t.id) ?? []).includes(user))
        .filter((t) => !since || n(t.id) > n(since))
        .filter((t) => !until || n(t.id) < n(until))
        .filter((t) => !start || Date.parse(t.created_at) >= Date.parse(start))
        .filter((t) => !end || Date.parse(t.created_at) <= Date.parse(end))
        .sort((a, b) => (n(b.id) > n(a.id) ? 1 : -1));
      const page = all.slice(offset, offset + max);
      const fields = (q.get('post.fields') ?? '').split(',');
      const expansions = (q.get('expansions') ?? '').split(',');
      const rootOf = (t: FakeTweet): string => {
        let cur = t;
        for (let i = 0; i < 100 && cur.in_reply_to; i++) {
          const up = fake.posts.find((x) => x.id === cur.in_reply_to);
          if (!up) return cur.in_reply_to;
          cur = up;
        }
        return cur.id;
      };
      const data = page.map((t) => {
        const parent = t.in_reply_to ? fake.posts.find((x) => x.id === t.in_reply_to) : undefined;
        return {
          id: t.id,
          text: shown(t),
          edit_history_tweet_ids: [t.id],
          ...(fields.includes('author_id') || expansions.includes('author_id')
            ? { author_id: t.author_id }
            : {}),
          ...(fields.includes('created_at') ? { created_at: t.created_at } : {}),
          ...(fields.includes('conversation_id') ? { conversation_id: rootOf(t) } : {}),
          ...(fields.includes('in_reply_to_user_id') && parent
            ? { in_reply_to_user_id: parent.author_id }
            : {}),
          ...(fields.includes('referenced_tweets') && t.in_reply_to
            ? { referenced_tweets: [{ type: 'replied_to', id: t.in_reply_to }] }
            : {}),
        };
      });
      const userFields = (q.get('user.fields') ?? '').split(',');
      const users = expansions.includes('author_id')
        ? [...new Set(page.map((t) => t.author_id))].map((id) => {
            const u = fake.users.get(id) ?? { id, username: id, name: id };
            return {
              id: u.id,
              name: u.name,
              username: u.username,
              ...(userFields.includes('profile_image_url')
                ? { profile_image_url: `${ctx.base}/profile_images/${u.id}/normal.jpg` }
                : {}),
            };
          })
        : [];
      const meta: Record<string, unknown> = { result_count: data.length };
      if (data.length) Object.assign(meta, { newest_id: data[0]?.id, oldest_id: data.at(-1)?.id });
      if (offset + max < all.length) meta.next_token = pageToken(offset + max);
      return {
        status: 200,
        body: { ...(data.length ? { data } : {}), ...(users.length ? { includes: { users } } : {}), meta },
      };
    }

    const conversationEvents = /^\/2\/dm_conversations\/([^/]+)\/dm_events$/.exec(req.path);
    if (req.method === 'GET' && (req.path === '/2/dm_events' || conversationEvents)) {
      const denied = forbidden('dm.read', 'tweet.read', 'users.read');
      if (denied) return denied;
      const bad = checkQuery(
        conversationEvents ? '/2/dm_conversations/{id}/dm_events' : '/2/dm_events',
        'get',
        req.query,
      );
      if (bad) return bad;
      const q = req.query;
      const conv = conversationEvents ? decodeURIComponent(conversationEvents[1] ?? '') : null;
      if (conv !== null && !/^([0-9]{1,19}-[0-9]{1,19}|[0-9]{15,19})$/.test(conv))
        return invalid(`The \`id\` path parameter value [${conv}] does not match the pattern`);
      const max = Number(q.get('max_results') ?? 100);
      const offset = offsetOf(q.get('pagination_token'));
      if (!Number.isFinite(offset)) return invalid('The `pagination_token` query parameter value is invalid');
      const types = (q.get('event_types') ?? 'MessageCreate,ParticipantsLeave,ParticipantsJoin').split(',');
      const monthAgo = Date.now() - 30 * 86_400_000;
      const all = fake.dmEvents
        .filter((e) => e.participant_ids.includes(me.id) && types.includes(e.event_type))
        .filter((e) => conv === null || e.dm_conversation_id === conv)
        .filter((e) => Date.parse(e.created_at) >= monthAgo)
        .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1));
      const page = all.slice(offset, offset + max);
      const fields = (q.get('dm_event.fields') ?? '').split(',');
      const expansions = (q.get('expansions') ?? '').split(',');
      const data = page.map((e) => ({
        id: e.id,
        event_type: e.event_type,
        text: e.text,
        ...(expansions.includes('sender_id') || fields.includes('sender_id')
          ? { sender_id: e.sender_id }
          : {}),
        ...(fields.includes('dm_conversation_id') ? { dm_conversation_id: e.dm_conversation_id } : {}),
        ...(fields.includes('created_at') ? { created_at: e.created_at } : {}),
      }));
      const users = expansions.includes('sender_id')
        ? [...new Set(page.map((e) => e.sender_id))].map((id) => {
            const u =
              fake.users.get(id) ??
              (id === me.id
                ? { id, username: me.username, name: me.displayName }
                : { id, username: id, name: id });
            return { id: u.id, name: u.name, username: u.username };
          })
        : [];
      const meta: Record<string, unknown> = { result_count: data.length };
      if (offset + max < all.length) meta.next_token = pageToken(offset + max);
      if (offset > 0) meta.previous_token = pageToken(Math.max(0, offset - max));
      return {
        status: 200,
        body: { ...(data.length ? { data } : {}), ...(users.length ? { includes: { users } } : {}), meta },
      };
    }

    const dmSend = /^\/2\/dm_conversations\/([^/]+)\/messages$/.exec(req.path);
    if (req.method === 'POST' && dmSend) {
      const denied = forbidden('dm.write', 'tweet.read', 'users.read');
      if (denied) return denied;
      const bad = checkBody('/2/dm_conversations/{dm_conversation_id}/messages', 'post', req.json);
      if (bad) return bad;
      const conv = decodeURIComponent(dmSend[1] ?? '');
      const text = String((req.json as { text?: unknown }).text ?? '');
      if ([...text].length > 10000)
        return invalid('Text of the Direct Message must be at most 10000 characters');
      const existing = fake.dmEvents.find(
        (e) => e.dm_conversation_id === conv && e.participant_ids.includes(me.id),
      );
      if (!existing)
        return problem(403, 'Forbidden', 'You are not permitted to send messages to this conversation.');
      const event: FakeXDmEvent = {
        id: snowflakeAt(Date.now(), ++seq),
        event_type: 'MessageCreate',
        text,
        sender_id: me.id,
        dm_conversation_id: conv,
        created_at: new Date().toISOString(),
        participant_ids: existing.participant_ids,
      };
      fake.dmEvents.push(event);
      return { status: 201, body: { data: { dm_conversation_id: conv, dm_event_id: event.id } } };
    }

    const timeline = /^\/2\/users\/(\d+)\/tweets$/.exec(req.path);
    if (req.method === 'GET' && timeline) {
      const unknown = unknownQuery(req.query, QUERY.timeline);
      if (unknown) return unknown;
      const max = Number(req.query.get('max_results') ?? 10);
      if (!Number.isInteger(max) || max < 5 || max > 100)
        return invalid(`The \`max_results\` query parameter value [${max}] is not between 5 and 100`);
      const start = req.query.get('start_time');
      if (start && !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/.test(start))
        return invalid(`Invalid 'start_time':'${start}'. 'start_time' must be a valid RFC 3339 date-time.`);
      const from = start ? Date.parse(start) : 0;
      const offset = Number(req.query.get('pagination_token') ?? 0);
      // exclude: retweets and/or replies (the fake makes no retweets).
      const excluded = (req.query.get('exclude') ?? '').split(',').filter(Boolean);
      if (excluded.some((e) => e !== 'retweets' && e !== 'replies'))
        return invalid(
          `The \`exclude\` query parameter value [${excluded.join(',')}] is not one of [replies,retweets]`,
        );
      const all = fake.posts
        .filter((t) => t.author_id === timeline[1] && Date.parse(t.created_at) >= from)
        .filter((t) => !(excluded.includes('replies') && t.in_reply_to))
        .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1));
      const page = all.slice(offset, offset + max);
      const fields = (req.query.get('post.fields') ?? '').split(',');
      const data = page.map((t) => ({
        id: t.id,
        text: shown(t),
        edit_history_tweet_ids: [t.id],
        ...(fields.includes('created_at') ? { created_at: t.created_at } : {}),
        ...(fields.includes('referenced_tweets') && t.in_reply_to
          ? { referenced_tweets: [{ type: 'replied_to', id: t.in_reply_to }] }
          : {}),
      }));
      const meta: Record<string, unknown> = { result_count: data.length };
      if (data.length) Object.assign(meta, { newest_id: data[0]?.id, oldest_id: data.at(-1)?.id });
      if (offset + max < all.length) meta.next_token = String(offset + max);
      return { status: 200, body: data.length ? { data, meta } : { meta } };
    }

    if (req.method === 'GET' && req.path === '/2/tweets') {
      const unknown = unknownQuery(req.query, QUERY.lookup);
      if (unknown) return unknown;
      const ids = (req.query.get('ids') ?? '').split(',').filter(Boolean);
      if (ids.length === 0 || ids.length > 100)
        return invalid('The `ids` query parameter value must have 1 to 100 items');
      const fields = (req.query.get('post.fields') ?? '').split(',');
      const data = ids.flatMap((id) => {
        const t = fake.posts.find((p) => p.id === id);
        if (!t) return [];
        return [
          {
            id: t.id,
            text: shown(t),
            edit_history_tweet_ids: [t.id],
            ...(fields.includes('public_metrics') ? { public_metrics: t.public_metrics } : {}),
          },
        ];
      });
      const missing = ids.filter((id) => !fake.posts.some((p) => p.id === id));
      return {
        status: 200,
        body: {
          ...(data.length ? { data } : {}),
          ...(missing.length
            ? {
                errors: missing.map((id) => ({
                  value: id,
                  detail: `Could not find tweet with ids: [${id}].`,
                  title: 'Not Found Error',
                  resource_type: 'tweet',
                  parameter: 'ids',
                  resource_id: id,
                  type: 'https://api.twitter.com/2/problems/resource-not-found',
                })),
              }
            : {}),
        },
      };
    }

    const deleting = req.method === 'DELETE' ? /^\/2\/tweets\/([^/]+)$/.exec(req.path) : null;
    if (deleting) return deleteTweet(decodeURIComponent(deleting[1] ?? ''), me, forbidden);

    return problem(404, 'Not Found Error', `No route for ${req.method} ${req.path}`);
  }

  /**
   * DELETE /2/tweets/:id (docs.x.com "Delete a Post", scope tweet.write): 200 {data: {deleted: true}}
   * (TweetDeleteResponse in X's OpenAPI document) and the post is gone, so a second delete is the
   * 404 problem X answers for a post it does not have; another user's post is 403.
   */
  function deleteTweet(
    id: string,
    me: FakeUser,
    forbidden: (...scopes: string[]) => FakeResponse | null,
  ): FakeResponse {
    const denied = forbidden('tweet.write');
    if (denied) return denied;
    const i = fake.posts.findIndex((t) => t.id === id);
    if (i < 0)
      return {
        status: 404,
        headers: { 'content-type': 'application/problem+json' },
        body: {
          title: 'Not Found Error',
          detail: `Could not find tweet with id: [${id}].`,
          type: 'https://api.twitter.com/2/problems/resource-not-found',
          resource_type: 'tweet',
          resource_id: id,
          parameter: 'id',
          value: id,
        },
      };
    if (fake.posts[i]?.author_id !== me.id)
      return problem(403, 'Forbidden', 'You are not allowed to delete a Tweet you did not create.');
    fake.posts.splice(i, 1);
    fake.deleted.push(id);
    return { status: 200, body: { data: { deleted: true } } };
  }

  const fake: FakeX = {
    name: 'x',
    oauth: new FakeOAuth({
      platform: 'x',
      defaultUser: () =>
        defaultAccount({
          id: '1500000000000000001',
          username: 'acme',
          displayName: 'Acme',
          followers: 1200,
          following: 80,
          posts: 340,
        }),
      makeUser: (name) =>
        namedAccount(name, hashDigits(name, 19, 'x'), {
          following: hashNumber(name, 2000, 'following'),
          posts: hashNumber(name, 5000, 'posts'),
        }),
    }),
    validTokens: new Set(['token']),
    refreshTokens: new Set(['refresh']),
    clientIds: new Set(['client-id']),
    user: { id: '1500000000000000001', username: 'acme' },
    media: new Map(),
    posts: [],
    processingPolls: 0,
    failProcessing: false,
    countOnly: false,
    minted: [],
    deleted: [],
    users: new Map(),
    mentions: new Map(),
    dmEvents: [],
    inbox(seed: InboxSeed) {
      const created = seed.created_at ? Date.parse(seed.created_at) : Date.now();
      const at = Number.isFinite(created) ? created : Date.now();
      const handle = (seed.author?.handle ?? 'bob').replace(/^@/, '');
      const author = {
        id: seed.author?.id ?? hashDigits(`other:${handle}`, 19, 'x').replace(/^0/, '1'),
        username: handle,
        name: seed.author?.name ?? handle,
      };
      fake.users.set(author.id, author);
      const parent = seed.parent ? fake.posts.find((t) => t.id === seed.parent) : undefined;
      const toUser = seed.to
        ? ([...fake.users.values(), { id: fake.user.id, username: fake.user.username }].find(
            (u) => u.id === seed.to || u.username === seed.to,
          )?.id ?? seed.to)
        : (parent?.author_id ?? fake.user.id);
      const username =
        toUser === fake.user.id ? fake.user.username : (fake.users.get(toUser)?.username ?? toUser);
      const id = snowflakeAt(at, ++seq);
      if (seed.kind === 'message') {
        const pair = [author.id, toUser].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
        fake.dmEvents.push({
          id,
          event_type: 'MessageCreate',
          text: seed.text,
          sender_id: author.id,
          dm_conversation_id: seed.conversation ?? pair.join('-'),
          created_at: new Date(at).toISOString(),
          participant_ids: pair,
        });
        return { platform_id: id };
      }
      // X shows a reply with the @mention of whom it answers; a mention names the account.
      const text = seed.text.includes(`@${username}`) ? seed.text : `@${username} ${seed.text}`;
      fake.posts.push({
        id,
        text,
        author_id: author.id,
        created_at: new Date(at).toISOString(),
        media: [],
        reply_settings: null,
        in_reply_to: parent?.id ?? seed.parent ?? null,
        poll: null,
        public_metrics: {
          retweet_count: 0,
          reply_count: 0,
          like_count: 0,
          quote_count: 0,
          bookmark_count: 0,
          impression_count: 0,
        },
      });
      if (parent) parent.public_metrics.reply_count++;
      fake.mentions.set(id, [toUser]);
      return { platform_id: id };
    },
    reset() {
      seq = 0;
      fake.oauth.reset();
      fake.validTokens = new Set(['token']);
      fake.refreshTokens = new Set(['refresh']);
      fake.clientIds = new Set(['client-id']);
      fake.media = new Map();
      fake.posts = [];
      fake.processingPolls = 0;
      fake.failProcessing = false;
      fake.minted = [];
      fake.deleted = [];
      fake.users = new Map();
      fake.mentions = new Map();
      fake.dmEvents = [];
    },
    async handle(req: FakeRequest, ctx: FakeContext) {
      if (req.method === 'GET' && req.path === '/i/oauth2/authorize')
        return fake.oauth.authorize(req, AUTHORIZE);
      const avatar = serveAvatar(req);
      if (avatar) return avatar;
      return withLimits(await handle(req, ctx));
    },
  };
  return fake;
}
