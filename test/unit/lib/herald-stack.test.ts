import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { Schedule } from 'aws-cdk-lib/aws-events';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES } from '#core/messages';
import { LEASE_SECONDS } from '#core/timing';
import { consoleAssetsVersion } from '#lib/console-assets';
import { REPO_ROOT } from '#lib/herald-function';
import { addHeraldStacks, type HeraldStacks } from '#lib/herald-stack';
import { addNagChecks, applyNag } from '#lib/nag';
import {
  apiOperations,
  CONSOLE_ASSET_FILES,
  CONSOLE_ASSETS_BUNDLE_DIR,
  consolePages,
  fallback,
  mcp,
  operations,
  queues as queueSpecs,
  stateMachines,
  workers,
} from '#lib/operations';
import { isProtectedStage, parseStage, stageConfigFrom } from '#lib/stage';
import { heraldCommit, heraldRelease } from '#lib/version';
import { mergedTemplate } from './stacks-view.ts';

// One bundled synthesis of the prod stage, with the exact nag wiring of bin/app.ts, carries most
// assertions. The dev-stage syntheses skip bundling (context aws:cdk:bundling-stacks = []): they only
// check stage-dependent settings and that an unacknowledged nag finding fails synthesis.

const ENV = { account: '111111111111', region: 'eu-west-1' };
const manifestIds = [
  ...operations.map((op) => op.id),
  ...consolePages.map((page) => page.id),
  fallback.id,
  mcp.id,
  ...workers.map((w) => w.id),
];
const consoleRoutes = consolePages.flatMap((page) => page.routes.map((route) => ({ ...route, page })));

interface Synth {
  stack: HeraldStacks;
  template: Template;
  assembly: CloudAssembly;
}

let prod: Synth;
let dev: { stack: HeraldStacks; template: Template };

beforeAll(() => {
  const app = new App({
    // Asset metadata (as the CDK CLI sets it) tells the bundle tests where each function's code is.
    context: {
      stage: 'prod',
      // A protected stage's settings, as cdk.json commits them (lib/stage.ts refuses it without).
      stages: { prod: { alarmEmail: 'ops@example.com', publicUrl: 'https://herald.example.com' } },
      'aws:cdk:enable-asset-metadata': true,
    },
  });
  const stacks = addHeraldStacks(app, ENV);
  applyNag(app, stacks);
  const assembly = app.synth(); // throws on any unacknowledged nag finding
  prod = { stack: stacks, template: mergedTemplate(stacks.stacks), assembly };

  const devApp = new App({ context: { stage: 'dev', 'aws:cdk:bundling-stacks': [] } });
  const devStacks = addHeraldStacks(devApp, ENV);
  dev = { stack: devStacks, template: mergedTemplate(devStacks.stacks) };
}, 300_000);

interface CfnResourceJson {
  Type: string;
  Properties: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
}
type Resources = Record<string, CfnResourceJson>;
const resources = (template: Template): Resources => template.toJSON().Resources as Resources;

/** A construct's logical id, in whichever stack holds it (ids are unique across Herald's stacks). */
function logicalId(construct: { node: { defaultChild?: unknown } }): string {
  const child = construct.node.defaultChild as CfnElement;
  return Stack.of(child).getLogicalId(child);
}

function fnOf(id: string) {
  const fn = prod.stack.functions.get(id);
  if (!fn) throw new Error(`no function ${id}`);
  return fn;
}

function fnLogicalId(id: string): string {
  return logicalId(fnOf(id));
}

interface FunctionResource extends CfnResourceJson {
  Properties: Record<string, unknown> & { Environment: { Variables: Record<string, unknown> } };
}

/** The synthesized AWS::Lambda::Function of a manifest id. */
function fnResource(id: string): FunctionResource {
  const fn = resources(prod.template)[fnLogicalId(id)];
  if (fn?.Type !== 'AWS::Lambda::Function') throw new Error(`no Lambda function for ${id}`);
  return fn as FunctionResource;
}

const envOf = (id: string): Record<string, unknown> => fnResource(id).Properties.Environment.Variables;

/** The modules a function's bundle carries, from its source map. */
function sourcesOf(id: string): string[] {
  const dir = fnResource(id).Metadata?.['aws:asset:path'];
  const map = readFileSync(path.join(prod.assembly.directory, String(dir), 'index.mjs.map'), 'utf8');
  return (JSON.parse(map) as { sources: string[] }).sources;
}

/** Every IAM statement attached to a function's role. */
function statementsOf(id: string): { Action: string | string[]; Resource: unknown }[] {
  const role = fnOf(id).role;
  if (!role) throw new Error(`${id} has no role`);
  const roleId = logicalId(role);
  const policies = prod.template.findResources('AWS::IAM::Policy', {
    Properties: { Roles: Match.arrayWith([{ Ref: roleId }]) },
  });
  return Object.values(policies).flatMap((p) => p.Properties.PolicyDocument.Statement);
}

function actionsOf(id: string): string[] {
  return statementsOf(id).flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
}

/** Our functions, leaving out any CDK-internal singleton (custom resources, log retention). */
function heraldFunctionIds(template: Template): string[] {
  const internal = /^(LogRetention|CustomResourceProvider|AWS679f53fac002430cb0da5b7982bd2287|Custom)/;
  return Object.keys(template.findResources('AWS::Lambda::Function')).filter((id) => !internal.test(id));
}

describe('stage configuration', () => {
  it('defaults to dev and accepts short lowercase names', () => {
    expect(parseStage(undefined)).toBe('dev');
    expect(parseStage('prod')).toBe('prod');
    expect(parseStage('eu-staging-2')).toBe('eu-staging-2');
  });

  it('rejects stage names that cannot be part of a stack name', () => {
    for (const bad of ['Prod', 'my_stage', '-x', 'a-very-long-stage-name', 42]) {
      expect(() => parseStage(bad)).toThrow(/invalid stage/);
    }
  });

  it('protects data everywhere but dev', () => {
    expect(isProtectedStage('dev')).toBe(false);
    expect(isProtectedStage('prod')).toBe(true);
    expect(isProtectedStage('staging')).toBe(true);
  });

  it('validates docsUrl and alarmEmail', () => {
    expect(stageConfigFrom({}).docsUrl).toBeUndefined();
    expect(stageConfigFrom({ docsUrl: 'https://docs.example.com/' }).docsUrl).toBe(
      'https://docs.example.com',
    );
    expect(() => stageConfigFrom({ docsUrl: 'http://docs.example.com' })).toThrow(/docsUrl/);
    expect(() => stageConfigFrom({ alarmEmail: 'not-an-email' })).toThrow(/alarmEmail/);
  });

  it('validates notifySender and mcpAllowedOrigins', () => {
    expect(stageConfigFrom({}).notifySender).toBeUndefined();
    expect(stageConfigFrom({ notifySender: 'ops@example.com' }).notifySender).toBe('ops@example.com');
    expect(() => stageConfigFrom({ notifySender: 'nope' })).toThrow(/notifySender/);
    expect(stageConfigFrom({}).mcpAllowedOrigins).toEqual([]);
    expect(
      stageConfigFrom({ mcpAllowedOrigins: 'https://a.example, https://b.example:8443' }).mcpAllowedOrigins,
    ).toEqual(['https://a.example', 'https://b.example:8443']);
    expect(() => stageConfigFrom({ mcpAllowedOrigins: 'https://a.example/path' })).toThrow(
      /mcpAllowedOrigins/,
    );
  });
});

