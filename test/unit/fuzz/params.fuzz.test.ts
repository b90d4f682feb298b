import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as z from 'zod/mini';
import { POST_STATUSES } from '#core/constants';
import { contracts, type OperationId } from '#core/contracts';
import { encodeCursor } from '#core/cursor';
import { MAX_BODY_BYTES } from '#shared/http';
import { type CounterStart, ORG_ID, OTHER_ORG_ID } from '../support/fixtures.ts';
import {
  badId,
  type IdKind,
  NASTY_PIECES,
  nastyString,
  pointerOf,
  runs,
  validRequest,
  wellFormed,
} from './inputs.ts';
import {
  auth,
  expectRefused,
  FOREIGN,
  type FuzzRequest,
  idOperations,
  KEYS,
  keyedOperations,
  loadHandlers,
  OWN,
  opById,
  printObservations,
  send,
} from './world.ts';

// Adversarial path ids, query strings, cursors and credentials against every API-key operation,
// and the order in which the pipeline reports several faults at once (docs/api/limits.md, "Order of checks":
// 401 → 403 scope / plan feature → 429 → 400 → 403 dangerous_ops_disabled → 404 → 409). Each
// answer must be a documented 4xx problem+json that changed nothing (see world.ts).

// Every name resolves into private space: no network, and any webhook host name is refused.
vi.mock('node:dns', async (importOriginal) => (await import('./private-dns.ts')).privateDns(importOriginal));

beforeAll(loadHandlers, 60_000);
afterAll(() => printObservations('params'));

const KEYED = keyedOperations.map((op) => op.id as OperationId);
/** The kind of resource an operation's path id names. */
const ID_KINDS: ReadonlyArray<readonly [string, IdKind]> = [
  ['/v1/posts/', 'post'],
  ['/v1/media/', 'media'],
  ['/v1/webhook-endpoints/', 'webhook'],
  ['/v1/channel-connections/', 'connection'],
  ['/v1/channels/', 'channel'],
  ['/v1/inbox/', 'inbox'],
];
const kindOf = (op: OperationId): IdKind => {
  const kind = ID_KINDS.find(([prefix]) => opById(op).path.startsWith(prefix))?.[1];
  if (!kind) throw new Error(`${op}: no id kind for ${opById(op).path}`);
  return kind;
};
const querySchema = (op: OperationId) => (contracts[op] as { query?: z.ZodMiniType }).query;
const QUERY_OPS = KEYED.filter((op) => querySchema(op) !== undefined);
const knownParams = (op: OperationId) =>
  Object.keys((querySchema(op) as unknown as { def: { shape: Record<string, unknown> } }).def.shape);

describe('path ids', () => {
  it('answers 404 for any id that is not one of this workspace, without sealing, sending or writing', async () => {
    const ID_OPS = idOperations.map((op) => op.id as OperationId);
    const request = fc.constantFrom(...ID_OPS).chain((op) => badId(kindOf(op)).map((id) => ({ op, id })));
    await fc.assert(
      fc.asyncProperty(request, async ({ op, id }) => {
        const o = await send({ ...validRequest(op), params: { id } });
        expectRefused(o, { status: 404, code: 'resource_not_found' });
        // A malformed id is refused before the table is read.
        if (!wellFormed(id)) expect(o.businessReads, `${op} ${JSON.stringify(id)}`).toEqual([]);
      }),
      runs(250),
    );
  });
});

