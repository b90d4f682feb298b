import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Role, User } from '#core/accounts';
import type { ConsolePage } from '#lib/operations';
import type { HttpResult } from '#shared/envelope';
import { PUBLISHING, type Publishing, seedPublishing } from './console-workspace.ts';
import {
  type ApiHandler,
  countConsumedCapacity,
  type DynamoRequest,
  fixed,
  kib,
  machine,
  median,
  ROOT,
  recordDynamoRequests,
  table,
  today,
} from './support.ts';

// The console's pages (issue 22): each page's real handler in-process against DynamoDB Local, in a
// busy workspace written through the service's own code, called warm as a signed-in browser calls
// it — server time, the DynamoDB requests and capacity units of one call, and the HTML's size.

/** A page (or act) to measure: issue 23 adds its channels, posts and webhooks pages here. */
export interface ConsolePageSpec {
  /** The row's name in the section. */
  id: string;
  method: 'GET' | 'POST';
  /**
   * The path (and query) a browser requests; the route and its function are the manifest's.
   * `{post:<status>}`, `{channel:<n>}`, `{endpoint:<n>}` and `{endpoint:disabled}` name the seeded
   * workspace's items (console-workspace.ts).
   */
  path: string;
  /** Who is signed in (a session of their own for each row); null: nobody (sign-in page, assets). */
  asRole: Role | null;
  /** The status every call must answer; anything else fails the bench. Default 200. */
  status?: number;
  /** Where a 303 must send the browser (a prefix): a redirect to sign-in is a 303 too. */
  redirectsTo?: string;
  /** A POST's form fields, sent as the page's form sends them. */
  form?: Record<string, string | string[]>;
  /** Request the link matched (group 1) in the answer of row `from` instead of `path`. */
  follow?: { from: string; href: RegExp };
  /** Every call with a session last seen longer ago than SESSION_TOUCH_MS: the call that refreshes it. */
  staleSession?: boolean;
}

/**
 * What the bench requests, as the owner (the role every page lets in: the audit log is theirs
 * only, and the same person's view of every page keeps the rows comparable).
 */
export const PAGES: readonly ConsolePageSpec[] = [
  { id: 'home', method: 'GET', path: '/console', asRole: 'owner' },
  { id: 'home, session refresh due', method: 'GET', path: '/console', asRole: 'owner', staleSession: true },
  { id: 'keys', method: 'GET', path: '/console/keys', asRole: 'owner' },
  { id: 'members', method: 'GET', path: '/console/members', asRole: 'owner' },
  { id: 'settings', method: 'GET', path: '/console/settings', asRole: 'owner' },
  { id: 'audit', method: 'GET', path: '/console/audit', asRole: 'owner' },
  {
    id: 'audit, page 2',
    method: 'GET',
    path: '/console/audit?cursor=…',
    asRole: 'owner',
    follow: { from: 'audit', href: /<a href="([^"]+)" rel="next">/ },
  },
  { id: 'passkeys', method: 'GET', path: '/console/passkeys', asRole: 'owner' },
  // Issue 23's pages, over 10 channels, 1,000 posts and 5 endpoints (console-workspace.ts).
  { id: 'channels', method: 'GET', path: '/console/channels', asRole: 'owner' },
  { id: 'posts', method: 'GET', path: '/console/posts', asRole: 'owner' },
  { id: 'posts, failed only', method: 'GET', path: '/console/posts?status=failed', asRole: 'owner' },
  { id: 'posts, one channel', method: 'GET', path: '/console/posts?channel={channel:7}', asRole: 'owner' },
  { id: 'post (published)', method: 'GET', path: '/console/posts/{post:published}', asRole: 'owner' },
  { id: 'post (failed)', method: 'GET', path: '/console/posts/{post:failed}', asRole: 'owner' },
  { id: 'approvals', method: 'GET', path: '/console/approvals', asRole: 'owner' },
  { id: 'webhooks', method: 'GET', path: '/console/webhooks', asRole: 'owner' },
  {
    id: 'webhook endpoint (auto-disabled)',
    method: 'GET',
    path: '/console/webhooks/{endpoint:disabled}',
    asRole: 'owner',
  },
  { id: 'webhook endpoint', method: 'GET', path: '/console/webhooks/{endpoint:2}', asRole: 'owner' },
  { id: 'sign-in (signed out)', method: 'GET', path: '/console/sign-in', asRole: null },
  {
    id: 'console.css',
    method: 'GET',
    path: '/console/assets/console.css?v=…',
    asRole: null,
    follow: { from: 'sign-in (signed out)', href: /<link rel="stylesheet" href="([^"]+)">/ },
  },
  {
    id: 'webauthn.js',
    method: 'GET',
    path: '/console/assets/webauthn.js?v=…',
    asRole: null,
    follow: { from: 'sign-in (signed out)', href: /<script src="([^"]*webauthn\.js[^"]*)"/ },
  },
  // Acts come last: they change what the pages above would read.
  {
    id: 'mint a key (POST)',
    method: 'POST',
    path: '/console/keys',
    asRole: 'owner',
    // The minted key is rendered at once, never redirected to: it is shown this once.
    status: 201,
    form: { name: 'Bench key', scopes: ['posts:read', 'posts:write'] },
  },
  {
    id: 'save settings (POST)',
    method: 'POST',
    path: '/console/settings',
    asRole: 'owner',
    status: 303,
    redirectsTo: '/console/settings?',
    form: { settings: ['dangerous_ops'], landing_origins: 'https://shop.example.com' },
  },
];