describe('functions', () => {
  it('creates one Lambda per manifest operation and console page, the fallback, the MCP server and each worker, and no other', () => {
    const ids = heraldFunctionIds(prod.template);
    expect(ids).toHaveLength(operations.length + consolePages.length + 2 + workers.length);
    expect(ids.sort()).toEqual(manifestIds.map(fnLogicalId).sort());
    prod.template.resourceCountIs('AWS::Lambda::Function', manifestIds.length);
  });

  it.each(manifestIds)(
    '%s runs Node.js 22 on arm64 untraced (the default), JSON logs and source maps',
    (id) => {
      const op = operations.find((o) => o.id === id);
      const worker = workers.find((w) => w.id === id);
      expect(fnResource(id).Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        // The probe function runs on x86_64 (lib/constructs/media.ts PROBE_ARCHITECTURE).
        Architectures: [(op ?? worker)?.access.ffmpeg ? 'x86_64' : 'arm64'],
        MemorySize: op?.memoryMb ?? worker?.memoryMb ?? 1024,
        Timeout:
          workers.find((w) => w.id === id)?.timeoutSeconds ??
          op?.timeoutSeconds ??
          consolePages.find((p) => p.id === id)?.timeoutSeconds ??
          (id === mcp.id ? mcp.timeoutSeconds : 10),
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: logicalId(fnOf(id).logGroup) } },
        Environment: {
          Variables: {
            NODE_OPTIONS: '--enable-source-maps',
            POWERTOOLS_SERVICE_NAME: 'herald',
          },
        },
      });
      expect(fnResource(id).Properties.TracingConfig).toBeUndefined();
    },
  );

  it('gives every function its own log group, retained for a month', () => {
    prod.template.resourcePropertiesCountIs(
      'AWS::Logs::LogGroup',
      { RetentionInDays: 30 },
      manifestIds.length + 1 + stateMachines.length, // + API access logs + state machine logs
    );
  });

  it('uses no AWS managed policy: each role may log only to its own log group', () => {
    for (const role of Object.values(prod.template.findResources('AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
    for (const id of manifestIds) {
      expect(statementsOf(id)).toContainEqual(
        expect.objectContaining({
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [logicalId(fnOf(id).logGroup), 'Arn'] },
        }),
      );
    }
  });

  it('passes the cursor secret as a dynamic reference only to functions that sign cursors', () => {
    const withCursor = [...operations, ...consolePages].filter((f) => f.access.cursor).map((f) => f.id);
    expect(withCursor).toContain('listPosts');
    expect(withCursor).toContain('consoleAudit');
    for (const id of manifestIds) {
      const vars = envOf(id);
      if (withCursor.includes(id)) {
        expect(JSON.stringify(vars)).toContain('{{resolve:secretsmanager:');
      } else {
        expect(vars).not.toHaveProperty('HERALD_CURSOR_SECRET');
      }
    }
    prod.template.hasResourceProperties('AWS::SecretsManager::Secret', {
      GenerateSecretString: { PasswordLength: 48, ExcludePunctuation: true },
    });
  });
});

describe('HTTP API', () => {
  it("routes every operation to its own function, each console route to its page's, and $default to the fallback, with payload format 2.0", () => {
    prod.template.resourceCountIs('AWS::ApiGatewayV2::Route', operations.length + consoleRoutes.length + 2);
    const all = resources(prod.template);
    const routes: [string, string][] = [
      ...operations.map((op): [string, string] => [`${op.method} ${op.path}`, op.id]),
      ...consoleRoutes.map((r): [string, string] => [`${r.method} ${r.path}`, r.page.id]),
      [`ANY ${mcp.path}`, mcp.id],
      ['$default', fallback.id],
    ];
    for (const [routeKey, id] of routes) {
      const [route] = Object.values(
        prod.template.findResources('AWS::ApiGatewayV2::Route', { Properties: { RouteKey: routeKey } }),
      );
      expect(route, routeKey).toBeDefined();
      // Target: { 'Fn::Join': ['', ['integrations/', { Ref: <integration> }]] }
      const integrationId: string = route?.Properties.Target['Fn::Join'][1][1].Ref;
      expect(all[integrationId]?.Properties).toMatchObject({
        IntegrationType: 'AWS_PROXY',
        PayloadFormatVersion: '2.0',
        IntegrationUri: { 'Fn::GetAtt': [fnLogicalId(id), 'Arn'] },
      });
    }
  });

  it('throttles and access-logs the default stage as JSON', () => {
    prod.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingBurstLimit: 200, ThrottlingRateLimit: 100 },
      AccessLogSettings: {
        DestinationArn: Match.anyValue(),
        Format: Match.serializedJson(
          Match.objectLike({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            routeKey: '$context.routeKey',
            status: '$context.status',
            latency: '$context.responseLatency',
          }),
        ),
      },
    });
  });
});

describe('table', () => {
  it('is the single table of lib/table-schema.ts, encrypted with a rotating customer managed key', () => {
    const keyId = logicalId(prod.stack.data.tableKey);
    prod.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    prod.template.hasResourceProperties('AWS::DynamoDB::Table', {
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      GlobalSecondaryIndexes: [
        {
          IndexName: 'gsi1',
          KeySchema: [
            { AttributeName: 'gsi1pk', KeyType: 'HASH' },
            { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        },
        {
          IndexName: 'gsi2',
          KeySchema: [
            { AttributeName: 'gsi2pk', KeyType: 'HASH' },
            { AttributeName: 'gsi2sk', KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'KEYS_ONLY' },
        },
      ],
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: {
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
      },
      TimeToLiveSpecification: { AttributeName: 'ttl', Enabled: true },
      StreamSpecification: { StreamViewType: 'NEW_AND_OLD_IMAGES' },
    });
  });

  it('is protected and retained in prod', () => {
    prod.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({ DeletionProtectionEnabled: true }),
    });
  });

  it('is unprotected and destroyed with the stack in dev', () => {
    dev.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Delete',
      Properties: Match.objectLike({ DeletionProtectionEnabled: false }),
    });
  });
});

