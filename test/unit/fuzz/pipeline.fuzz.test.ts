import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as z from 'zod/mini';
import { PLATFORMS } from '#core/constants';
import { contracts, type OperationId } from '#core/contracts';
import { MAX_BODY_BYTES, MAX_BODY_DEPTH } from '#shared/http';
import { type CounterStart, daysFromNow } from '../support/fixtures.ts';
import {
  anyJson,
  bigString,
  NASTY_PIECES,
  nastyString,
  nested,
  type Path,
  pathsOf,
  pointerOf,
  richBody,
  runs,
  validRequest,
  withAt,
} from './inputs.ts';
import {
  auth,
  bodyOperations,
  CALLBACK,
  expectDocumented,
  expectRefused,
  FOREIGN,
  type FuzzRequest,
  idOperations,
  jsonAuth,
  KEYS,
  keyedOperations,
  LANDING,
  loadHandlers,
  OWN,
  printObservations,
  SESSION_ACCOUNTS,
  send,
} from './world.ts';

// Adversarial request bodies and headers against every operation that takes a body (and, for
// header injection, every API-key operation): invalid and deeply nested JSON, huge strings, wrong
// types for every field, unicode edge cases, CR/LF in header values, oversized bodies and wrong
// content types. Each answer must be a documented 4xx problem+json that changed nothing (see
// world.ts for the oracle and what counts as a change).

// Every name resolves into private space: no network, and any webhook host name is refused.
vi.mock('node:dns', async (importOriginal) => (await import('./private-dns.ts')).privateDns(importOriginal));

beforeAll(loadHandlers, 60_000);
afterAll(() => printObservations('pipeline'));

const BODY_OPS = bodyOperations.map((op) => op.id as OperationId);
const KEYED_OPS = keyedOperations.map((op) => op.id as OperationId);
const bodyOp = fc.constantFrom(...BODY_OPS);

/** The resource a body operation with a path id acts on: the workspace's own, so refusals matter. */
const paramsFor = (op: OperationId): Pick<FuzzRequest, 'params'> =>
  op === 'reschedulePost'
    ? { params: { id: OWN.post } }
    : op === 'updateWebhookEndpoint'
      ? { params: { id: OWN.webhook } }
      : op === 'selectChannelAccount'
        ? { params: { id: OWN.connection } }
        : op === 'updateInboxItem'
          ? { params: { id: OWN.inbox } }
          : {};

const withBody = (
  op: OperationId,
  body: string,
  headers: Record<string, string> = jsonAuth(),
): FuzzRequest => ({
  op,
  headers,
  body,
  ...paramsFor(op),
});

const bodySchema = (op: OperationId): z.ZodMiniType => {
  const schema = (contracts[op] as { body?: z.ZodMiniType }).body;
  if (!schema) throw new Error(`${op} has no body schema`);
  return schema;
};

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

describe('invalid JSON', () => {
  it('refuses bodies that are not a JSON object with 400 invalid_request, before any read', async () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      nastyString,
      // truncated, or followed by garbage
      fc.tuple(bodyOp, fc.nat()).map(([op, n]) => {
        const json = JSON.stringify(richBody(op));
        return json.slice(0, n % json.length);
      }),
      fc
        .tuple(bodyOp, fc.constantFrom(',', '}', 'x', '\u0000', '//c', '{}', ']', '"', '\ufeff'))
        .map(([op, tail]) => `${JSON.stringify(richBody(op))}${tail}`),
      // JSON5 and friends, a BOM, and JSON that is not an object
      fc.constantFrom(
        "{'filename':'a.png'}",
        '{"a":1,}',
        '{a:1}',
        '{"a":NaN}',
        '{"a":0x10}',
        '{"a":1} // c',
        '/* c */{}',
        '\ufeff{}',
        '{"a":"\u0000"',
        '{"\\ud800":1',
        'null',
        'true',
        '42',
        '"text"',
        '[]',
        '[{"variants":[]}]',
        '',
        ' ',
        '\n',
      ),
      anyJson
        .filter((v) => v === null || typeof v !== 'object' || Array.isArray(v))
        .map((v) => JSON.stringify(v)),
    );
    await fc.assert(
      fc.asyncProperty(bodyOp, text, fc.boolean(), async (op, raw, base64) => {
        const sent = base64 ? Buffer.from(raw, 'utf8').toString('base64') : raw;
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch {
          parsed = undefined;
        }
        fc.pre(
          parsed === undefined || parsed === null || typeof parsed !== 'object' || Array.isArray(parsed),
        );
        const o = await send({ ...withBody(op, sent), base64 });
        expectRefused(o, { status: 400, code: 'invalid_request' });
        expect(o.businessReads).toEqual([]);
      }),
      runs(150),
    );
  });

  it('refuses random base64 payloads that decode to no JSON object', async () => {
    await fc.assert(
      fc.asyncProperty(bodyOp, fc.uint8Array({ maxLength: 64 }), async (op, raw) => {
        const text = Buffer.from(raw).toString('utf8');
        let isObject = false;
        try {
          const v: unknown = JSON.parse(text);
          isObject = v !== null && typeof v === 'object' && !Array.isArray(v);
        } catch {
          isObject = false;
        }
        fc.pre(!isObject);
        const o = await send({ ...withBody(op, Buffer.from(raw).toString('base64')), base64: true });
        expectRefused(o, { status: 400, code: 'invalid_request' });
      }),
      runs(60),
    );
  });
});