/** The workspace: the owner who created it and these, all through the CLI's and console's use cases. */
export const WORKSPACE = {
  /** Invited besides the owner, by role; all but `pending` of them enroll a passkey. */
  invited: { owner: 1, admin: 3, member: 7 } satisfies Record<Role, number>,
  /** Invited people who have not enrolled yet. */
  pending: 2,
  ownerPasskeys: 3,
  keys: 20,
  revokedKeys: 3,
  /** Audit entries written on their own, besides those of the acts above. */
  auditFill: 300,
} as const;

/** Warm-up calls per row before the measured ones (the first loads the function's modules). */
const WARMUP = 5;

const DOMAIN = 'herald.example.com';
const ORIGIN = `https://${DOMAIN}`;

/** Low–high over the calls of a row (equal when every call did the same). */
export interface Spread {
  min: number;
  max: number;
}

export interface ConsoleRow {
  id: string;
  method: 'GET' | 'POST';
  path: string;
  /** The function (lib/operations.ts consolePages). */
  page: string;
  status: number;
  calls: number;
  medianMs: number;
  p95Ms: number;
  /** Median over the calls of the time at least one DynamoDB request was under way (SDK included). */
  dynamoMs: number;
  /** Sequential DynamoDB round trips: the longest chain of requests each sent after the last answered. */
  roundTrips: Spread;
  requests: Spread;
  /** The requests of the row's most common call, e.g. `BatchGetItem ×3, Query ×2`. */
  requestMix: string;
  readUnits: Spread;
  writeUnits: Spread;
  bytes: number;
  gzipBytes: number;
}

export interface ConsoleResult {
  machine: string;
  date: string;
  iterations: number;
  workspace: {
    members: number;
    pendingMembers: number;
    passkeys: number;
    ownerPasskeys: number;
    keys: number;
    revokedKeys: number;
    auditEntries: number;
    channels: number;
    posts: number;
    endpoints: number;
  };
  rows: ConsoleRow[];
}

/** The function and route key (`POST /console/keys/{id}/revoke`) serving `method` `path`. */
function routeOf(pages: readonly ConsolePage[], method: string, path: string) {
  for (const page of pages)
    for (const r of page.routes) {
      if (r.method !== method) continue;
      const names: string[] = [];
      const pattern = r.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
        names.push(name);
        return '([^/]+)';
      });
      const m = new RegExp(`^${pattern}$`).exec(path);
      if (m)
        return {
          page,
          routeKey: `${method} ${r.path}`,
          params: Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? '')])),
        };
    }
  throw new Error(`console bench: no console route serves ${method} ${path}`);
}