describe('queues', () => {
  it.each(queueSpecs)('redrives $name messages to its DLQ after $maxReceiveCount receives', (spec) => {
    const pair = prod.stack.queues.get(spec.name);
    if (!pair) throw new Error(`no ${spec.name} queue`);
    const dlqId = logicalId(pair.dlq);
    expect(resources(prod.template)[logicalId(pair.queue)]?.Properties).toMatchObject({
      VisibilityTimeout: spec.visibilityTimeoutSeconds,
      RedrivePolicy: {
        deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
        maxReceiveCount: spec.maxReceiveCount,
      },
    });
    expect(resources(prod.template)[dlqId]?.Properties).toMatchObject({ MessageRetentionPeriod: 1_209_600 });
  });

  it.each(queueSpecs)(
    'states the $name queue and its DLQ size limit (larger messages go by reference)',
    (spec) => {
      const pair = prod.stack.queues.get(spec.name);
      if (!pair) throw new Error(`no ${spec.name} queue`);
      for (const q of [pair.queue, pair.dlq])
        expect(resources(prod.template)[logicalId(q)]?.Properties).toMatchObject({
          MaximumMessageSize: MAX_MESSAGE_BYTES,
        });
    },
  );

  it('names the bucket of queue bodies sent by reference to the functions granted them, and to no other', () => {
    const uploadsRef = { Ref: logicalId(prod.stack.data.media.uploadBucket) };
    for (const id of manifestIds) {
      const uses = [...workers, ...operations].find((f) => f.id === id)?.access.queueBodies;
      if (uses?.length) expect(envOf(id).HERALD_QUEUE_BODY_BUCKET, id).toEqual(uploadsRef);
      else expect(envOf(id).HERALD_QUEUE_BODY_BUCKET, id).toBeUndefined();
    }
    expect(
      workers
        .filter((w) => w.access.queueBodies?.length)
        .map((w) => w.id)
        .sort(),
    ).toEqual(['streamRelay', 'webhookDelivery', 'webhookFanout']);
  });

  it('gives every queue and consumed DLQ a visibility of at least 6 × its consumer timeout, and over a lease', () => {
    let checked = 0;
    for (const w of workers) {
      const trigger = w.trigger;
      if (trigger.kind !== 'queue') continue;
      const pair = prod.stack.queues.get(trigger.queue);
      if (!pair) throw new Error(`no ${trigger.queue} queue`);
      const visibility = resources(prod.template)[logicalId(trigger.dlq ? pair.dlq : pair.queue)]?.Properties
        .VisibilityTimeout as number;
      expect(visibility, w.id).toBeGreaterThanOrEqual(6 * w.timeoutSeconds);
      expect(visibility, w.id).toBeGreaterThan(LEASE_SECONDS);
      checked++;
    }
    expect(checked).toBe(workers.filter((w) => w.trigger.kind === 'queue').length);
  });

  const queueConsumers = workers.flatMap((w) =>
    w.trigger.kind === 'queue' ? [{ id: w.id, ...w.trigger }] : [],
  );

  it.each(queueConsumers)(
    '$id consumes its queue (dlq: $dlq) in batches of $batchSize, at most $concurrency at once',
    (consumer) => {
      const pair = prod.stack.queues.get(consumer.queue);
      if (!pair) throw new Error(`no ${consumer.queue} queue`);
      const mappings = prod.template.findResources('AWS::Lambda::EventSourceMapping', {
        Properties: { FunctionName: { Ref: fnLogicalId(consumer.id) } },
      });
      expect(Object.values(mappings).map((m) => m.Properties)).toEqual([
        {
          FunctionName: { Ref: fnLogicalId(consumer.id) },
          EventSourceArn: {
            'Fn::GetAtt': [logicalId(consumer.dlq ? pair.dlq : pair.queue), 'Arn'],
          },
          BatchSize: consumer.batchSize,
          ScalingConfig: { MaximumConcurrency: consumer.concurrency },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
        },
      ]);
    },
  );

  it('encrypts every queue and refuses non-TLS access', () => {
    const queues = prod.template.findResources('AWS::SQS::Queue');
    expect(Object.keys(queues)).toHaveLength(queueSpecs.length * 2 + 1); // each with its DLQ, + the stream relay's
    for (const q of Object.values(queues)) expect(q.Properties.SqsManagedSseEnabled).toBe(true);
    prod.template.resourcePropertiesCountIs(
      'AWS::SQS::QueuePolicy',
      {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      },
      queueSpecs.length * 2 + 1,
    );
  });
});