describe('deeply nested JSON', () => {
  // Depth 1 to about 130k (the deepest that fits in 256 KiB is 128k levels of [ ]).
  const depth = fc.oneof(
    { weight: 2, arbitrary: fc.integer({ min: 1, max: 200 }) },
    { weight: 4, arbitrary: fc.integer({ min: 1_000, max: 12_000 }) },
    { weight: 1, arbitrary: fc.integer({ min: 12_000, max: 140_000 }) },
  );
  const where = fc.constantFrom('root', 'unknown-field', 'first-field', 'variant-options', 'variant-body');

  it('refuses deep nesting anywhere with a documented 4xx (400, or 413 past 256 KiB), never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(
        bodyOp,
        depth,
        fc.constantFrom('array', 'object', 'mixed') as fc.Arbitrary<'array' | 'object' | 'mixed'>,
        where,
        fc.boolean(),
        async (op, n, shape, at, idempotencyKey) => {
          const deep = nested(n, shape);
          const base = richBody(op);
          let body: string;
          if (at === 'root') body = deep;
          else if (at === 'unknown-field') body = `{"zz":${deep}}`;
          else if (at === 'first-field' || op !== 'createPost') {
            const [first] = Object.keys(base);
            body = JSON.stringify({ ...base, [first ?? 'zz']: '__DEEP__' }).replace('"__DEEP__"', deep);
          } else {
            // createPost: a draft that is valid but for one variant field, with or without an
            // Idempotency-Key (which canonicalises the whole body before the use case runs).
            const variant =
              at === 'variant-options'
                ? { channel_id: OWN.channel, body: 'Hi', options: { langs: '__DEEP__' } }
                : { channel_id: OWN.channel, body: '__DEEP__' };
            body = JSON.stringify({ variants: [variant], draft: true }).replace('"__DEEP__"', deep);
          }
          const headers = {
            ...jsonAuth(),
            ...(idempotencyKey && op === 'createPost'
              ? { 'idempotency-key': `deep-${n}-${shape}-${at}` }
              : {}),
          };
          const o = await send(withBody(op, body, headers));
          expectRefused(o, bytes(body) > MAX_BODY_BYTES ? { status: 413 } : { status: 400 });
        },
      ),
      runs(60),
    );
  });

  it('refuses deep values where the schema takes any JSON (variants[].options), with or without an Idempotency-Key', async () => {
    // The one place a body may nest without a schema bound: options values are z.unknown() until the
    // channel's platform rules check them inside the use case.
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20_000 }),
        fc.constantFrom('array', 'object', 'mixed') as fc.Arbitrary<'array' | 'object' | 'mixed'>,
        fc.constantFrom('langs', 'zz'),
        fc.option(fc.string({ unit: fc.constantFrom(...'abcdef0123456789-'), minLength: 1, maxLength: 36 })),
        async (n, shape, option, key) => {
          const variant = { channel_id: OWN.channel, body: 'Hi', options: { [option]: '__DEEP__' } };
          const body = JSON.stringify({ variants: [variant], draft: true }).replace(
            '"__DEEP__"',
            nested(n, shape),
          );
          const headers = { ...jsonAuth(), ...(key === null ? {} : { 'idempotency-key': key }) };
          const o = await send(withBody('createPost', body, headers));
          // Up to 32 levels (DynamoDB's limit) the platform rules refuse the options; deeper, the
          // pipeline refuses the body before anything recursive sees it.
          // The body itself adds 4 levels (object, variants, variant, options).
          expectRefused(o, {
            status: 400,
            code: n + 4 > MAX_BODY_DEPTH ? 'invalid_request' : 'validation_failed',
          });
        },
      ),
      runs(40),
    );
  });

  it.each([
    [28, 'validation_failed'],
    [29, 'invalid_request'],
  ] as const)(
    'draws the depth line exactly: options nested %i deep (the body adds 4 levels) → %s',
    async (n, code) => {
      const variant = { channel_id: OWN.channel, body: 'Hi', options: { langs: '__DEEP__' } };
      const body = JSON.stringify({ variants: [variant], draft: true }).replace(
        '"__DEEP__"',
        nested(n, 'array'),
      );
      const o = await send(withBody('createPost', body, { ...jsonAuth(), 'idempotency-key': `depth-${n}` }));
      expectRefused(o, { status: 400, code });
    },
  );
});

