import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cycles,
  type Edge,
  importGraph,
  importsOf,
  MANIFEST,
  ROOT,
  VOCABULARY,
  violations,
} from '../../support/import-graph.ts';

// handlers → use cases → adapters → core, with shared/ (middlewares, clients, config) importing
// nothing above it; the AWS SDK only in adapters and shared's clients. The manifest
// (lib/operations.ts) imports only core/vocabulary.ts, a leaf; core and adapters never import the
// manifest, and nothing in functions/ imports any other module of lib/. A broken direction, the SDK
// elsewhere (type-only imports included) or a cycle fails the build.

const edges = importGraph();

describe('import direction in functions/', () => {
  it('reads the real graph (every import resolves to a file)', () => {
    expect(edges.length).toBeGreaterThan(300);
    const missing = edges.filter((e) => !e.to.startsWith('pkg:') && !existsSync(join(ROOT, e.to)));
    expect(missing.map((e) => `${e.from} → ${e.spec}`)).toEqual([]);
  });

  it('points one way: handlers → use cases → adapters → core; shared imports nothing above it; the SDK stays in adapters and shared', () => {
    expect(violations(edges)).toEqual([]);
  });

  it('has no import cycles', () => {
    expect(cycles(edges)).toEqual([]);
  });

  it('walks the manifest too: its one import is the vocabulary, which imports nothing', () => {
    expect(edges.filter((e) => e.from === MANIFEST).map((e) => e.to)).toEqual([VOCABULARY]);
    expect(edges.filter((e) => e.from === VOCABULARY)).toEqual([]);
  });

  it('refuses core or adapters reading the manifest, functions/ reading the rest of lib/, and an import in the manifest or the vocabulary', () => {
    const edge = (from: string, spec: string): Edge =>
      importsOf(from, `import { x } from '${spec}';`)[0] as Edge;
    const bad = [
      edge('functions/core/accounts.ts', '#lib/operations'),
      edge('functions/adapters/queues.ts', '#lib/operations'),
      edge('functions/handlers/x.ts', '#lib/herald-stack'),
      edge(MANIFEST, '../functions/core/messages.ts'),
      edge(MANIFEST, 'aws-cdk-lib'),
      edge(VOCABULARY, './errors.ts'),
      edge(VOCABULARY, 'zod'),
    ];
    expect(violations(bad)).toEqual([
      'functions/core/accounts.ts → #lib/operations (core may not import manifest)',
      'functions/adapters/queues.ts → #lib/operations (adapters may not import manifest)',
      'functions/handlers/x.ts → #lib/herald-stack (outside functions/ and the manifest)',
      `${MANIFEST} → ../functions/core/messages.ts (the manifest imports only ${VOCABULARY})`,
      `${MANIFEST} → aws-cdk-lib (the manifest imports only ${VOCABULARY})`,
      `${VOCABULARY} → ./errors.ts (the vocabulary is a leaf: it imports nothing)`,
      `${VOCABULARY} → zod (the vocabulary is a leaf: it imports nothing)`,
    ]);
    // The circle this rule broke: core → manifest → core.
    expect(
      cycles([
        edge('functions/core/accounts.ts', '#lib/operations'),
        edge(MANIFEST, '../functions/core/accounts.ts'),
      ]),
    ).toEqual([['functions/core/accounts.ts', MANIFEST]]);
    // What the runtime reads of the manifest (routes, pages, the MCP spec) stays allowed above adapters.
    expect(
      violations([
        edge('functions/shared/http.ts', '#lib/operations'),
        edge('functions/usecases/mcp.ts', '#lib/operations'),
        edge('functions/handlers/route-not-found.ts', '#lib/operations'),
        edge(MANIFEST, '../functions/core/vocabulary.ts'),
      ]),
    ).toEqual([]);
  });

  it('catches an upward import, a handler reaching an adapter or the SDK, and a cycle', () => {
    const bad: Edge[] = [
      {
        from: 'functions/shared/auth.ts',
        to: 'functions/adapters/orgs.ts',
        spec: '#adapters/orgs',
        typeOnly: false,
      },
      {
        from: 'functions/handlers/x.ts',
        to: 'functions/adapters/posts.ts',
        spec: '#adapters/posts',
        typeOnly: false,
      },
      {
        from: 'functions/handlers/x.ts',
        to: 'pkg:@aws-sdk/client-dynamodb',
        spec: '@aws-sdk/client-dynamodb',
        typeOnly: false,
      },
      { from: 'functions/core/a.ts', to: 'functions/core/b.ts', spec: './b.ts', typeOnly: false },
      { from: 'functions/core/b.ts', to: 'functions/core/a.ts', spec: './a.ts', typeOnly: true },
    ];
    expect(violations(bad)).toHaveLength(3);
    expect(cycles(bad)).toEqual([['functions/core/a.ts', 'functions/core/b.ts']]);
  });

  it('refuses the AWS SDK in use cases, handlers and core, type-only imports included', () => {
    const source = [
      "import { SendMessageCommand } from '@aws-sdk/client-sqs';",
      "import type {\n  AttributeValue,\n} from '@aws-sdk/client-dynamodb';",
      "type Output = import('@smithy/types').MetadataBearer;",
      "import { ulid } from 'ulid';",
      "import { keys } from '#adapters/keys';",
    ].join('\n');
    const edges = importsOf('functions/usecases/x.ts', source);
    expect(edges.filter((e) => e.typeOnly).map((e) => e.spec)).toEqual(['@aws-sdk/client-dynamodb']);
    expect(violations(edges)).toEqual([
      'functions/usecases/x.ts → @aws-sdk/client-sqs (use cases reach AWS through adapters)',
      'functions/usecases/x.ts → @aws-sdk/client-dynamodb (use cases reach AWS through adapters)',
      'functions/usecases/x.ts → @smithy/types (use cases reach AWS through adapters)',
    ]);
    expect(violations(importsOf('functions/usecases/support/x.ts', source))).toHaveLength(3);
    expect(violations(importsOf('functions/handlers/x.ts', source))).toHaveLength(4); // and the adapter
    expect(violations(importsOf('functions/core/x.ts', source))).toHaveLength(4);
    expect(violations(importsOf('functions/adapters/x.ts', source))).toEqual([]);
    expect(violations(importsOf('functions/shared/clients.ts', source.replace(/.*#adapters.*/, '')))).toEqual(
      [],
    );
  });
});
