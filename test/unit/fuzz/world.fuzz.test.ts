import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PLATFORMS } from '#core/constants';
import type { OperationId } from '#core/contracts';
import { operations } from '#lib/operations';
import { anyJson, NASTY_PIECES, nastyString, runs, validRequest } from './inputs.ts';
import {
  auth,
  CALLBACK,
  documented,
  expectDocumented,
  expectRefused,
  jsonAuth,
  KEYS,
  LANDING,
  LINKEDIN_CHANNEL,
  loadHandlers,
  printObservations,
  send,
} from './world.ts';

// The fuzz world itself: every operation is covered and documented, each baseline request is what
// the other properties assume (accepted, or refused only for the reason noted), and the two
// operations served without an API key - the OpenAPI document and the platforms' OAuth callback -
// answer whatever they are sent.

// Every name resolves into private space: no network, and any webhook host name is refused.
vi.mock('node:dns', async (importOriginal) => (await import('./private-dns.ts')).privateDns(importOriginal));

beforeAll(loadHandlers, 60_000);
afterAll(() => printObservations('world'));

describe('the fuzz world', () => {
  it('loads every operation of the manifest and reads its documented responses', () => {
    expect(operations.length).toBeGreaterThan(0);
    for (const op of operations) {
      const doc = documented.get(op.id);
      expect(doc?.success.length, op.id).toBeGreaterThan(0);
      for (const status of doc?.success ?? []) expect(status, op.id).toBeGreaterThanOrEqual(200);
      expect(doc?.problems.has(500), op.id).toBe(true);
    }
  });

  it('documents the same responses in the committed docs/openapi.json', () => {
    const committed = JSON.parse(
      readFileSync(resolve(import.meta.dirname, '../../../docs/openapi.json'), 'utf8'),
    ) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    for (const op of operations) {
      const statuses = Object.keys(committed.paths[op.path]?.[op.method.toLowerCase()]?.responses ?? {});
      const doc = documented.get(op.id)!;
      expect(statuses.map(Number).sort(), op.id).toEqual([...doc.success, ...doc.problems.keys()].sort());
    }
  });

  it.each(operations.map((op) => op.id as OperationId))(
    'answers the baseline request of %s as documented',
    async (op) => {
      const o = await send(validRequest(op));
      const status = expectDocumented(o);
      // completeMediaUpload's asset was never uploaded (409); importMedia's URL names a host the
      // fake resolver puts in private space (400 address_not_allowed: nothing leaves the process);
      // every other baseline is accepted (oauthCallback's with its redirect: the session has a
      // redirect_uri).
      const expected: Partial<Record<OperationId, number>> = {
        completeMediaUpload: 409,
        importMedia: 400,
        oauthCallback: 303,
      };
      expect(status, o.res?.body).toBe(expected[op] ?? documented.get(op)?.success[0]);
      // No baseline calls out of the process (disconnectChannel's Bluesky channel has no session).
      expect(o.network, op).toEqual([]);
    },
  );
});

describe('disconnectChannel', () => {
  it('disconnects a LinkedIn channel though the revocation cannot reach LinkedIn, calling out only once admitted', async () => {
    const req = { op: 'disconnectChannel', headers: auth(), params: { id: LINKEDIN_CHANNEL } } as const;
    const o = await send(req);
    expect(expectDocumented(o), o.res?.body).toBe(200);
    expect(JSON.parse(o.res?.body ?? '{}').status).toBe('disconnected');
    expect(o.network).toEqual(['POST https://www.linkedin.com/oauth/v2/revoke']);
    // Refused by the gate: no revocation, no write (expectRefused counts a call out as a side effect).
    expectRefused(await send(req, { burst: 120 }), { status: 429, code: 'rate_limited' });
  });
});

describe('the fake resolver', () => {
  it('points every webhook host name at private space, so no lookup leaves the process', async () => {
    const o = await send({
      op: 'createWebhookEndpoint',
      headers: jsonAuth(),
      body: JSON.stringify({ url: 'https://hooks.example.com/herald', event_types: ['post.published'] }),
    });
    const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
    expect(problem.errors).toEqual([expect.objectContaining({ pointer: '/url', code: 'forbidden_address' })]);
  });

  it('points every server a user names for a channel (Mastodon instance, Bluesky PDS) at private space: 400 forbidden_address', async () => {
    // Names (resolved here into 10.0.0.1) and literals in forbidden space. Never loopback: the unit
    // environment allows 127.0.0.0/8 for the contract fakes, so a loopback server would be called.
    const host = fc.oneof(
      fc.constantFrom(
        'mastodon.example',
        'mastodon.social',
        'bsky.social',
        'pds.example',
        '10.1.2.3',
        '192.168.0.10',
        '169.254.169.254',
        '100.64.0.1',
        '[fd00::1]',
      ),
      fc.domain(),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('mastodon', 'bluesky'), host, async (platform, h) => {
        const body =
          platform === 'mastodon'
            ? { platform, instance: `https://${h}` }
            : {
                platform,
                credentials: { identifier: 'acme.bsky.social', app_password: 'x', service: `https://${h}` },
              };
        const o = await send({
          op: 'createChannelConnection',
          headers: jsonAuth(),
          body: JSON.stringify(body),
        });
        const problem = expectRefused(o, { status: 400, code: 'validation_failed' });
        if (o.res?.statusCode === 400)
          expect(problem.errors, JSON.stringify(body)).toEqual([
            expect.objectContaining({
              pointer: platform === 'mastodon' ? '/instance' : '/credentials/service',
              code: 'forbidden_address',
            }),
          ]);
      }),
      runs(20),
    );
  });
});

