import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OperationId } from '#core/contracts';
import { operations } from '#lib/operations';
import { anyJson, NASTY_PIECES, nastyString, runs, validRequest } from './inputs.ts';
import {
  documented,
  expectDocumented,
  expectRefused,
  jsonAuth,
  loadHandlers,
  printObservations,
  send,
} from './world.ts';

// The fuzz world itself: every operation is covered and documented, each baseline request is what
// the other properties assume (accepted, or refused only for the reason noted), and the public
// OpenAPI operation answers whatever it is sent.

// Every name resolves into private space: no network, and any webhook host name is refused.
vi.mock('node:dns', async (importOriginal) => (await import('./private-dns.ts')).privateDns(importOriginal));

beforeAll(loadHandlers, 60_000);
afterAll(() => printObservations('world'));

describe('the fuzz world', () => {
  it('loads every operation of the manifest and reads its documented responses', () => {
    expect(operations.length).toBeGreaterThan(0);
    for (const op of operations) {
      const doc = documented.get(op.id);
      expect(doc?.success, op.id).toBeGreaterThanOrEqual(200);
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
      expect(statuses.map(Number).sort(), op.id).toEqual([doc.success, ...doc.problems.keys()].sort());
    }
  });

  it.each(operations.map((op) => op.id as OperationId))(
    'answers the baseline request of %s as documented',
    async (op) => {
      const o = await send(validRequest(op));
      const status = expectDocumented(o);
      // completeMediaUpload's asset was never uploaded (409); every other baseline is accepted.
      expect(status, o.res?.body).toBe(op === 'completeMediaUpload' ? 409 : documented.get(op)?.success);
    },
  );
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