describe('least privilege', () => {
  const writes = [
    'dynamodb:PutItem',
    'dynamodb:UpdateItem',
    'dynamodb:DeleteItem',
    'dynamodb:BatchWriteItem',
  ];

  it('a read-only operation (listPosts) reads the table, writes only the limiter counters, sends nothing', () => {
    const actions = actionsOf('listPosts');
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:Query', 'dynamodb:GetItem']));
    for (const a of writes.filter((w) => w !== 'dynamodb:UpdateItem')) expect(actions).not.toContain(a);
    expect(actions.filter((a) => a.startsWith('sqs:'))).toEqual([]);
    // UpdateItem only on the counters' key prefixes and attributes.
    const updates = statementsOf('listPosts').filter((st) =>
      ([] as string[]).concat(st.Action).includes('dynamodb:UpdateItem'),
    );
    expect(updates).toHaveLength(1);
    expect((updates[0] as { Condition?: unknown }).Condition).toEqual({
      'ForAllValues:StringLike': {
        'dynamodb:LeadingKeys': ['ORG#*'],
        'dynamodb:Attributes': ['pk', 'sk', 'api_requests', 'key_*'],
      },
      StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_NEW'] },
    });
  });

  it.each(['getPost', 'listChannels', 'getUsage'])(
    '%s (read-only, API key) may update the limiter counters',
    (id) => {
      expect(actionsOf(id)).toContain('dynamodb:UpdateItem');
      expect(actionsOf(id)).not.toContain('dynamodb:PutItem');
    },
  );

  it('a read-write operation (createPost) can write the table', () => {
    expect(actionsOf('createPost')).toEqual(
      expect.arrayContaining(['dynamodb:PutItem', 'dynamodb:UpdateItem']),
    );
  });

  it('every function carries the release and commit it runs (HERALD_VERSION, HERALD_COMMIT)', () => {
    for (const id of manifestIds)
      expect(envOf(id), id).toMatchObject({ HERALD_VERSION: heraldRelease(), HERALD_COMMIT: heraldCommit() });
    expect(heraldRelease()).toBe(
      JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version,
    );
    // A build from git names its commit (this test runs in the repository).
    expect(heraldCommit()).toMatch(/^[0-9a-f]{40}$/);
  });

  it('getHealth only reads the table (the sweep cursor, the data model mark)', () => {
    const dynamo = actionsOf('getHealth').filter((a) => a.startsWith('dynamodb:'));
    expect(dynamo).toContain('dynamodb:GetItem');
    for (const write of ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems'])
      expect(dynamo).not.toContain(`dynamodb:${write}`);
    expect(envOf('getHealth')).toHaveProperty('TABLE_NAME');
  });

  it("the docs function's bundle carries both guides (docs/api and docs/operator)", () => {
    const dir = path.join(
      prod.assembly.directory,
      String(fnResource('getOperatorGuidePage').Metadata?.['aws:asset:path']),
    );
    for (const [bundled, source] of [
      ['api-guide', 'docs/api'],
      ['operator-guide', 'docs/operator'],
    ] as const)
      for (const file of readdirSync(path.join(REPO_ROOT, source)).filter((f) => f.endsWith('.md')))
        expect(existsSync(path.join(dir, bundled, file)), `${bundled}/${file}`).toBe(true);
  });

  it('getOpenApi has no DynamoDB permission and no TABLE_NAME', () => {
    expect(actionsOf('getOpenApi').filter((a) => a.startsWith('dynamodb:') || a.startsWith('kms:'))).toEqual(
      [],
    );
    expect(envOf('getOpenApi')).not.toHaveProperty('TABLE_NAME');
  });

  it('the $default fallback reads the table (the console 404 names the signed-in person) and writes nothing', () => {
    const dynamo = actionsOf(fallback.id).filter((a) => a.startsWith('dynamodb:'));
    expect(dynamo).toContain('dynamodb:GetItem');
    expect(dynamo).toContain('dynamodb:BatchGetItem');
    for (const write of ['PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems'])
      expect(dynamo).not.toContain(`dynamodb:${write}`);
  });

  it.each(queueSpecs)('only the workers the manifest names may send to the $name queue', (spec) => {
    const pair = prod.stack.queues.get(spec.name);
    if (!pair) throw new Error(`no ${spec.name} queue`);
    const queueArn = { 'Fn::GetAtt': [logicalId(pair.queue), 'Arn'] };
    const senders = manifestIds.filter((id) =>
      statementsOf(id).some(
        (s) =>
          JSON.stringify(s.Resource) === JSON.stringify(queueArn) &&
          [s.Action].flat().includes('sqs:SendMessage'),
      ),
    );
    expect(senders.sort()).toEqual(
      [...workers, ...operations]
        .filter((w) => w.access.sends?.includes(spec.name))
        .map((w) => w.id)
        .sort(),
    );
    for (const id of senders) expect(envOf(id)[spec.env]).toEqual({ Ref: logicalId(pair.queue) });
  });

  it('no API operation may send to any queue but importMedia, to the mediaImport queue only', () => {
    for (const op of operations) {
      const sqs = actionsOf(op.id).filter((a) => a.startsWith('sqs:'));
      if (op.id !== 'importMedia') expect(sqs, op.id).toEqual([]);
      else expect(op.access.sends).toEqual(['mediaImport']);
    }
  });
});

describe('stream relay', () => {
  it('reads the table stream in bisecting batches with partial failures, filtered to posts, channels, webhook endpoints and inbox items', () => {
    const queueConsumers = workers.filter((w) => w.trigger.kind === 'queue').length;
    prod.template.resourceCountIs('AWS::Lambda::EventSourceMapping', 1 + queueConsumers);
    prod.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fnLogicalId('streamRelay') },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(prod.stack.data.table), 'StreamArn'] },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      BisectBatchOnFunctionError: true,
      MaximumRetryAttempts: 10,
      MaximumRecordAgeInSeconds: 86_400,
      // A windowed batch names its shard: the counters' exactly-once marks key on it.
      TumblingWindowInSeconds: 300,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: {
        OnFailure: {
          Destination: { 'Fn::GetAtt': [logicalId(prod.stack.data.streamRelayDlq), 'Arn'] },
        },
      },
      FilterCriteria: {
        Filters: [
          { Pattern: JSON.stringify({ dynamodb: { NewImage: { entity: { S: ['post'] } } } }) },
          { Pattern: JSON.stringify({ dynamodb: { NewImage: { entity: { S: ['channel'] } } } }) },
          { Pattern: JSON.stringify({ dynamodb: { NewImage: { entity: { S: ['webhook_endpoint'] } } } }) },
          { Pattern: JSON.stringify({ dynamodb: { NewImage: { entity: { S: ['inbox_item'] } } } }) },
        ],
      },
    });
  });
});

describe('stream relay (manifest)', () => {
  it('maps the stream with exactly the manifest trigger: entities, batch size, retries, maximum age', () => {
    for (const w of workers) {
      if (w.trigger.kind !== 'stream') continue;
      const { entities, batchSize, retryAttempts, maxRecordAgeSeconds } = w.trigger;
      prod.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: fnLogicalId(w.id) },
        BatchSize: batchSize,
        MaximumRetryAttempts: retryAttempts,
        MaximumRecordAgeInSeconds: maxRecordAgeSeconds,
        FilterCriteria: {
          Filters: entities.map((entity) => ({
            Pattern: JSON.stringify({ dynamodb: { NewImage: { entity: { S: [entity] } } } }),
          })),
        },
      });
    }
  });
});