/** String fields with a documented maximum length (in code points, as zod and JSON Schema count). */
const STRING_FIELDS: Record<string, ReadonlyArray<readonly [Path, number]>> = {
  createMediaUpload: [
    [['filename'], 255],
    [['content_type'], 100],
  ],
  importMedia: [
    [['url'], 2048],
    [['filename'], 255],
  ],
  createPost: [
    [['title'], 200],
    [['body'], 63_206],
    [['variants', 0, 'body'], 63_206],
    [['variants', 0, 'channel_id'], 64],
    [['variants', 0, 'media', 0, 'url'], 2048],
    [['variants', 0, 'media', 0, 'alt'], 1500],
  ],
  reschedulePost: [[['scheduled_at'], 40]],
  updatePost: [
    [['title'], 200],
    [['body'], 63_206],
    [['variants', 0, 'body'], 63_206],
    [['variants', 0, 'channel_id'], 64],
    [['variants', 0, 'media', 0, 'url'], 2048],
    [['variants', 0, 'media', 0, 'alt'], 1500],
  ],
  validatePost: [
    [['title'], 200],
    [['body'], 63_206],
    [['variants', 0, 'body'], 63_206],
    [['variants', 0, 'channel_id'], 64],
    [['variants', 0, 'media', 0, 'url'], 2048],
    [['variants', 0, 'media', 0, 'alt'], 1500],
  ],
  unpublishPost: [[['channel_ids', 0], 64]],
  replyToInboxItem: [[['body'], 63_206]],
  createGeneration: [
    [['text'], 10_000],
    [['channel_ids', 0], 30],
  ],
  createWebhookEndpoint: [
    [['url'], 2048],
    [['description'], 500],
  ],
  updateWebhookEndpoint: [
    [['url'], 2048],
    [['description'], 500],
  ],
  createChannelConnection: [
    [['redirect_uri'], 2048],
    [['channel_id'], 64],
    [['instance'], 2048],
    [['credentials', 'identifier'], 253],
    [['credentials', 'app_password'], 256],
    [['credentials', 'service'], 2048],
  ],
  selectChannelAccount: [[['account_id'], 200]],
  // An enum: anything longer than its longest value is no status.
  updateInboxItem: [[['status'], 8]],
};

describe('huge strings', () => {
  it('refuses every over-long string field with 400 at its pointer, or 413 past 256 KiB', async () => {
    const field = bodyOp.chain((op) =>
      fc.constantFrom(...(STRING_FIELDS[op] ?? [])).map(([path, max]) => ({ op, path, max })),
    );
    await fc.assert(
      fc.asyncProperty(field, bigString(1, 200_000), async ({ op, path, max }, recipe) => {
        const codePoints = (s: string) => [...s].length;
        // Past 256 KiB only the 413 path is left to test: keep strings under ~400k UTF-16 units.
        const need = Math.ceil((max + 1) / Math.max(1, codePoints(recipe.unit)));
        const unitCount = Math.max(need, Math.min(recipe.times, Math.floor(400_000 / recipe.unit.length)));
        const huge = recipe.unit.repeat(unitCount);
        fc.pre(codePoints(huge) > max);
        const body = JSON.stringify(withAt(richBody(op), path, huge));
        const o = await send(withBody(op, body));
        if (bytes(body) > MAX_BODY_BYTES) {
          expectRefused(o, { status: 413, code: 'payload_too_large' });
          return;
        }
        const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
        expect(
          problem.errors?.map((e) => e.pointer),
          `${op}: an error at ${pointerOf(path)}`,
        ).toContain(pointerOf(path));
        expect(o.businessReads).toEqual([]);
      }),
      runs(60),
    );
  });
});