describe('query parameters', () => {
  const SPECIAL_NAMES = [
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'LIMIT',
    'limit ',
    'limit[]',
    'after[0]',
    'status\u0000',
    'a/b',
    'm~1',
    '',
  ];

  it('refuses unknown query parameters with 400 validation_failed at /query/<name>, before touching anything', async () => {
    const request = fc.constantFrom(...QUERY_OPS).chain((op) =>
      fc
        .uniqueArray(fc.oneof(fc.string({ maxLength: 12 }), nastyString, fc.constantFrom(...SPECIAL_NAMES)), {
          minLength: 1,
          maxLength: 3,
        })
        .map((names) => names.filter((n) => !knownParams(op).includes(n)))
        .filter((names) => names.length > 0)
        .chain((names) =>
          fc
            .array(fc.oneof(nastyString, fc.constantFrom('1', '', 'true', '10,20')), {
              minLength: names.length,
              maxLength: names.length,
            })
            .map((values) => ({ op, names, values })),
        ),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ op, names, values }) => {
        const base = validRequest(op);
        // Own property names, as API Gateway's parsed JSON event would carry them (even __proto__).
        const query = Object.fromEntries([
          ...Object.entries(base.query ?? {}),
          ...names.map((n, i) => [n, values[i] ?? ''] as const),
        ]);
        const o = await send({ ...base, query });
        const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
        const pointers = problem.errors?.map((e) => e.pointer) ?? [];
        for (const n of names)
          expect(pointers, `${op}: ${JSON.stringify(n)}`).toContain(pointerOf(['query', n]));
        expect(o.businessReads).toEqual([]);
      }),
      runs(150),
    );
  });

  it('refuses malformed limit, status and after values with 400 validation_failed', async () => {
    const LIST_OPS = QUERY_OPS.filter((op) => knownParams(op).includes('limit'));
    const badLimit = fc
      .oneof(
        fc.constantFrom(
          '0',
          '101',
          '-1',
          '1.5',
          'abc',
          '',
          ' ',
          '1e3',
          '10,20',
          'Infinity',
          'NaN',
          '0x0',
          '9'.repeat(400),
          '\u0661',
        ),
        nastyString,
        fc.integer().map(String),
        fc.double().map(String),
      )
      .filter((v) => {
        const n = Number(v);
        return !(Number.isInteger(n) && n >= 1 && n <= 100);
      });
    const badStatus = fc
      .oneof(
        fc.constantFrom('Draft', 'DRAFT', 'draft ', 'all', '', 'draft,scheduled', 'published\u0000'),
        nastyString,
      )
      .filter((v) => !(POST_STATUSES as readonly string[]).includes(v));
    const badAfter = fc.oneof(
      fc.constant(''),
      fc.integer({ min: 1025, max: 20_000 }).map((n) => 'A'.repeat(n)),
    );
    const request = fc.constantFrom(...LIST_OPS).chain((op) =>
      fc
        .oneof(
          badLimit.map((v) => ['limit', v] as const),
          badAfter.map((v) => ['after', v] as const),
          ...(op === 'listPosts' ? [badStatus.map((v) => ['status', v] as const)] : []),
        )
        .map(([name, value]) => ({ op, name, value })),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ op, name, value }) => {
        const o = await send({ op, headers: auth(), query: { [name]: value } });
        const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
        expect(problem.errors?.map((e) => e.pointer)).toContain(`/query/${name}`);
        expect(o.businessReads).toEqual([]);
      }),
      runs(150),
    );
  });
});