describe('webhooks', () => {
  const keyArn = () => ({ 'Fn::GetAtt': [logicalId(prod.stack.data.webhookSecretsKey), 'Arn'] });
  const kmsUsesOfSecretsKey = (id: string) =>
    statementsOf(id)
      .filter((s) => JSON.stringify(s.Resource) === JSON.stringify(keyArn()))
      .flatMap((s) => [s.Action].flat())
      .sort();

  it('a rotating customer managed key seals the signing secrets', () => {
    prod.template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      Description: Match.stringLikeRegexp('webhook signing secrets'),
    });
  });

  it('only create/rotate may encrypt and only delivery/test may decrypt with it', () => {
    const users = manifestIds.filter((id) => kmsUsesOfSecretsKey(id).length > 0).sort();
    expect(users).toEqual(
      [
        'createWebhookEndpoint',
        'rotateWebhookSecret',
        'testWebhookEndpoint',
        'webhookDelivery',
        // The console's webhooks page runs the same create, rotate and test use cases.
        'consoleWebhooks',
      ].sort(),
    );
    expect(kmsUsesOfSecretsKey('consoleWebhooks')).toEqual(['kms:Decrypt', 'kms:Encrypt']);
    expect(kmsUsesOfSecretsKey('createWebhookEndpoint')).toEqual(['kms:Encrypt']);
    expect(kmsUsesOfSecretsKey('rotateWebhookSecret')).toEqual(['kms:Encrypt']);
    expect(kmsUsesOfSecretsKey('webhookDelivery')).toEqual(['kms:Decrypt']);
    expect(kmsUsesOfSecretsKey('testWebhookEndpoint')).toEqual(['kms:Decrypt']);
    for (const id of users) expect(envOf(id).WEBHOOK_SECRETS_KEY_ID).toEqual(keyArn());
    expect(envOf('listWebhookEndpoints')).not.toHaveProperty('WEBHOOK_SECRETS_KEY_ID');
  });

  it('gates every webhook operation behind the webhooks feature', () => {
    const webhookOps = operations.filter((op) => op.path.startsWith('/v1/webhook-endpoints'));
    expect(webhookOps).toHaveLength(7);
    for (const op of webhookOps) {
      expect(op.feature).toBe('webhooks');
      expect(op.scope).toBe(op.method === 'GET' ? 'webhooks:read' : 'webhooks:write');
    }
  });

  it('runs the failure ladder as a logged Standard state machine from the ASL file (untraced by default)', () => {
    const machine = prod.stack.stateMachines.get('webhookLadder');
    if (!machine) throw new Error('no ladder state machine');
    const res = resources(prod.template)[logicalId(machine)];
    expect(res?.Properties).toMatchObject({
      StateMachineType: 'STANDARD',
      LoggingConfiguration: { Level: 'ALL', IncludeExecutionData: false },
      DefinitionSubstitutions: {
        webhookLadderStepFunctionArn: { 'Fn::GetAtt': [fnLogicalId('webhookLadderStep'), 'Arn'] },
      },
    });
    const asl = JSON.parse(
      readFileSync(path.join(import.meta.dirname, '../../..', stateMachines[0]?.definition ?? ''), 'utf8'),
    );
    expect(res?.Properties).toHaveProperty('DefinitionS3Location');
    expect(res?.Properties.TracingConfiguration).toEqual({ Enabled: false });
    expect(Object.keys(asl.States)).toEqual(
      expect.arrayContaining(['WaitForWarning', 'Warn', 'WaitForDisable', 'Disable']),
    );
  });

  it('lets only the stream relay start the ladder, and only the ladder invoke its step', () => {
    const machine = prod.stack.stateMachines.get('webhookLadder');
    if (!machine) throw new Error('no ladder state machine');
    const machineRef = { Ref: logicalId(machine) };
    const starters = manifestIds.filter((id) => actionsOf(id).includes('states:StartExecution'));
    expect(starters).toEqual(['streamRelay']);
    expect(envOf('streamRelay').WEBHOOK_LADDER_ARN).toEqual(machineRef);
    const machineRoleId = logicalId(machine.role as never);
    const invokers = Object.values(
      prod.template.findResources('AWS::IAM::Policy', {
        Properties: { Roles: Match.arrayWith([{ Ref: machineRoleId }]) },
      }),
    )
      .flatMap(
        (p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
      )
      .filter((s) => [s.Action].flat().includes('lambda:InvokeFunction'));
    expect(JSON.stringify(invokers)).toContain(fnLogicalId('webhookLadderStep'));
    // Besides the MCP server, only the probe's and the fit function's callers invoke a function
    // (least-privilege.test.ts: that one only).
    const others = manifestIds.filter(
      (id) => id !== mcp.id && actionsOf(id).includes('lambda:InvokeFunction'),
    );
    expect(others.sort()).toEqual([
      'completeMediaUpload',
      'deliveryWorker',
      'importMedia',
      'mediaImportWorker',
    ]);
    expect(invokers.every((s) => JSON.stringify(s.Resource).includes(fnLogicalId('webhookLadderStep')))).toBe(
      true,
    );
  });

  it('sends email only as the configured SES identity, and only from the ladder step and the invitations', () => {
    const senders = manifestIds.filter((id) => actionsOf(id).includes('ses:SendEmail'));
    // The prod synthesis has no notifySender: no function may send email.
    expect(senders).toEqual([]);
    const app = new App({
      context: { stage: 'dev', notifySender: 'alerts@example.com', 'aws:cdk:bundling-stacks': [] },
    });
    const stack = addHeraldStacks(app, ENV);
    const template = mergedTemplate(stack.stacks);
    const step = stack.functionOf('webhookLadderStep');
    const roleId = logicalId(step.role as never);
    const statements = Object.values(
      template.findResources('AWS::IAM::Policy', {
        Properties: { Roles: Match.arrayWith([{ Ref: roleId }]) },
      }),
    ).flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string; Resource: unknown }[]);
    const ses = statements.find((s) => s.Action === 'ses:SendEmail');
    expect(JSON.stringify(ses?.Resource)).toContain('identity/alerts@example.com');
    expect(JSON.stringify(ses?.Resource)).toContain('identity/example.com');
    const env = (template.toJSON().Resources[logicalId(step)] as FunctionResource).Properties.Environment
      .Variables;
    expect(env.HERALD_NOTIFY_FROM).toBe('alerts@example.com');
    const sends = (id: string) =>
      Object.values(
        template.findResources('AWS::IAM::Policy', {
          Properties: {
            Roles: Match.arrayWith([{ Ref: logicalId(stack.functionOf(id).role as never) }]),
          },
        }),
      ).some((p) => JSON.stringify(p.Properties.PolicyDocument).includes('ses:SendEmail'));
    expect(manifestIds.filter(sends).sort()).toEqual(['consoleMembers', 'webhookLadderStep']);
  });

  it('retries deliveries through the webhooks queue with its own DLQ, consumed by the delivery worker only', () => {
    const pair = prod.stack.queues.get('webhooks');
    if (!pair) throw new Error('no webhooks queue');
    prod.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fnLogicalId('webhookDelivery') },
      EventSourceArn: { 'Fn::GetAtt': [logicalId(pair.queue), 'Arn'] },
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    prod.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: fnLogicalId('webhookFanout') },
      EventSourceArn: {
        'Fn::GetAtt': [logicalId(prod.stack.queues.get('events')?.queue as never), 'Arn'],
      },
    });
  });
});