describe('wrong types, missing and unknown fields', () => {
  type Mutation =
    | { kind: 'replace'; value: unknown }
    | { kind: 'remove' }
    | { kind: 'add'; name: string; value: unknown };
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { weight: 4, arbitrary: anyJson.map((value) => ({ kind: 'replace' as const, value })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'remove' as const }) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.oneof(
            fc.string({ minLength: 1, maxLength: 12 }),
            nastyString,
            fc.constantFrom('__proto__', 'constructor', 'a/b', 'm~0', ''),
          ),
          anyJson,
        )
        .map(([name, value]) => ({ kind: 'add' as const, name, value })),
    },
  );

  it('refuses any schema violation at any path with 400 validation_failed pointing at it, before any read', async () => {
    const target = bodyOp.chain((op) => {
      const base = richBody(op);
      // [] is the body itself (only a new field can be added there).
      return fc.constantFrom<Path>([], ...pathsOf(base)).map((path) => ({ op, base, path }));
    });
    await fc.assert(
      fc.asyncProperty(target, mutation, async ({ op, base, path }, m) => {
        let mutated: unknown;
        let at: Path;
        if (m.kind === 'add') {
          const parent = path.length
            ? path.reduce<unknown>((v, k) => (v as Record<string | number, unknown>)[k], base)
            : base;
          fc.pre(parent !== null && typeof parent === 'object' && !Array.isArray(parent));
          fc.pre(!Object.hasOwn(parent as object, m.name));
          at = [...path, m.name];
          // A computed key makes an own property even of "__proto__", as JSON.parse does.
          const grown = { ...(parent as object), [m.name]: m.value };
          mutated = path.length ? withAt(base, path, grown) : grown;
        } else {
          fc.pre(path.length > 0);
          at = path;
          mutated = withAt(base, path, m.kind === 'remove' ? undefined : m.value);
        }
        // Only schema violations: what the pipeline must refuse before the use case runs.
        fc.pre(!bodySchema(op).safeParse(mutated).success);
        const o = await send(withBody(op, JSON.stringify(mutated)));
        const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
        const p = pointerOf(at);
        expect(
          problem.errors?.some(
            (e) =>
              e.pointer === p ||
              e.pointer.startsWith(`${p}/`) ||
              (m.kind === 'remove' && p.startsWith(`${e.pointer}/`)),
          ),
          `an error at or under ${p}: ${JSON.stringify(problem.errors)}`,
        ).toBe(true);
        expect(o.businessReads).toEqual([]);
      }),
      runs(250),
    );
  });
});

describe('unicode edge cases', () => {
  const nasty = fc.oneof(nastyString, fc.constantFrom(...NASTY_PIECES));

  it('survives lone surrogates, NUL, bidi controls, combining marks and emoji in every string field', async () => {
    const request = fc.oneof(
      // createPost without a mode (400 mode_required), so every variant is still checked against its
      // platform with the text as the platform counts it; optionally with an Idempotency-Key.
      fc
        .record({
          title: nasty,
          body: nasty,
          vbody: nasty,
          alt: nasty,
          lang: nasty,
          channel: fc.oneof(
            fc.constant(OWN.channel),
            nasty.map((s) => s.slice(0, 64) || 'x'),
          ),
          key: fc.option(
            fc.string({
              unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
              minLength: 1,
              maxLength: 40,
            }),
          ),
        })
        .map(
          ({ title, body, vbody, alt, lang, channel, key }): FuzzRequest => ({
            op: 'createPost',
            headers: { ...jsonAuth(), ...(key === null ? {} : { 'idempotency-key': key }) },
            body: JSON.stringify({
              title: title.slice(0, 200),
              body,
              variants: [
                {
                  channel_id: channel,
                  body: vbody,
                  media: [{ url: `https://media.example/media/${FOREIGN.media}/${alt}`, type: 'image', alt }],
                  options: { langs: [lang] },
                },
              ],
            }),
          }),
        ),
      fc.record({ filename: nasty, type: fc.oneof(nasty, fc.constant('image/png')) }).map(
        ({ filename, type }): FuzzRequest => ({
          op: 'createMediaUpload',
          headers: jsonAuth(),
          body: JSON.stringify({
            filename: `${filename}.${type === 'image/png' ? 'exe' : 'png'}`,
            content_type: type,
          }),
        }),
      ),
      nasty.map((s): FuzzRequest => withBody('reschedulePost', JSON.stringify({ scheduled_at: s }))),
      fc
        .record({ url: nasty, host: nasty, description: nasty, update: fc.boolean() })
        .chain(({ url, host, description, update }) =>
          fc.constantFrom(url, `https://${host}/hook`, `https://${host}.example/${url}`).map(
            (u): FuzzRequest =>
              withBody(
                update ? 'updateWebhookEndpoint' : 'createWebhookEndpoint',
                JSON.stringify({
                  url: u,
                  event_types: ['post.published'],
                  description: description.slice(0, 500),
                }),
              ),
          ),
        ),
    );
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const o = await send(req);
        expectRefused(o, { status: 400 });
      }),
      runs(150),
    );
  });

  it('accepts or cleanly refuses otherwise valid writes carrying such text, never a 500', async () => {
    const request = fc.oneof(
      fc.record({ title: nasty, body: nasty, vbody: nasty, scheduled: fc.boolean(), key: fc.boolean() }).map(
        ({ title, body, vbody, scheduled, key }): FuzzRequest => ({
          op: 'createPost',
          headers: {
            ...jsonAuth(),
            ...(key ? { 'idempotency-key': `u-${title.length}-${vbody.length}` } : {}),
          },
          body: JSON.stringify({
            title: title.slice(0, 200),
            body,
            variants: [{ channel_id: OWN.channel, body: vbody, options: { langs: ['en'] } }],
            ...(scheduled ? { scheduled_at: daysFromNow(1) } : { draft: true }),
          }),
        }),
      ),
      fc
        .tuple(
          nasty,
          fc.constantFrom(
            ['image/png', 'png'],
            ['video/mp4', 'mp4'],
            ['audio/mpeg', 'mp3'],
            ['IMAGE/PNG', 'png'],
          ),
        )
        .map(
          ([name, [type, ext]]): FuzzRequest => ({
            op: 'createMediaUpload',
            headers: jsonAuth(),
            body: JSON.stringify({ filename: `${name}.${ext}`, content_type: type }),
          }),
        ),
      fc.tuple(nasty, fc.boolean()).map(
        ([text, update]): FuzzRequest =>
          update
            ? withBody(
                'updateWebhookEndpoint',
                JSON.stringify({ url: `https://93.184.216.34/${text}`, description: text.slice(0, 500) }),
              )
            : withBody(
                'createWebhookEndpoint',
                JSON.stringify({
                  url: `https://93.184.216.34/${text}`,
                  event_types: ['post.published'],
                  description: text.slice(0, 500),
                }),
              ),
      ),
    );
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        expectDocumented(await send(req));
      }),
      runs(100),
    );
  });
});