describe('cursors', () => {
  const SECRET = process.env.HERALD_CURSOR_SECRET ?? '';
  const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  type List = 'posts' | 'media';
  const ownKey = (list: List) => (list === 'posts' ? OWN.post : OWN.media);
  const signed = (list: string, orgId: string, filter: string, k: string, secret = SECRET) =>
    encodeCursor(secret, { list, orgId, filter }, k);

  /** A change that makes a different string: flip, insert, delete, truncate, extend, re-case. */
  const tamper = (cursor: string) =>
    fc
      .tuple(
        fc.nat(),
        fc.constantFrom(...B64URL, '.', '=', '%2E', ' ', '\u0000'),
        fc.constantFrom(
          'flip',
          'insert',
          'delete',
          'truncate',
          'append',
          'prepend',
          'upper',
          'lower',
          'swap',
        ),
      )
      .map(([n, c, how]) => {
        const i = n % cursor.length;
        const [body = '', mac = ''] = cursor.split('.');
        switch (how) {
          case 'flip':
            return `${cursor.slice(0, i)}${c}${cursor.slice(i + 1)}`;
          case 'insert':
            return `${cursor.slice(0, i)}${c}${cursor.slice(i)}`;
          case 'delete':
            return `${cursor.slice(0, i)}${cursor.slice(i + 1)}`;
          case 'truncate':
            return cursor.slice(0, i);
          case 'append':
            return `${cursor}${c}`;
          case 'prepend':
            return `${c}${cursor}`;
          case 'upper':
            return cursor.toUpperCase();
          case 'lower':
            return cursor.toLowerCase();
          default:
            return `${mac}.${body}`;
        }
      })
      .filter((t) => t !== cursor);

  const badCursor = (list: List, filter: string) => {
    const other: List = list === 'posts' ? 'media' : 'posts';
    const mine = signed(list, ORG_ID, filter, ownKey(list));
    return fc.oneof(
      // tampered, truncated
      tamper(mine),
      // replayed against another list, organization or filter, or signed with another secret
      fc.constant(signed(other, ORG_ID, list === 'media' ? filter : '', ownKey(other))),
      fc.constant(signed(list, OTHER_ORG_ID, filter, ownKey(list))),
      fc
        .constantFrom(...POST_STATUSES, '', 'zz')
        .filter((f) => f !== filter)
        .map((f) => signed(list, ORG_ID, f, ownKey(list))),
      fc.string({ minLength: 1, maxLength: 20 }).map((s) => signed(list, ORG_ID, filter, ownKey(list), s)),
      // well signed, but the last key is no id of this list
      fc
        .oneof(
          nastyString,
          fc.constantFrom('', ownKey(other), OWN.channel, `${ownKey(list)}/..`, ownKey(list).toLowerCase()),
        )
        .map((k) => signed(list, ORG_ID, filter, k)),
      // not a cursor at all
      fc.oneof(
        nastyString,
        fc.string({ unit: fc.constantFrom(...B64URL, '.'), minLength: 1, maxLength: 300 }),
      ),
      fc.constantFrom(
        '.',
        '..',
        'a.b.c',
        `${mine}.`,
        `.${mine}`,
        `${mine}.${mine}`,
        'null',
        '{}',
        'eyJ9.e30',
      ),
    );
  };

  it('refuses tampered, truncated, foreign and other-list cursors with 400 before any query', async () => {
    const request = fc
      .constantFrom<List>('posts', 'media')
      .chain((list) =>
        fc
          .constantFrom<string | null>(null, ...(list === 'posts' ? POST_STATUSES : []))
          .chain((status) => badCursor(list, status ?? '').map((after) => ({ list, status, after }))),
      );
    await fc.assert(
      fc.asyncProperty(request, async ({ list, status, after }) => {
        const op: OperationId = list === 'posts' ? 'listPosts' : 'listMedia';
        const query: Record<string, string> = { after };
        if (status !== null) query.status = status;
        const o = await send({ op, headers: auth(), query });
        expectRefused(o, {
          status: 400,
          code: after.length === 0 || after.length > 1024 ? 'validation_failed' : 'invalid_request',
        });
        expect(o.businessReads, 'a refused cursor never reaches the table').toEqual([]);
      }),
      runs(200),
    );
  });

  it('refuses cursors signed with the real secret whose payload has wrong or missing fields', async () => {
    // Only the server can sign; these are cursors a future or past version might have issued.
    const payload = fc.record(
      {
        l: fc.oneof(fc.constantFrom('posts', 'media'), fc.jsonValue()),
        o: fc.oneof(fc.constant(ORG_ID), fc.jsonValue()),
        f: fc.oneof(fc.constant(''), fc.jsonValue()),
        k: fc.oneof(fc.constant(OWN.post), fc.jsonValue()),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom<List>('posts', 'media'), payload, async (list, p) => {
        const valid =
          p.l === list &&
          p.o === ORG_ID &&
          (p.f ?? '') === '' &&
          p.f !== undefined &&
          typeof p.k === 'string' &&
          wellFormed(p.k) &&
          p.k.startsWith(list === 'posts' ? 'post_' : 'med_');
        fc.pre(!valid);
        const body = Buffer.from(JSON.stringify(p)).toString('base64url');
        const mac = createHmac('sha256', SECRET).update(body).digest('base64url');
        const o = await send({
          op: list === 'posts' ? 'listPosts' : 'listMedia',
          headers: auth(),
          query: { after: `${body}.${mac}` },
        });
        expectRefused(o, { status: 400 });
      }),
      runs(100),
    );
  });
});