/** An API Gateway HTTP API (payload 2.0) event as a browser's request to the console produces it. */
function browserEvent(a: {
  routeKey: string;
  params: Record<string, string>;
  url: string;
  cookies: string[];
  form?: Record<string, string | string[]> | undefined;
}): APIGatewayProxyEventV2 {
  const [method = 'GET'] = a.routeKey.split(' ');
  const [rawPath = '', rawQueryString = ''] = a.url.split('?');
  const body = a.form
    ? new URLSearchParams(
        Object.entries(a.form).flatMap(([k, v]) =>
          (Array.isArray(v) ? v : [v]).map((x): [string, string] => [k, x]),
        ),
      ).toString()
    : undefined;
  const requestId = randomUUID();
  return {
    version: '2.0',
    routeKey: a.routeKey,
    rawPath,
    rawQueryString,
    // The gateway hands cookies over in `cookies`, without a Cookie header.
    ...(a.cookies.length ? { cookies: a.cookies } : {}),
    headers: {
      host: DOMAIN,
      accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8',
      'accept-encoding': 'gzip, deflate, br',
      'accept-language': 'en-GB,en;q=0.9',
      'user-agent':
        'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
      'sec-fetch-mode': 'navigate',
      'sec-fetch-site': 'same-origin',
      'x-forwarded-for': '198.51.100.23',
      'x-forwarded-port': '443',
      'x-forwarded-proto': 'https',
      ...(body === undefined
        ? {}
        : {
            origin: ORIGIN,
            referer: `${ORIGIN}${rawPath}`,
            'content-type': 'application/x-www-form-urlencoded',
            'content-length': String(Buffer.byteLength(body)),
          }),
    },
    ...(rawQueryString
      ? { queryStringParameters: Object.fromEntries(new URLSearchParams(rawQueryString)) }
      : {}),
    ...(Object.keys(a.params).length ? { pathParameters: a.params } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'bench',
      domainName: DOMAIN,
      domainPrefix: 'herald',
      http: {
        method,
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '198.51.100.23',
        userAgent: 'Safari',
      },
      requestId,
      routeKey: a.routeKey,
      stage: '$default',
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    ...(body === undefined ? {} : { body }),
    isBase64Encoded: false,
  };
}

/** The nearest-rank percentile of `values`. */
function percentile(values: readonly number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(p * s.length) - 1)] ?? Number.NaN;
}

const spread = (values: readonly number[]): Spread => ({
  min: Math.min(...values),
  max: Math.max(...values),
});

/** `GetItem, Query ×2` for the names of one call's requests. */
function mixOf(names: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([n, c]) => (c > 1 ? `${n} ×${c}` : n))
    .join(', ');
}

/** How long at least one of `requests` was under way (ms): their intervals' union. */
function busyMs(requests: readonly DynamoRequest[]): number {
  let total = 0;
  let until = Number.NEGATIVE_INFINITY;
  for (const r of [...requests].sort((a, b) => a.start - b.start)) {
    if (r.end <= until) continue;
    total += r.end - Math.max(r.start, until);
    until = r.end;
  }
  return total;
}

/** Round trips on the critical path: each request is one more than the deepest answered before it was sent. */
function depthOf(requests: readonly DynamoRequest[]): number {
  const depth = new Map<DynamoRequest, number>();
  for (const r of requests)
    depth.set(r, 1 + Math.max(0, ...requests.filter((x) => x.end <= r.start).map((x) => depth.get(x) ?? 0)));
  return Math.max(0, ...depth.values());
}

/** The most frequent value. */
function mode(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? '';
}