describe('header injection', () => {
  /**
   * A refusal whose reason is known, for every API-key operation: a schema-invalid body, a
   * malformed path id (refused before any read), or else a spent burst window (429).
   */
  const refusedBase = (op: OperationId): { req: FuzzRequest; status: number; start?: CounterStart } => {
    const base = validRequest(op);
    if (base.body !== undefined)
      return { req: { ...base, body: op === 'updateWebhookEndpoint' ? '{}' : '{"zz":1}' }, status: 400 };
    if (base.params) return { req: { ...base, params: { id: `${base.params.id}0` } }, status: 404 };
    return { req: base, status: 429, start: { burst: 120 } };
  };
  const injection = fc.tuple(
    fc.constantFrom('\r\n', '\n', '\r', '\r\n\r\n', '\u0000', '\u2028', '\u0085', '%0d%0a', '\r\n ', '\n\t'),
    fc.constantFrom(
      '',
      'X-Injected: yes',
      'Set-Cookie: session=evil',
      'HTTP/1.1 200 OK',
      'content-type: text/html',
      'x-api-key: nope',
    ),
  );
  const headerName = fc.constantFrom(
    'authorization',
    'x-api-key',
    'content-type',
    'idempotency-key',
    'x-forwarded-for',
    'cookie',
    'accept',
    'x-request-id',
  );

  it('answers the underlying refusal or 401, never echoes the injected lines, and changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...KEYED_OPS),
        headerName,
        injection,
        fc.boolean(),
        async (op, name, [inj, tail], prefix) => {
          const { req, status, start } = refusedBase(op);
          const headers: Record<string, string> = { ...(req.headers ?? {}) };
          const current =
            name === 'authorization'
              ? `Bearer ${KEYS.full.key}`
              : name === 'x-api-key'
                ? KEYS.full.key
                : name === 'content-type'
                  ? 'application/json'
                  : name === 'idempotency-key'
                    ? 'retry-1'
                    : 'value';
          if (name === 'x-api-key') delete headers.authorization;
          headers[name] = prefix ? `${inj}${tail}${inj}${current}` : `${current}${inj}${tail}`;
          const o = await send({ ...req, headers }, start);
          expectRefused(o, { status: [status, 401, 400] });
          const names = Object.keys(o.res?.headers ?? {});
          expect(names).not.toContain('x-injected');
          expect(names).not.toContain('set-cookie');
          expect(o.res?.headers?.['x-request-id']).toBe(o.event.requestContext.requestId);
        },
      ),
      runs(150),
    );
  });

  it('refuses any Idempotency-Key that is not 1 to 255 printable ASCII characters, before writing', async () => {
    const badKey = fc.oneof(
      fc.constant(''),
      fc
        .string({ minLength: 256, maxLength: 400, unit: 'binary-ascii' })
        .map((s) => s.replace(/[^\x20-\x7e]/g, 'a')),
      fc
        .tuple(
          fc.string({ maxLength: 20 }),
          fc.oneof(nastyString, fc.constantFrom('\r\n', '\u0000', '\t', '\u007f', '\u00e9')),
          fc.string({ maxLength: 20 }),
        )
        .map(([a, b, c]) => `${a}${b}${c}`)
        .filter((k) => !/^[\x20-\x7e]{1,255}$/.test(k)),
    );
    await fc.assert(
      fc.asyncProperty(badKey, async (key) => {
        const base = validRequest('createPost');
        const o = await send({ ...base, headers: { ...base.headers, 'idempotency-key': key } });
        expectRefused(o, { status: 400, code: 'invalid_request' });
      }),
      runs(60),
    );
  });
});