describe('MCP server', () => {
  it("may invoke exactly the API operations' functions (unqualified ARNs) and knows them by id", () => {
    const invoke = statementsOf(mcp.id).filter((st) => [st.Action].flat().includes('lambda:InvokeFunction'));
    expect(invoke).toHaveLength(1);
    expect(invoke[0]?.Resource).toEqual(
      expect.arrayContaining(apiOperations.map((op) => ({ 'Fn::GetAtt': [fnLogicalId(op.id), 'Arn'] }))),
    );
    expect(invoke[0]?.Resource).toHaveLength(apiOperations.length);
    const env = JSON.stringify(envOf(mcp.id).HERALD_OPERATION_FUNCTIONS);
    for (const op of apiOperations) expect(env).toContain(fnLogicalId(op.id));
  });

  it('reads the table (API keys, settings) but writes nothing and sends nothing', () => {
    const actions = actionsOf(mcp.id);
    expect(actions).toContain('dynamodb:GetItem');
    for (const a of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'])
      expect(actions).not.toContain(a);
    expect(actions.filter((a) => a.startsWith('sqs:') || a.startsWith('kms:Encrypt'))).toEqual([]);
  });
});

describe('alarms', () => {
  // The alarm families in detail: test/unit/lib/alarms.test.ts. Here: the ones other parts name.
  const ticketRef = () => ({ Ref: logicalId(prod.stack.data.ticketTopic) });
  const pageRef = () => ({ Ref: logicalId(prod.stack.data.alarmTopic) });

  it('alarm on what SQS reports for every DLQ (not NumberOfMessagesSent, which redrive never counts)', () => {
    const alarms = Object.values(resources(prod.template)).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    expect(alarms.some((a) => a.Properties.MetricName === 'NumberOfMessagesSent')).toBe(false);
    for (const [name, { dlq }] of prod.stack.queues) {
      prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateAgeOfOldestMessage',
        Statistic: 'Maximum',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(dlq), 'QueueName'] } }],
        AlarmActions: [ticketRef()],
        OKActions: [ticketRef()],
      });
      prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        // Consumed DLQs (delivery, mediaImport, inboxReplies) are emptied at once: what they received is the signal.
        MetricName:
          name === 'delivery' || name === 'mediaImport' || name === 'inboxReplies'
            ? 'NumberOfMessagesReceived'
            : 'ApproximateNumberOfMessagesVisible',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(dlq), 'QueueName'] } }],
      });
    }
    prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: { 'Fn::GetAtt': [logicalId(prod.stack.data.streamRelayDlq), 'QueueName'] },
        },
      ],
    });
  });

  it("pages when a platform refuses Herald's app (the metric the sync, the worker and the callback write)", () => {
    prod.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      AlarmName: 'Herald-prod-PlatformAppRefused',
      Namespace: 'Herald',
      MetricName: 'PlatformAppRefused',
      Statistic: 'Sum',
      Period: 300,
      Threshold: 1,
      AlarmActions: [pageRef()],
      OKActions: [pageRef()],
    });
  });

  it('throttles the public OAuth callback route on its own', () => {
    prod.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      RouteSettings: {
        'GET /oauth/callback/{platform}': { ThrottlingRateLimit: 10, ThrottlingBurstLimit: 20 },
      },
    });
  });

  it("throttles the console's sign-in and enrollment attempts with their routes' own settings", () => {
    const throttled = consoleRoutes.filter((r) => r.throttle);
    expect(throttled.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      'POST /console/enroll',
      'POST /console/enroll/options',
      'POST /console/sign-in',
      'POST /console/sign-in/options',
    ]);
    prod.template.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      RouteSettings: Object.fromEntries(
        throttled.map((r) => [
          `${r.method} ${r.path}`,
          { ThrottlingRateLimit: r.throttle?.rateLimit, ThrottlingBurstLimit: r.throttle?.burstLimit },
        ]),
      ),
    });
  });

  it('runs the scheduled workers on EventBridge rules at their manifest rates', () => {
    for (const w of workers) {
      if (w.trigger.kind !== 'schedule') continue;
      prod.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: Schedule.rate(Duration.seconds(w.trigger.everySeconds)).expressionString,
        Targets: Match.arrayWith([Match.objectLike({ Arn: { 'Fn::GetAtt': [fnLogicalId(w.id), 'Arn'] } })]),
      });
    }
  });

  it('alarm on the error rate of every function', () => {
    const alarms = Object.values(resources(prod.template)).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    for (const id of manifestIds) {
      const watching = alarms.filter((a) =>
        JSON.stringify(a.Properties.Metrics ?? []).includes(JSON.stringify({ Ref: fnLogicalId(id) })),
      );
      const names = watching.map((a) => a.Properties.AlarmName);
      expect(names, id).toContain(`Herald-prod-${id.charAt(0).toUpperCase()}${id.slice(1)}ErrorRate`);
    }
  });

  it('notifies through encrypted, TLS-only topics with the configured email', () => {
    prod.template.resourcePropertiesCountIs('AWS::SNS::Topic', { KmsMasterKeyId: Match.anyValue() }, 2);
    prod.template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({ Effect: 'Allow', Principal: { Service: 'cloudwatch.amazonaws.com' } }),
        ]),
      },
    });
    // Without ticketEmail both topics go to alarmEmail.
    prod.template.resourcePropertiesCountIs(
      'AWS::SNS::Subscription',
      { Protocol: 'email', Endpoint: 'ops@example.com' },
      2,
    );
    dev.template.resourceCountIs('AWS::SNS::Subscription', 0);
  });
});