export async function benchConsole(iterations: number): Promise<ConsoleResult> {
  const { startDynamo, ensureTable, dynamoCredentials, LOCAL_REGION } = await import(
    '../../bin/local/services.ts'
  );
  const { consoleAssetsVersion } = await import('#lib/console-assets');
  const dir = mkdtempSync(join(tmpdir(), 'herald-console-'));
  const credentials = dynamoCredentials(dir);
  const dynamo = await startDynamo(dir, credentials);
  try {
    await ensureTable(dynamo.endpoint, 'herald-console', credentials);
    // As the stack configures the console's functions (lib/constructs/api.ts): no HERALD_CONSOLE_URL
    // (no publicUrl), so the site is the request's host; the assets linked by their version.
    Object.assign(process.env, {
      AWS_REGION: LOCAL_REGION,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      TABLE_NAME: 'herald-console',
      HERALD_CURSOR_SECRET: 'console-bench',
      // The CLI's module (seeding only) loads the channel connections' sealing at import.
      CONNECTION_SECRETS_KEY_ID: 'alias/herald-console',
      // The webhooks page's functions seal and open signing secrets (never on the measured GETs).
      WEBHOOK_SECRETS_KEY_ID: 'alias/herald-console-webhooks',
      HERALD_CONSOLE_ASSETS_VERSION: consoleAssetsVersion(ROOT),
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    delete process.env.HERALD_CONSOLE_URL;
    delete process.env.HERALD_NOTIFY_FROM;
    const { dynamo: client } = await import('#shared/clients');
    const consumed = countConsumedCapacity(client);
    const log = recordDynamoRequests(client);
    const { consolePages } = await import('#lib/operations');
    const { consoleSite } = await import('#shared/console');
    const { lambdaContext } = await import('../unit/support/fixtures.ts');
    const { transactIf } = await import('#adapters/table');
    const { sessionPut } = await import('#adapters/console-sessions');
    const { newSession } = await import('#usecases/console-sessions');
    const { SESSION_TOUCH_MS } = await import('#core/people');

    const workspace = await seedWorkspace();
    const publishing = await seedPublishing(workspace.orgId);
    const held = {
      ...(await census(workspace)),
      channels: publishing.channelIds.length,
      posts: PUBLISHING.posts,
      endpoints: publishing.endpointIds.length,
    };
    /** The seeded items a path names. */
    const itemsIn = (path: string) =>
      path.replace(/\{(post|channel|endpoint):([a-z_0-9]+)\}/g, (_m, kind: string, which: string) => {
        const id =
          kind === 'post'
            ? publishing.postOf[which as keyof Publishing['postOf']]
            : kind === 'channel'
              ? publishing.channelIds[Number(which)]
              : which === 'disabled'
                ? publishing.disabledEndpoint
                : publishing.endpointIds[Number(which)];
        if (!id) throw new Error(`console bench: no seeded ${kind} ${which}`);
        return id;
      });
    const site = consoleSite({ requestContext: { domainName: DOMAIN } } as APIGatewayProxyEventV2);

    /** A session for `user` as a sign-in starts one (not through WebAuthn: no browser here). */
    const signIn = async (user: User, at = new Date()) => {
      const s = newSession(user.org_id, user.id, user.role, at, 'bench-passkey');
      if (!(await transactIf([sessionPut(s.hash, s.session)])))
        throw new Error('console bench: the session was not stored');
      return `${site.sessionCookie}=${s.cookie}`;
    };
    const personOf = (role: Role) => {
      const user = role === 'owner' ? workspace.owner : workspace.enrolled.find((u) => u.role === role);
      if (!user) throw new Error(`console bench: nobody enrolled with the ${role} role`);
      return user;
    };

    const bodies = new Map<string, string>();
    const rows: ConsoleRow[] = [];
    for (const spec of PAGES) {
      let url = itemsIn(spec.path);
      if (spec.follow) {
        const source = bodies.get(spec.follow.from);
        const href = source === undefined ? undefined : spec.follow.href.exec(source)?.[1];
        if (!href) throw new Error(`console bench: ${spec.id}: no matching link in ${spec.follow.from}`);
        url = href.replaceAll('&amp;', '&');
      }
      const route = routeOf(consolePages, spec.method, url.split('?')[0] ?? '');
      const mod = (await import(join(ROOT, route.page.entry))) as { handler: ApiHandler };
      const expected = spec.status ?? 200;
      // A session of its own per row, so none comes due for a refresh in the middle of a row.
      const person = spec.asRole === null ? null : personOf(spec.asRole);
      const rowCookie = person ? await signIn(person) : null;
      const stale = new Date(Date.now() - SESSION_TOUCH_MS - 60_000);
      const times: number[] = [];
      const counts: number[] = [];
      const inDynamo: number[] = [];
      const depths: number[] = [];
      const mixes: string[] = [];
      const reads: number[] = [];
      const writes: number[] = [];
      let last: HttpResult | undefined;
      for (let i = 0; i < WARMUP + iterations; i++) {
        const cookie = person && spec.staleSession ? await signIn(person, stale) : rowCookie;
        const event = browserEvent({
          routeKey: route.routeKey,
          params: route.params,
          url,
          cookies: cookie ? [cookie] : [],
          form: spec.form,
        });
        const context = lambdaContext(route.page.id, event.requestContext.requestId);
        log.requests.length = 0;
        consumed.read = 0;
        consumed.write = 0;
        const t = performance.now();
        const res = (await mod.handler(event, context)) as HttpResult;
        const ms = performance.now() - t;
        if (res.statusCode !== expected)
          throw new Error(
            `console bench: ${spec.id}: ${spec.method} ${url} answered ${res.statusCode}, not ${expected}: ${res.headers?.location ?? (res.body ?? '').slice(0, 400)}`,
          );
        const location = res.headers?.location;
        if (spec.redirectsTo !== undefined && !String(location).startsWith(spec.redirectsTo))
          throw new Error(`console bench: ${spec.id}: redirected to ${location}, not ${spec.redirectsTo}…`);
        last = res;
        if (i < WARMUP) continue;
        times.push(ms);
        counts.push(log.requests.length);
        mixes.push(mixOf(log.requests.map((x) => x.name)));
        inDynamo.push(busyMs(log.requests));
        depths.push(depthOf(log.requests));
        reads.push(consumed.read);
        writes.push(consumed.write);
      }
      const body = last?.body ?? '';
      bodies.set(spec.id, body);
      rows.push({
        id: spec.id,
        method: spec.method,
        path: spec.path,
        page: route.page.id,
        status: expected,
        calls: iterations,
        medianMs: median(times),
        p95Ms: percentile(times, 0.95),
        dynamoMs: median(inDynamo),
        roundTrips: spread(depths),
        requests: spread(counts),
        requestMix: mode(mixes),
        readUnits: spread(reads),
        writeUnits: spread(writes),
        bytes: Buffer.byteLength(body),
        // An empty body (a redirect) is sent as nothing, not as gzip's 20-byte frame.
        gzipBytes: body ? gzipSync(body).length : 0,
      });
    }
    return { machine: machine(), date: today(), iterations, workspace: held, rows };
  } finally {
    await dynamo.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Workspace {
  orgId: string;
  owner: User;
  /** Everyone with a passkey, the owner first. */
  enrolled: User[];
}

/**
 * The workspace, written through the service's own code: the organization and its owner by the
 * CLI's createOrg; the owner's passkeys by the real enrollment and add-a-passkey ceremonies (a
 * software authenticator answering them); people invited by the CLI's user add and enrolled
 * through their links; keys minted and revoked by the CLI, the active ones used (the request gate
 * records their last use); and WORKSPACE.auditFill more audit entries written one by one.
 */
async function seedWorkspace(): Promise<Workspace> {
  const admin = await import('#usecases/cli/admin');
  const passkeys = await import('#usecases/passkeys');
  const { admitRequest } = await import('#adapters/usage');
  const { putAudit } = await import('#adapters/audit-log');
  const { personAct } = await import('#usecases/support/person-audit');
  const { newId } = await import('#core/ids');
  const { billingPeriod } = await import('#core/plans');
  const { SCOPES } = await import('#lib/operations');
  const { SoftAuthenticator } = await import('../unit/support/authenticator.ts');

  const rp = { id: DOMAIN, name: 'Herald', origin: ORIGIN };
  let sources = 0;
  /** Enrolls the person of an enrollment link's URL; the session it started. */
  const enroll = async (url: string, auth: InstanceType<typeof SoftAuthenticator>) => {
    const token = url.split('#')[1] ?? '';
    // An address of their own each: sign-in attempts are limited per address and minute.
    const source = `203.0.113.${++sources}`;
    const begun = await passkeys.beginEnrollment({ token, rp, source, now: new Date() });
    const response = auth.create(begun.options);
    return passkeys.finishEnrollment({ ceremonyId: begun.ceremonyId, response, rp, source, now: new Date() });
  };

  const created = await admin.createOrg({
    name: 'Northwind Studio',
    plan: 'agency',
    ownerEmail: 'ada@northwind.example',
    consoleUrl: ORIGIN,
  });
  const orgId = created.org.id;
  const owner = created.owner;
  const ownerAuth = new SoftAuthenticator(ORIGIN);
  const started = await enroll(created.enrollment.url, ownerAuth);
  const names = ['iPhone', 'YubiKey 5C', 'Work laptop', 'iPad'];
  for (let i = 1; i < WORKSPACE.ownerPasskeys; i++) {
    const signedIn = { user: owner, session: started.session };
    const begun = await passkeys.beginAddPasskey({ signedIn, rp, now: new Date() });
    await passkeys.finishAddPasskey({
      signedIn,
      ceremonyId: begun.ceremonyId,
      response: ownerAuth.create(begun.options),
      rp,
      name: names[(i - 1) % names.length],
      now: new Date(),
    });
  }

  const enrolled: User[] = [owner];
  const roles = (Object.entries(WORKSPACE.invited) as Array<[Role, number]>).flatMap(([role, n]) =>
    Array.from({ length: n }, () => role),
  );
  for (let i = 0; i < roles.length; i++) {
    const role = roles[i] as Role;
    const person = await admin.addOrgUser({
      orgId,
      email: `person${i + 1}@northwind.example`,
      role,
      consoleUrl: ORIGIN,
      by: owner.id,
    });
    if (i >= roles.length - WORKSPACE.pending) continue;
    await enroll(person.enrollment.url, new SoftAuthenticator(ORIGIN));
    enrolled.push({
      id: person.id,
      org_id: person.org_id,
      email: person.email,
      role: person.role,
      created_at: person.created_at,
    });
  }

  const scopeSets = [
    ['posts:read', 'posts:write', 'channels:read'],
    ['posts:read'],
    ['analytics:read'],
    ['webhooks:read', 'webhooks:write'],
    SCOPES.filter((s) => s !== 'ai:generate'),
  ];
  const keyIds: string[] = [];
  for (let i = 0; i < WORKSPACE.keys; i++) {
    const minted = await admin.mintKey({
      orgId,
      by: owner.id,
      scopes: scopeSets[i % scopeSets.length] as string[],
      name: i % 4 === 3 ? undefined : `Integration ${i + 1}`,
    });
    keyIds.push(minted.id);
  }
  const period = billingPeriod(Date.now()).id;
  const minute = Math.floor(Date.now() / 60_000);
  for (let i = 0; i < keyIds.length; i++) {
    if (i < WORKSPACE.revokedKeys) {
      await admin.revokeKey({ orgId, by: owner.id, keyId: keyIds[i] as string });
      continue;
    }
    // Used at some minute of the last hours: the keys page reads their last use from the gate.
    const gate = await admitRequest({
      keyId: keyIds[i] as string,
      orgId,
      windowId: minute - i * 17,
      burstLimit: 1_000,
      period,
      monthlyLimit: 1_000_000,
    });
    if (gate.outcome !== 'admitted')
      throw new Error(`console bench: the gate refused a key (${gate.outcome})`);
  }

  // History: the acts people do most, by the enrolled people in turn.
  const acts = [
    (u: User) =>
      personAct(u, 'signed_in', new Date(), null, { session: newId('session'), passkey: 'iPhone' }),
    (u: User) => personAct(u, 'signed_out', new Date(), null, { session: newId('session') }),
    (u: User) =>
      personAct(u, 'key_minted', new Date(), newId('key'), { name: 'CI deploys', scopes: ['posts:write'] }),
    (u: User) => personAct(u, 'settings_changed', new Date(), null, { approval_required: true }),
    (u: User) =>
      personAct(u, 'member_role_changed', new Date(), enrolled[1]?.id ?? null, {
        from: 'member',
        to: 'admin',
      }),
  ];
  for (let i = 0; i < WORKSPACE.auditFill; i++) {
    const act = acts[i % acts.length] as (typeof acts)[number];
    await putAudit(act(enrolled[i % enrolled.length] as User));
  }
  return { orgId, owner, enrolled };
}

/** What the workspace holds once seeded, read back from the table. */
async function census(
  w: Workspace,
): Promise<Omit<ConsoleResult['workspace'], 'channels' | 'posts' | 'endpoints'>> {
  const { listUsers, passkeyCounts } = await import('#adapters/members');
  const { listApiKeys } = await import('#adapters/api-keys');
  const { countAll } = await import('#adapters/table');
  const { keys } = await import('#adapters/keys');
  const [users, counts, apiKeys] = await Promise.all([
    listUsers(w.orgId),
    passkeyCounts(w.orgId),
    listApiKeys(w.orgId),
  ]);
  const { pk, skPrefix } = keys.auditOfOrg(w.orgId);
  return {
    members: users.length,
    pendingMembers: users.filter((u) => !counts.has(u.id)).length,
    passkeys: [...counts.values()].reduce((a, b) => a + b, 0),
    ownerPasskeys: counts.get(w.owner.id) ?? 0,
    keys: apiKeys.length,
    revokedKeys: apiKeys.filter((k) => k.revoked_at).length,
    auditEntries: await countAll({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :sk)',
      ExpressionAttributeValues: { ':pk': pk, ':sk': skPrefix },
    }),
  };
}

/** Sub-millisecond times keep two decimals (the pages that read nothing). */
const ms = (n: number) => fixed(n, n < 1 ? 2 : 1);
const size = (bytes: number) => (bytes < 1024 ? `${bytes} B` : kib(bytes));

const units = (s: Spread) => {
  const f = (n: number) => String(Number(n.toFixed(2)));
  return s.min === s.max ? f(s.min) : `${f(s.min)}–${f(s.max)}`;
};

export function consoleSection(r: ConsoleResult): string {
  const w = r.workspace;
  // The owner who created the workspace, and those invited.
  const roles = Object.entries(WORKSPACE.invited)
    .map(([role, n]) => `${role === 'owner' ? n + 1 : n} ${role}s`)
    .join(', ');
  const rows = r.rows.map((row) => [
    row.id,
    `${row.method} ${row.path}`,
    String(row.status),
    ms(row.medianMs),
    ms(row.p95Ms),
    ms(row.dynamoMs),
    units(row.roundTrips),
    units(row.requests),
    row.requestMix || '–',
    units(row.readUnits),
    units(row.writeUnits),
    size(row.bytes),
    size(row.gzipBytes),
  ]);
  return `Measured ${r.date} on ${r.machine} by \`npm run bench\` (test/bench/console.ts).
Each page's real handler (lib/operations.ts \`consolePages\`) called in-process with an API Gateway
HTTP API event as a browser's request produces it (the session cookie, Host, and for a POST its
Origin and form body), against DynamoDB Local on loopback: ${WARMUP} warm-up calls, then ${r.iterations} measured,
one at a time; every call must answer the status shown, or the bench fails.

**Server time** is the handler's own, from the event in to the answer out (the pipeline, the
session check, the use cases, rendering), DynamoDB Local's answers over loopback included; API
Gateway, the network, Lambda's invoke and cold starts are not (the cold start section has those).
"in DynamoDB": the median time with at least one DynamoDB request under way (SDK included);
DynamoDB Local is not DynamoDB (its writes, committed to SQLite, are much slower than in-region
DynamoDB's), so on AWS a page takes about its time outside DynamoDB plus its sequential round trips
at in-region latency. "seq.": DynamoDB round trips on the critical path (requests sent after
another's answer). **Requests**: every request the shared client sends in one call, and the
capacity units DynamoDB Local reports for them (\`ReturnConsumedCapacity: TOTAL\`); low–high when
a row's calls differed. **Size**: the body as sent (HTTP APIs do not compress it) and gzipped.

The workspace (agency plan), written first through the service's own code (not counted):
${w.members} members (${roles}; ${w.pendingMembers} invited, not enrolled yet), ${w.passkeys} passkeys (${w.ownerPasskeys} the owner's),
registered by the real WebAuthn ceremonies answered by a software authenticator; ${w.keys} API keys
(${w.revokedKeys} revoked, the others used this month); ${w.auditEntries} audit entries (those of the acts, and
${WORKSPACE.auditFill} more written one by one); ${w.channels} channels (one needing re-authorization), ${w.posts} posts over the last 30 days
(${Object.entries(PUBLISHING.byStatus)
    .map(([k, n]) => `${n} ${k.replace('_', ' ')}`)
    .join(', ')}; 1–3 channels each) and ${w.endpoints} webhook
endpoints (one auto-disabled) with ${PUBLISHING.deliveriesPerEndpoint} deliveries each in their logs, written as the service's adapters write them
(test/bench/console-workspace.ts). The person is the owner, signed in by a session created
directly with the sessions use case (\`newSession\`, its item written as sign-in writes it; not
through WebAuthn, and without sign-in's audit entry): a fresh one per row, so no call is due to
refresh its last-seen time — except in "home, session refresh due", where each call brings a
session last seen over 5 minutes ago (a session's first request in 5 minutes is such a call). The
audit log's second page follows the first page's \`rel=next\` link; the assets, the sign-in page's
links (versioned). The acts run last: each mint adds a key.

${table(
  [
    'Page',
    'Request',
    'Status',
    'median ms',
    'p95 ms',
    'in DynamoDB ms',
    'seq.',
    'requests',
    'of which',
    'RCU',
    'WCU',
    'body',
    'gzip',
  ],
  ['l', 'l', 'r', 'r', 'r', 'r', 'r', 'r', 'l', 'r', 'r', 'r', 'r'],
  rows,
)}`;
}