describe('oversized bodies', () => {
  const recipe = fc.record({
    op: bodyOp,
    kind: fc.constantFrom('padded-field', 'whitespace', 'junk', 'multibyte', 'boundary', 'base64'),
    unit: fc.constantFrom('x', '\u00e9', '\u20ac', '\u{1f600}', ' ', '\ud800'),
    over: fc.integer({ min: -3, max: 3 * MAX_BODY_BYTES }),
    wrongType: fc.boolean(),
  });

  /** A body of about MAX_BODY_BYTES + over bytes; the boundary cases are exactly 1 byte under, at and over. */
  function build(
    op: OperationId,
    kind: string,
    unit: string,
    over: number,
  ): { body: string; base64: boolean } {
    const target = MAX_BODY_BYTES + (kind === 'boundary' ? (((over % 3) + 3) % 3) - 1 : Math.max(1, over));
    const json = JSON.stringify(richBody(op));
    const fill = (n: number, u: string) => u.repeat(Math.max(0, Math.ceil(n / bytes(u))));
    switch (kind) {
      case 'whitespace': {
        const body = `${json.slice(0, -1)}${' '.repeat(Math.max(0, target - bytes(json)))}}`;
        return { body, base64: false };
      }
      case 'junk':
        return { body: fill(target, unit), base64: false };
      case 'multibyte':
      case 'padded-field': {
        const head = '{"zz":"';
        const body = `${head}${fill(target - head.length - 2, kind === 'multibyte' ? '\u20ac' : unit)}"}`;
        return { body, base64: false };
      }
      case 'boundary': {
        const head = '{"zz":"';
        const body = `${head}${'x'.repeat(target - head.length - 2)}"}`;
        return { body, base64: false };
      }
      default: {
        // base64: what counts is the decoded size; the encoded one is a third larger.
        const head = '{"zz":"';
        const body = `${head}${'x'.repeat(Math.max(0, target - head.length - 2))}"}`;
        return { body: Buffer.from(body).toString('base64'), base64: true };
      }
    }
  }

  it('refuses bodies over 256 KiB (decoded UTF-8 bytes) with 413, and only those', async () => {
    await fc.assert(
      fc.asyncProperty(recipe, async ({ op, kind, unit, over, wrongType }) => {
        const { body, base64 } = build(op, kind, unit, over);
        const decoded = base64 ? Buffer.from(body, 'base64').toString('utf8') : body;
        const headers = wrongType ? { ...auth(), 'content-type': 'text/plain' } : jsonAuth();
        const o = await send({ ...withBody(op, body, headers), base64 });
        if (bytes(decoded) > MAX_BODY_BYTES) expectRefused(o, { status: 413, code: 'payload_too_large' });
        else expectRefused(o, { status: 400 });
      }),
      runs(50),
    );
  });

  it('ignores a body of any size on operations that take none (the path id decides: 404)', async () => {
    const noBody = idOperations
      .filter((op) => !BODY_OPS.includes(op.id as OperationId))
      .map((op) => op.id as OperationId);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...noBody),
        fc.integer({ min: 1, max: 4 * MAX_BODY_BYTES }),
        async (op, size) => {
          const base = validRequest(op);
          const o = await send({
            ...base,
            params: { id: `${base.params?.id ?? ''}0` },
            body: 'x'.repeat(size),
          });
          expectRefused(o, { status: 404, code: 'resource_not_found' });
        },
      ),
      runs(15),
    );
  });
});