describe('API keys', () => {
  const key = KEYS.full.key;
  /** Credentials that must never authenticate: near misses of the real key included. */
  const badKeyValue = fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      'svc_live_',
      `${key}x`,
      `x${key}`,
      key.slice(0, -1),
      key.toUpperCase(),
      `${key}\u0000`,
      `${key.slice(0, 12)}\u0430${key.slice(13)}`,
      `svc_live_${'A'.repeat(300)}`,
      KEYS.unknown.key,
      KEYS.revoked.key,
      KEYS.ghost.key,
      `${key} ${key}`,
      `${key},${key}`,
    ),
    fc
      .string({
        unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'),
        minLength: 21,
        maxLength: 60,
      })
      .map((s) => `svc_live_${s}`),
    nastyString,
    fc.tuple(nastyString, fc.nat(key.length)).map(([s, i]) => `${key.slice(0, i)}${s}${key.slice(i)}`),
  );
  /** Whether a header value names the real key, whitespace around it aside (HTTP's OWS, or trim()). */
  const namesKey = (v: string | undefined) =>
    v !== undefined &&
    (v.trim() === key || (/^bearer[ \t]+/i.test(v) && v.replace(/^bearer[ \t]+/i, '').trim() === key));
  const credentials = fc
    .oneof(
      fc.constant({}),
      badKeyValue.map((v) => ({ authorization: `Bearer ${v}` })),
      badKeyValue.map((v) => ({ 'x-api-key': v })),
      fc
        .constantFrom(
          'Bearer',
          'Bearer ',
          'bearer',
          'Basic dXNlcjpwYXNz',
          `Token ${key}`,
          `Bearer\u00a0${key}`,
          `Bearer\t\t`,
          `${key}`,
          `Bearer ${key}\r\nX: 1`,
          `Bearer ${key} extra`,
        )
        .map((v) => ({ authorization: v })),
      fc.tuple(badKeyValue, badKeyValue).map(([a, b]) => ({ authorization: `Bearer ${a}`, 'x-api-key': b })),
    )
    .filter((c: Record<string, string>) => !namesKey(c.authorization) && !namesKey(c['x-api-key']));

  it('answers 401 to missing, malformed, unknown, revoked and orphaned keys, unmetered and unread', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...KEYED), credentials, async (op, creds) => {
        const base = validRequest(op);
        const { authorization: _a, ...rest } = base.headers ?? {};
        const o = await send({ ...base, headers: { ...rest, ...creds } });
        expectRefused(o, { status: 401, code: ['authentication_required', 'invalid_api_key'] });
        expect(o.businessReads).toEqual([]);
      }),
      runs(200),
    );
  });
});