describe('media', () => {
  const buckets = () => prod.template.findResources('AWS::S3::Bucket');

  it('keeps both buckets private, encrypted and TLS-only; never-completed uploads expire', () => {
    expect(Object.keys(buckets())).toHaveLength(2);
    for (const b of Object.values(buckets())) {
      expect(b.Properties).toMatchObject({
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
      });
    }
    const uploads = buckets()[logicalId(prod.stack.data.media.uploadBucket)];
    // Uploads expire after a day; queue bodies sent by reference outlive any message (15 days).
    expect(uploads?.Properties.LifecycleConfiguration).toEqual({
      Rules: [
        {
          Id: 'expire-uploads',
          Prefix: 'uploads/',
          ExpirationInDays: 1,
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          Status: 'Enabled',
        },
        { Id: 'expire-queue-bodies', Prefix: 'queue-bodies/', ExpirationInDays: 15, Status: 'Enabled' },
      ],
    });
    // Assets never expire; link cards' images stored for re-encoding (and their renditions) do, in a day.
    expect(
      buckets()[logicalId(prod.stack.data.media.mediaBucket)]?.Properties.LifecycleConfiguration,
    ).toEqual({
      Rules: [
        {
          Id: 'abort-multipart',
          AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
          Status: 'Enabled',
        },
        { Id: 'expire-card-images', Prefix: 'orgs/_cards/', ExpirationInDays: 1, Status: 'Enabled' },
      ],
    });
    prod.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('serves the media bucket only through CloudFront with origin access control', () => {
    prod.template.resourceCountIs('AWS::CloudFront::OriginAccessControl', 1);
    prod.template.hasResourceProperties('AWS::CloudFront::OriginAccessControl', {
      OriginAccessControlConfig: { OriginAccessControlOriginType: 's3', SigningBehavior: 'always' },
    });
    prod.template.hasResourceProperties('AWS::CloudFront::Distribution', {
      DistributionConfig: {
        DefaultCacheBehavior: { ViewerProtocolPolicy: 'redirect-to-https', AllowedMethods: ['GET', 'HEAD'] },
        Origins: [
          Match.objectLike({
            DomainName: {
              'Fn::GetAtt': [logicalId(prod.stack.data.media.mediaBucket), 'RegionalDomainName'],
            },
            OriginAccessControlId: Match.anyValue(),
          }),
        ],
      },
    });
    prod.template.hasResourceProperties('AWS::S3::BucketPolicy', {
      Bucket: { Ref: logicalId(prod.stack.data.media.mediaBucket) },
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Principal: { Service: 'cloudfront.amazonaws.com' }, Action: 's3:GetObject' }),
        ]),
      },
    });
  });

  it('gives the ffmpeg layer (and its binary paths) to the probe and fit functions only', () => {
    for (const id of manifestIds) {
      const props = fnResource(id).Properties;
      if (id === 'probeMedia' || id === 'fitMedia') {
        // Made in the function's own stack (a layer's ARN changes with each version).
        const layerId = logicalId(Stack.of(fnOf(id)).node.findChild('FfmpegLayer'));
        expect(props.Layers).toEqual([{ Ref: layerId }]);
        expect(props.EphemeralStorage).toEqual({ Size: 2048 });
        expect(envOf(id)).toMatchObject({
          HERALD_FFPROBE_PATH: '/opt/bin/ffprobe',
          HERALD_FFMPEG_PATH: '/opt/bin/ffmpeg',
          HERALD_PDF_RENDERER: '/opt/pdf/render.mjs',
        });
      } else {
        expect(props.Layers, id).toBeUndefined();
        expect(envOf(id).HERALD_FFPROBE_PATH, id).toBeUndefined();
      }
    }
    prod.template.hasResourceProperties('AWS::Lambda::LayerVersion', { CompatibleArchitectures: ['x86_64'] });
  });

  it('grants S3 by manifest access: presign PutObject, complete Get/Delete uploads + Put media, probe Get uploads + Put posters, worker Get, queue bodies', () => {
    const s3Actions = (id: string) =>
      actionsOf(id)
        .filter((a) => a.startsWith('s3:'))
        .sort();
    expect(s3Actions('createMediaUpload')).toEqual(['s3:PutObject']);
    expect(s3Actions('completeMediaUpload')).toEqual([
      's3:DeleteObject',
      's3:GetObject',
      's3:ListBucket',
      's3:PutObject',
    ]);
    // The probe reads uploads and writes posters (least-privilege.test.ts checks the prefixes).
    expect(s3Actions('probeMedia')).toEqual(['s3:GetObject', 's3:PutObject']);
    // The worker reads media, and puts link cards' images for the fit function (their prefix only).
    expect(s3Actions('deliveryWorker')).toEqual(['s3:GetObject', 's3:PutObject']);
    // The fit function reads media and writes renditions (least-privilege.test.ts checks the prefixes).
    expect(s3Actions('fitMedia')).toEqual([
      's3:AbortMultipartUpload',
      's3:DeleteObject',
      's3:GetObject',
      's3:ListBucket',
      's3:PutObject',
    ]);
    // Queue bodies sent by reference (the least-privilege tests check their prefix).
    expect(s3Actions('streamRelay')).toEqual(['s3:PutObject']);
    expect(s3Actions('webhookFanout')).toEqual(['s3:GetObject', 's3:PutObject']);
    expect(s3Actions('webhookDelivery')).toEqual(['s3:GetObject', 's3:PutObject']);
    // Imports write the fetched bytes (multipart), then complete like an upload, and clean up a refusal.
    const distinct = (id: string) => [...new Set(s3Actions(id))];
    for (const id of ['importMedia', 'mediaImportWorker'])
      expect(distinct(id), id).toEqual([
        's3:AbortMultipartUpload',
        's3:DeleteObject',
        's3:GetObject',
        's3:ListBucket',
        's3:PutObject',
      ]);
    for (const id of ['deleteMedia', 'mediaImportDeadLetters'])
      expect(distinct(id), id).toEqual(['s3:DeleteObject']);
    // An image's bytes, for a model that reads images (alt text).
    expect(distinct('createGeneration')).toEqual(['s3:GetObject']);
    expect(distinct('consoleSuggest')).toEqual(['s3:GetObject']);
    const granted = [
      'createGeneration',
      'consoleSuggest',
      'importMedia',
      'mediaImportWorker',
      'deleteMedia',
      'mediaImportDeadLetters',
      'createMediaUpload',
      'completeMediaUpload',
      'probeMedia',
      'fitMedia',
      'deliveryWorker',
      'streamRelay',
      'webhookFanout',
      'webhookDelivery',
    ];
    for (const id of manifestIds.filter((i) => !granted.includes(i))) expect(s3Actions(id), id).toEqual([]);
    expect(envOf('createMediaUpload')).toMatchObject({
      HERALD_UPLOAD_BUCKET: { Ref: logicalId(prod.stack.data.media.uploadBucket) },
      HERALD_MEDIA_BASE_URL: {
        'Fn::Join': [
          '',
          ['https://', { 'Fn::GetAtt': [logicalId(prod.stack.data.media.distribution), 'DomainName'] }],
        ],
      },
    });
  });

  it('keeps pdf.js and the canvas out of the probe bundle: they run from the layer, in a child process', () => {
    const sources = sourcesOf('probeMedia');
    expect(sources.filter((s) => /node_modules\/(pdfjs-dist|@napi-rs|esbuild)\//.test(s))).toEqual([]);
    expect(sources.some((s) => s.endsWith('functions/adapters/pdf-render-child.ts'))).toBe(false);
  });

  it('keeps the ffmpeg binaries out of every bundle', () => {
    for (const id of manifestIds) {
      const dir = fnResource(id).Metadata?.['aws:asset:path'];
      const code = readFileSync(path.join(prod.assembly.directory, String(dir), 'index.mjs'));
      // An ffmpeg or ffprobe binary is tens of MB; the largest bundle (the delivery worker, with the
      // SDK's S3, DynamoDB, SQS, KMS and Lambda clients and the HTML parser) is about 1.05 MiB.
      expect(code.length, id).toBeLessThan(1.5 * 1024 * 1024);
    }
  });

  // Cold-start guards (BENCHMARKS.md): what a bundle must not carry, read from its source map (sourcesOf).
  it('API functions build only their own request schemas: no resource schemas, contracts or docs', () => {
    for (const op of apiOperations) {
      const ours = sourcesOf(op.id).filter((s) => s.includes('functions/core/'));
      expect(
        ours.some((s) => s.endsWith('functions/core/requests.ts')),
        op.id,
      ).toBe(true);
      for (const heavy of ['schemas.ts', 'contracts.ts', 'operation-docs.ts', 'openapi.ts'])
        expect(
          ours.filter((s) => s.endsWith(`/core/${heavy}`)),
          `${op.id} bundles ${heavy}`,
        ).toEqual([]);
    }
  });

  it('the MCP server bundles neither ajv nor the resource schemas', () => {
    const sources = sourcesOf(mcp.id);
    expect(sources.filter((s) => /node_modules\/(ajv|ajv-formats)\//.test(s))).toEqual([]);
    expect(sources.some((s) => s.endsWith('functions/shared/not-bundled.ts'))).toBe(true);
    expect(sources.some((s) => s.includes('@modelcontextprotocol/sdk'))).toBe(true);
    expect(sources.filter((s) => s.endsWith('/core/schemas.ts') || s.endsWith('/core/contracts.ts'))).toEqual(
      [],
    );
  });
});

describe('outputs', () => {
  it('exports ApiUrl, TableName (read by the admin CLI), DeliveryQueueUrl and StackStage', () => {
    prod.template.hasOutput('TableName', { Value: { Ref: logicalId(prod.stack.data.table) } });
    prod.template.hasOutput('ApiUrl', {});
    prod.template.hasOutput('DeliveryQueueUrl', {});
    prod.template.hasOutput('StackStage', { Value: 'prod' });
    expect(prod.stack.data.stackName).toBe('Herald-prod');
  });

  it("exports ConsoleUrl: the stage URL's /console, without a public URL", () => {
    const output = dev.template.findOutputs('ConsoleUrl').ConsoleUrl;
    const json = JSON.stringify(output?.Value);
    expect(json).toContain(logicalId(dev.stack.data.api));
    // The execute-api endpoint (https://<api id>.execute-api.<region>.<suffix>) the HttpApi reports.
    expect(json).toContain('"ApiEndpoint"');
    expect(json).toMatch(/\/console"/);
  });
});

describe('console', () => {
  const withPublicUrl = () => {
    const app = new App({
      context: { stage: 'dev', publicUrl: 'https://api.example.com', 'aws:cdk:bundling-stacks': [] },
    });
    const stack = addHeraldStacks(app, ENV);
    return { stack, template: mergedTemplate(stack.stacks) };
  };

  it('exports ConsoleUrl under the public URL, and gives every console function that origin', () => {
    const { stack, template } = withPublicUrl();
    template.hasOutput('ConsoleUrl', { Value: 'https://api.example.com/console' });
    // The $default fallback too: its console 404 reads the session cookie the pages set.
    for (const id of [...consolePages.map((p) => p.id), fallback.id]) {
      const fn = template.toJSON().Resources[logicalId(stack.functionOf(id))] as FunctionResource;
      expect(fn.Properties.Environment.Variables.HERALD_CONSOLE_URL, id).toBe('https://api.example.com');
    }
    // The API's operations do not need it.
    const op = template.toJSON().Resources[logicalId(stack.functionOf('listPosts'))] as FunctionResource;
    expect(op.Properties.Environment.Variables).not.toHaveProperty('HERALD_CONSOLE_URL');
  });

  it('leaves HERALD_CONSOLE_URL unset without a public URL (each request names its host)', () => {
    for (const page of consolePages) {
      const fn = dev.template.toJSON().Resources[logicalId(dev.stack.functionOf(page.id))];
      expect((fn as FunctionResource).Properties.Environment.Variables, page.id).not.toHaveProperty(
        'HERALD_CONSOLE_URL',
      );
    }
  });

  it('gives every console function the version its pages link the assets with', () => {
    const version = consoleAssetsVersion(REPO_ROOT);
    expect(version).toMatch(/^[0-9a-f]{16}$/);
    for (const id of [...consolePages.map((p) => p.id), fallback.id])
      expect(envOf(id).HERALD_CONSOLE_ASSETS_VERSION, id).toBe(version);
  });

  it("gives the assets function no table, and every page's function the table its sessions need", () => {
    expect(envOf('consoleAssets')).not.toHaveProperty('TABLE_NAME');
    expect(actionsOf('consoleAssets').filter((a) => a.startsWith('dynamodb:'))).toEqual([]);
    for (const page of consolePages.filter((p) => p.id !== 'consoleAssets'))
      expect(actionsOf(page.id), page.id).toContain('dynamodb:PutItem');
  });

  it("copies the asset files into the assets function's bundle, byte for byte, and no other bundle", () => {
    const assetDir = (id: string) =>
      path.join(prod.assembly.directory, String(fnResource(id).Metadata?.['aws:asset:path']));
    for (const [name, file] of Object.entries(CONSOLE_ASSET_FILES)) {
      const copied = readFileSync(path.join(assetDir('consoleAssets'), CONSOLE_ASSETS_BUNDLE_DIR, name));
      expect(copied.equals(readFileSync(path.join(REPO_ROOT, file.source))), name).toBe(true);
    }
    expect(existsSync(path.join(assetDir('consoleKeys'), CONSOLE_ASSETS_BUNDLE_DIR))).toBe(false);
  });

  it('keeps console bundles small: no AWS SDK in the assets function, nothing heavy in the pages', () => {
    const size = (id: string) =>
      statSync(
        path.join(prod.assembly.directory, String(fnResource(id).Metadata?.['aws:asset:path']), 'index.mjs'),
      ).size;
    expect(sourcesOf('consoleAssets').filter((s) => s.includes('@aws-sdk/'))).toEqual([]);
    expect(size('consoleAssets')).toBeLessThan(150 * 1024);
    for (const page of consolePages) {
      // The API's resource schemas and docs, and the MCP SDK, are for other functions.
      const heavy = sourcesOf(page.id).filter((s) =>
        /\/core\/(schemas|contracts|operation-docs|openapi)\.ts$|@modelcontextprotocol/.test(s),
      );
      expect(heavy, page.id).toEqual([]);
    }
  });
});

// Per-stack resource budgets and headroom: test/unit/lib/stacks.test.ts.

describe('cdk-nag (AwsSolutions)', () => {
  it('leaves no unacknowledged finding', () => {
    const report = JSON.parse(
      readFileSync(path.join(prod.assembly.directory, 'validation-report.json'), 'utf8'),
    ) as {
      pluginReports: { pluginName: string; violations: { ruleName: string }[] }[];
    };
    const open = report.pluginReports.flatMap((r) =>
      r.violations.map((v) => `${r.pluginName}: ${v.ruleName}`),
    );
    expect(open).toEqual([]);
  });

  it('fails synthesis on a finding nobody acknowledged', () => {
    const app = new App({ context: { stage: 'dev', 'aws:cdk:bundling-stacks': [] } });
    addHeraldStacks(app, ENV);
    addNagChecks(app); // the checks without the acknowledgements
    expect(() => app.synth()).toThrow(/AwsSolutions-SMG4/);
  });
});

describe('bundles', () => {
  const exec = promisify(execFile);

  // Catches what esbuild cannot: a module that throws at load, e.g. an environment variable the
  // stack does not give that function.
  it.each(manifestIds)('%s loads with exactly the environment the stack gives it', async (id) => {
    const assetDir = fnResource(id).Metadata?.['aws:asset:path'];
    if (typeof assetDir !== 'string') throw new Error(`no asset path for ${id}`);
    const vars = envOf(id);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      AWS_REGION: ENV.region,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    // Tokens (Ref, GetAtt, dynamic references) become placeholders: only presence matters at load.
    for (const [name, value] of Object.entries(vars)) {
      env[name] = typeof value === 'string' ? value : `placeholder-${name}`;
    }
    const url = pathToFileURL(path.join(prod.assembly.directory, assetDir, 'index.mjs')).href;
    const { stdout } = await exec(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(url)}); console.log(typeof m.handler);`,
      ],
      { env },
    ).catch((error: { stderr?: string }) => {
      const cause = error.stderr?.match(/^\w*Error: .*$/m)?.[0] ?? String(error);
      throw new Error(`${id} failed to load: ${cause}`);
    });
    expect(stdout.trim()).toBe('function');
  });
});