describe('content types', () => {
  const BAD = [
    '',
    'text/plain',
    'text/json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/json5',
    'application/jsonx',
    'application/ld+json',
    'application/problem+json',
    'application/merge-patch+json',
    'application/json-patch+json',
    'application/vnd.api+json',
    'application/json; charset=latin1',
    'application/json; charset=iso-8859-1',
    'application/json; charset=utf-16',
    'application/json; charset=utf-16le',
    'application/json; charset=utf-8; charset=latin1',
    'application/json, application/json',
    'application/json,text/plain',
    'text/plain, application/json',
    'application/json\u0000',
    'application/\u0000json',
    'application/jso n',
    'application/json\u200b',
    'application /json',
    'application/*',
    '*/*',
    'json',
  ];
  /** What the API documents: `Content-Type: application/json`, with charset utf-8 if any. */
  const acceptable = (ct: string) => {
    const [mime, ...params] = ct
      .toLowerCase()
      .split(';')
      .map((s) => s.trim());
    return (
      mime === 'application/json' && params.every((p) => !p.startsWith('charset=') || p === 'charset=utf-8')
    );
  };

  it('refuses a valid body sent with any other content type with 400 invalid_request, before any read', async () => {
    const contentType = fc.oneof(
      fc.constantFrom(...BAD),
      fc
        .tuple(fc.constantFrom('application', 'text', 'APPLICATION', ''), fc.string({ maxLength: 12 }))
        .map(([a, b]) => `${a}/${b}`),
      nastyString,
    );
    await fc.assert(
      fc.asyncProperty(bodyOp, fc.option(contentType), async (op, ct) => {
        fc.pre(ct === null || !acceptable(ct));
        const base = validRequest(op);
        const headers: Record<string, string> = { ...auth() };
        if (ct !== null) headers['content-type'] = ct;
        const o = await send({ ...base, headers, ...paramsFor(op) });
        expectRefused(o, { status: 400, code: 'invalid_request' });
        expect(o.businessReads).toEqual([]);
      }),
      runs(150),
    );
  });

  it.each([
    'APPLICATION/JSON',
    'Application/Json; Charset=UTF-8',
    'application/json;charset=utf-8',
    'application/json ; charset=utf-8',
    'application/json; boundary=x',
    '\u00a0application/json',
  ])('accepts the equivalent content type %j', async (ct) => {
    const base = validRequest('createPost');
    const o = await send({ ...base, headers: { ...auth(), 'content-type': ct } });
    expect(expectDocumented(o), o.res?.body).toBe(201);
  });
});