describe('getOpenApi (no API key)', () => {
  it('answers 200 with the document whatever headers, query and body it is sent', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc.constantFrom(
            'authorization',
            'x-api-key',
            'content-type',
            'accept',
            'x-forwarded-for',
            'cookie',
          ),
          fc.oneof(nastyString, fc.constantFrom(...NASTY_PIECES)),
        ),
        fc.dictionary(fc.oneof(fc.string(), fc.constant('__proto__')), nastyString, { maxKeys: 4 }),
        fc.option(anyJson.map((v) => JSON.stringify(v))),
        async (headers, query, body) => {
          const o = await send({ op: 'getOpenApi', headers, query, ...(body === null ? {} : { body }) });
          expect(expectDocumented(o)).toBe(200);
          expect(JSON.parse(o.res?.body ?? '').openapi).toBe('3.1.0');
          expect(o.meters).toEqual([]);
        },
      ),
      runs(40),
    );
  });
});

describe('oauthCallback (no API key)', () => {
  const value = fc.oneof(
    nastyString,
    fc.string({ maxLength: 20 }),
    fc.constantFrom('', 'access_denied', 'code-123', 'https://www.linkedin.com', CALLBACK.state),
  );
  /** Parameter names platforms send, and some that break naive parsing. */
  const name = fc.oneof(
    fc.constantFrom(
      'code',
      'error',
      'error_description',
      'error_uri',
      'iss',
      'scope',
      'session_state',
      'response',
      'STATE',
      'state ',
      '__proto__',
      'constructor',
      'toString',
      '',
    ),
    fc.string({ maxLength: 12 }),
    nastyString,
  );
  const platform = fc.oneof(fc.constantFrom(...PLATFORMS), nastyString, fc.constant(''));
  const headers = fc.dictionary(
    fc.constantFrom('authorization', 'x-api-key', 'cookie', 'content-type', 'referer', 'host'),
    fc.oneof(nastyString, fc.constant(`Bearer ${KEYS.full.key}`)),
  );
  /** Any query whose `state` is not the seeded one (absent, empty, near misses, anything). */
  const query = fc
    .tuple(
      fc.dictionary(name, value, { maxKeys: 6 }),
      fc.option(
        fc.oneof(
          value,
          fc.constantFrom(
            CALLBACK.state.toUpperCase(),
            `${CALLBACK.state} `,
            ` ${CALLBACK.state}`,
            CALLBACK.state.slice(0, -1),
            `${CALLBACK.state},${CALLBACK.state}`,
            encodeURIComponent(`${CALLBACK.state}=`),
          ),
        ),
      ),
    )
    .map(([q, state]) => {
      const out: Record<string, string> = { ...q };
      if (state === null) delete out.state;
      else out.state = state;
      return out;
    })
    .filter((q) => q.state !== CALLBACK.state);

  it('answers a 400 page to any callback whose state names no session: unmetered, nothing changed', async () => {
    await fc.assert(
      fc.asyncProperty(platform, query, headers, async (p, q, h) => {
        const o = await send({ op: 'oauthCallback', params: { platform: p }, query: q, headers: h });
        // A person's browser reads it: a page, never problem+json, never a 5xx.
        expect(o.crash).toBeUndefined();
        expect(o.res?.statusCode).toBe(400);
        expect(o.res?.headers?.['content-type']).toBe('text/html; charset=utf-8');
        expect(o.res?.body).toContain('Nothing was connected');
        expect(o.tableChanged).toBe(false);
        // A state of the shape Herald issues costs one read of the state; any other none at all.
        const issuedShape = /^[A-Za-z0-9_-]{16,128}$/.test(q.state ?? '');
        expect(o.businessReads, JSON.stringify(q)).toEqual(
          issuedShape ? [expect.stringMatching(/^GetItem OAUTHSTATE#/)] : [],
        );
      }),
      runs(50),
    );
  });

  it('ends the seeded session whatever else the platform sends: a 303 to its redirect_uri, never a 5xx', async () => {
    const extras = fc.dictionary(name, value, { maxKeys: 5 }).map((q) => {
      const out: Record<string, string> = { ...q };
      delete out.state;
      return out;
    });
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(CALLBACK.platform), platform), extras, async (p, q) => {
        const o = await send({
          op: 'oauthCallback',
          params: { platform: p },
          query: { ...q, state: CALLBACK.state },
        });
        expect(expectDocumented(o), o.res?.body).toBe(303);
        expect(o.res?.headers?.location).toMatch(
          new RegExp(
            `^${LANDING}\\?connection_id=${CALLBACK.connection}&status=(failed|connected|selecting_account)`,
          ),
        );
        expect(o.meters).toEqual([]);
      }),
      runs(30),
    );
  });
});
