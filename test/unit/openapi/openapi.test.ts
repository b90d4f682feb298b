import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { contracts } from '#core/contracts';
import { apiOperations, operations } from '#lib/operations';
import { heraldRelease } from '#lib/version';
import { DOCS_PATH } from '#shared/config';
import { buildOpenApi } from '#usecases/openapi';

const root = resolve(import.meta.dirname, '../../..');
// As bin/openapi.ts writes it: problem types relative to the deployment that serves them.
const doc = buildOpenApi({ docsUrl: DOCS_PATH, version: heraldRelease() }) as {
  paths: Record<
    string,
    Record<
      string,
      { operationId: string; security: Array<Record<string, string[]>>; responses: Record<string, unknown> }
    >
  >;
};

describe('OpenAPI document', () => {
  it('lints clean with Redocly (recommended rules)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'openapi-'));
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    // Throws (failing the test) on any lint error; warnings are errors too via --max-problems 0.
    const out = execFileSync(
      join(root, 'node_modules/.bin/redocly'),
      ['lint', file, '--config', join(root, 'redocly.yaml'), '--format', 'stylish'],
      {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    expect(out).not.toMatch(/warning|error/i);
  }, 60_000);

  it('describes every manifest operation with its operationId and scope', () => {
    for (const op of operations) {
      const described = doc.paths[op.path]?.[op.method.toLowerCase()];
      expect(described?.operationId).toBe(op.id);
      if (op.scope)
        expect(described?.security).toEqual([{ bearerAuth: [op.scope] }, { apiKeyHeader: [op.scope] }]);
    }
  });

  it('documents 401, 429 and 500 problems on every API-key operation', () => {
    for (const op of apiOperations) {
      const responses = doc.paths[op.path]?.[op.method.toLowerCase()]?.responses ?? {};
      expect(Object.keys(responses)).toEqual(expect.arrayContaining(['401', '429', '500']));
      expect(Object.keys(responses)).toContain(
        String(contracts[op.id as keyof typeof contracts].success.status),
      );
    }
  });

  it("points every problem example's type at the deployment's own problem pages", () => {
    const types = [...JSON.stringify(doc).matchAll(/"type":"([^"]*\/problems\/[^"]*)"/g)].map((m) => m[1]);
    expect(types.length).toBeGreaterThan(50);
    for (const type of types) expect(type).toMatch(/^\/docs\/api\/problems\/[a-z-]+$/);
  });

  it("says package.json's release as info.version, and no commit (the file stays the same across commits)", () => {
    const info = (doc as unknown as { info: Record<string, unknown> }).info;
    expect(info.version).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
    expect(info).not.toHaveProperty('x-herald-commit');
  });

  it('the committed docs/openapi.json is the generated one (run `npm run openapi`)', () => {
    const committed = JSON.parse(readFileSync(join(root, 'docs/openapi.json'), 'utf8'));
    expect(committed).toEqual(doc);
  });
});