describe('channel connections', () => {
  const nasty = fc.oneof(nastyString, fc.constantFrom(...NASTY_PIECES));
  const upTo = (n: number) => (t: string) => t.slice(0, n) || 'x';
  const isUrl = (raw: string) => {
    try {
      new URL(raw);
      return true;
    } catch {
      return false;
    }
  };
  /** Address literals a server may be named by here: forbidden ones (never public, never loopback). */
  const PRIVATE_LITERALS = ['10.1.2.3', '192.168.0.10', '169.254.169.254', '[fd00::1]'];
  /**
   * Whether a URL would reach no server from this process: no URL at all, a host name (resolved
   * into private space here, see private-dns.ts) or a forbidden literal. The unit environment allows
   * loopback (the contract fakes), and a public literal would be called for real.
   */
  const offline = (raw: string | undefined) => {
    if (raw === undefined || !isUrl(raw)) return true;
    const host = new URL(raw).hostname;
    return !(/^[\d.]+$/.test(host) || host.startsWith('[')) || PRIVATE_LITERALS.includes(host);
  };

  it('answers any createChannelConnection the schema accepts with 201 or a documented refusal that changed nothing, never a 5xx', async () => {
    const redirect = fc.oneof(
      fc.constantFrom(
        LANDING,
        'http://localhost:8080/cb',
        'http://127.0.0.1/cb',
        'http://[::1]:3000/',
        'http://app.example/',
        'https://user:pw@app.example/',
        'https://app.example/#done',
        'javascript:alert(1)',
        'data:text/html,x',
        'https://',
        'HTTPS://APP.EXAMPLE/',
      ),
      nasty.map(upTo(2048)),
      nasty.map((t) => `https://app.example/${t}`),
      nasty.map((t) => `https://${t}/`),
    );
    const channelId = fc.oneof(
      fc.constantFrom(OWN.channel, FOREIGN.channel, OWN.post),
      fc.ulid().map((u) => `ch_${u}`),
      nasty.map(upTo(64)),
    );
    const instance = fc.oneof(
      fc.constantFrom(
        'https://mastodon.example',
        'https://mastodon.example/',
        'http://mastodon.example',
        'https://10.1.2.3',
        'https://mastodon.example/path',
        'mastodon.example',
        'https://a b',
        'https://a:99999',
      ),
      nasty.map((t) => `https://${t}`),
      nasty.map(upTo(2048)),
    );
    const credentials = fc.record(
      {
        identifier: fc.oneof(fc.constant('acme.bsky.social'), nasty.map(upTo(253))),
        app_password: fc.oneof(fc.constant('abcd-efgh-ijkl-mnop'), nasty.map(upTo(256))),
        service: fc.oneof(
          fc.constantFrom(
            'https://pds.example',
            'https://bsky.social',
            'https://10.1.2.3',
            'http://pds.example/',
          ),
          fc.domain().map((d) => `https://${d}`),
        ),
      },
      { requiredKeys: ['identifier', 'app_password'] },
    );
    /** `arb` one time in `of`, else absent. */
    const sometimes = <T>(arb: fc.Arbitrary<T>, of: number) =>
      fc.oneof({ weight: of - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: arb });
    // Mostly the fields the platform takes (so requests get past checkFields to the app, the
    // instance or the PDS), sometimes any mix of them.
    const body = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.constantFrom(...PLATFORMS).chain((platform) =>
          fc.record({
            platform: fc.constant(platform),
            redirect_uri: sometimes(fc.oneof(fc.constant(LANDING), redirect), 2),
            channel_id: sometimes(channelId, 5),
            instance: platform === 'mastodon' ? instance : sometimes(instance, 10),
            credentials: platform === 'bluesky' ? credentials : sometimes(credentials, 10),
          }),
        ),
      },
      {
        weight: 1,
        arbitrary: fc.record(
          {
            platform: fc.constantFrom(...PLATFORMS),
            redirect_uri: redirect,
            channel_id: channelId,
            instance,
            credentials,
          },
          { requiredKeys: ['platform'] },
        ),
      },
    );
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        fc.pre(bodySchema('createChannelConnection').safeParse(b).success);
        fc.pre(offline(b.instance) && offline(b.credentials?.service));
        const o = await send(withBody('createChannelConnection', JSON.stringify(b)));
        if (expectDocumented(o) === 201) {
          // Only LinkedIn has the operator's app here; the session awaits the person's consent.
          const answer = JSON.parse(o.res?.body ?? '{}') as { status?: string; redirect_uri?: string | null };
          expect(answer.status).toBe('awaiting_authorization');
          expect(answer.redirect_uri).toBe(b.redirect_uri ?? null);
        }
      }),
      runs(100),
    );
  });

  it('refuses a Mastodon instance that is no URL with 400 at /instance, never a 500', async () => {
    const instance = fc
      .oneof(
        fc.constantFrom(
          'https://a b',
          'https://[',
          'https://a:99999',
          'https://?',
          'https://#x',
          'https://%zz',
        ),
        nasty.map((t) => `https://${t}`),
        fc
          .string({ unit: fc.constantFrom(...'ab:[]%?# @.\\'), minLength: 1, maxLength: 8 })
          .map((t) => `https://${t}`),
      )
      .filter((i) => !isUrl(i));
    await fc.assert(
      fc.asyncProperty(instance, async (i) => {
        const o = await send(
          withBody('createChannelConnection', JSON.stringify({ platform: 'mastodon', instance: i })),
        );
        const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
        if (o.res?.statusCode === 400)
          expect(
            problem.errors?.map((e) => e.pointer),
            JSON.stringify(i),
          ).toContain('/instance');
      }),
      runs(30),
    );
  });

  it('connects only an account the grant covers (200), refuses any other with 400 unknown_account, and a session not selecting with 409', async () => {
    const covered: readonly string[] = SESSION_ACCOUNTS.map((a) => a.id);
    const account = fc.oneof(
      fc.constantFrom(...covered),
      fc.constantFrom(
        '__proto__',
        'constructor',
        'toString',
        'valueOf',
        'hasOwnProperty',
        `${covered[0]} `,
        covered[0]?.toUpperCase() ?? 'x',
        'urn:li:person:fuzz',
        OWN.channel,
      ),
      nasty.map(upTo(200)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(OWN.connection, CALLBACK.connection),
        account,
        async (id, accountId) => {
          const o = await send({
            op: 'selectChannelAccount',
            headers: jsonAuth(),
            params: { id },
            body: JSON.stringify({ account_id: accountId }),
          });
          if (id === CALLBACK.connection) {
            expectRefused(o, { status: 409, code: 'resource_conflict' });
          } else if (covered.includes(accountId)) {
            expect(expectDocumented(o), o.res?.body).toBe(200);
          } else {
            const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
            expect(problem.errors).toEqual([
              expect.objectContaining({ pointer: '/account_id', code: 'unknown_account' }),
            ]);
          }
        },
      ),
      runs(40),
    );
  });
});