describe('order of checks', () => {
  type Fault =
    | 'noKey'
    | 'badKey'
    | 'noScope'
    | 'freePlan'
    | 'burst'
    | 'quota'
    | 'query'
    | 'oversize'
    | 'contentType'
    | 'json'
    | 'schema'
    | 'cautious'
    | 'id';
  const RANK: Record<Fault, { status: number; code: string }> = {
    noKey: { status: 401, code: 'authentication_required' },
    badKey: { status: 401, code: 'invalid_api_key' },
    noScope: { status: 403, code: 'insufficient_scope' },
    freePlan: { status: 403, code: 'feature_not_enabled' },
    burst: { status: 429, code: 'rate_limited' },
    quota: { status: 429, code: 'quota_exhausted' },
    query: { status: 400, code: 'validation_failed' },
    oversize: { status: 413, code: 'payload_too_large' },
    contentType: { status: 400, code: 'invalid_request' },
    json: { status: 400, code: 'invalid_request' },
    schema: { status: 400, code: 'validation_failed' },
    cautious: { status: 403, code: 'dangerous_ops_disabled' },
    id: { status: 404, code: 'resource_not_found' },
  };
  /** In the order the pipeline checks them; the first present fault decides. */
  const ORDER = Object.keys(RANK) as Fault[];

  function applicable(op: OperationId): Fault[] {
    const o = opById(op);
    const base = validRequest(op);
    const faults: Fault[] = ['noKey', 'badKey', 'noScope', 'burst', 'quota'];
    if (o.feature === 'webhooks' || o.feature === 'inbox') faults.push('freePlan');
    if (querySchema(op)) faults.push('query');
    if (base.body !== undefined) faults.push('oversize', 'contentType', 'json', 'schema');
    if (op === 'deletePost' || op === 'publishPost' || op === 'unpublishPost' || op === 'replyToInboxItem')
      faults.push('cautious');
    if (base.params) faults.push('id');
    return faults;
  }

  function build(op: OperationId, faults: Set<Fault>): { req: FuzzRequest; start: CounterStart } {
    const base = validRequest(op);
    const headers: Record<string, string> = { ...(base.headers ?? {}) };
    const keyFor = faults.has('noScope')
      ? KEYS.noScope
      : faults.has('freePlan')
        ? KEYS.free
        : faults.has('cautious')
          ? KEYS.cautious
          : KEYS.full;
    headers.authorization = `Bearer ${keyFor.key}`;
    if (faults.has('badKey')) headers.authorization = `Bearer ${KEYS.unknown.key}`;
    if (faults.has('noKey')) delete headers.authorization;
    if (faults.has('contentType')) headers['content-type'] = 'text/plain';
    let body = base.body;
    if (faults.has('schema')) body = op === 'updateWebhookEndpoint' ? '{}' : '{"zz":1}';
    if (faults.has('json')) body = `${body ?? ''}}`;
    if (faults.has('oversize')) body = `{"zz":"${'x'.repeat(MAX_BODY_BYTES)}"}`;
    const req: FuzzRequest = { ...base, headers, ...(body !== undefined ? { body } : {}) };
    if (faults.has('query')) req.query = { ...(base.query ?? {}), zz: '1' };
    // A malformed id: refused before anything is read or sealed.
    if (faults.has('id')) req.params = { id: `${base.params?.id ?? ''}Z` };
    const start: CounterStart = {};
    if (faults.has('burst')) start.burst = 120;
    if (faults.has('quota')) start.api_requests = faults.has('freePlan') ? 1_000 : 50_000;
    return { req, start };
  }

  it('reports the first fault in the documented order, whatever else is wrong with the request', async () => {
    const request = fc
      .constantFrom(...KEYED)
      .chain((op) => fc.subarray(applicable(op), { minLength: 1 }).map((faults) => ({ op, faults })));
    await fc.assert(
      fc.asyncProperty(request, async ({ op, faults }) => {
        const set = new Set(faults);
        // A key that is missing or unknown has no scope, plan or org to be wrong about.
        const first = ORDER.find((f) => set.has(f))!;
        const { req, start } = build(op, set);
        const o = await send(req, start);
        const expected = RANK[first];
        // quota and burst together: the burst refusal is the one reported.
        expectRefused(o, { status: expected.status, code: expected.code as never });
      }),
      runs(300),
    );
  });

  it.each(KEYED)(
    'refuses a valid %s spent by the burst limit or the monthly quota with 429, changing nothing',
    async (op) => {
      for (const start of [{ burst: 120 }, { api_requests: 50_000 }] satisfies CounterStart[]) {
        const o = await send(validRequest(op), start);
        expectRefused(o, { status: 429, code: 'burst' in start ? 'rate_limited' : 'quota_exhausted' });
      }
    },
  );
});

describe('unicode and injection in ids and query values', () => {
  it('treats any unicode in path ids and query values as a plain mismatch (404 or 400)', async () => {
    const value = fc.oneof(nastyString, fc.constantFrom(...NASTY_PIECES));
    const request = fc.oneof(
      fc
        .tuple(fc.constantFrom(...idOperations.map((op) => op.id as OperationId)), value)
        .map(([op, v]): [FuzzRequest, number] => [{ ...validRequest(op), params: { id: v } }, 404]),
      fc
        .tuple(
          fc.constantFrom<OperationId>('listPosts', 'listMedia'),
          fc.constantFrom('limit', 'after', 'status'),
          value,
        )
        .filter(([op, name]) => op === 'listPosts' || name !== 'status')
        .map(([op, name, v]): [FuzzRequest, number] => [{ op, headers: auth(), query: { [name]: v } }, 400]),
    );
    await fc.assert(
      fc.asyncProperty(request, async ([req, status]) => {
        const o = await send(req);
        expectRefused(o, { status });
      }),
      runs(150),
    );
  });

  it('answers 404 to another organization’s real ids, changing nothing', async () => {
    for (const op of idOperations.map((o) => o.id as OperationId)) {
      const id = FOREIGN[kindOf(op)];
      const o = await send({ ...validRequest(op), params: { id } });
      expectRefused(o, { status: 404, code: 'resource_not_found' });
    }
  });
});
