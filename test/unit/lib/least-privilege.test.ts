import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import type { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { beforeAll, describe, expect, it } from 'vitest';
import { addHeraldStacks, type HeraldStacks } from '#lib/herald-stack';
import {
  type Access,
  apiOperations,
  consolePages,
  fallback,
  mcp,
  operations,
  queues,
  type Trigger,
  workers,
} from '#lib/operations';
import { mergedTemplate } from './stacks-view.ts';

// Least privilege, swept over every IAM statement of every function and driven by the manifest
// (security review). test/unit/lib/herald-stack.test.ts spot-checks grants on a bundled prod
// synthesis (listPosts' limiter condition, the webhook key users by name, senders per queue, S3
// action lists, the MCP invoke list); this file complements it with invariants that hold for every
// role: no wildcard or NotAction grants, no IAM/STS, only the services the manifest access needs,
// table writes only for RW access, resources pinned to the right table/key/queue/bucket prefix.
//
// One synthesis without bundling, in the widest configuration (notifySender, MCP origins and tracing set, so
// every optional grant exists). The stacks' templates are read as one (stacks-view.ts): a grant on
// an imported table ARN reads as a grant on the table.

type Json = Record<string, unknown>;

interface Statement {
  Effect: string;
  Action?: string | string[];
  NotAction?: unknown;
  Resource?: unknown;
  NotResource?: unknown;
  Principal?: unknown;
  NotPrincipal?: unknown;
  Condition?: Json;
}

interface FunctionSpec {
  id: string;
  access: Access & { sends?: readonly string[] };
  /** API-key operations pass the request limiter (its counters are their only RO-exempt write). */
  countsRequests: boolean;
  trigger?: Trigger;
}

const specs: FunctionSpec[] = [
  ...operations.map((op) => ({ id: op.id, access: op.access, countsRequests: op.scope !== null })),
  // Console pages: a session cookie, not an API key, so no request counters.
  ...consolePages.map((page) => ({ id: page.id, access: page.access, countsRequests: false })),
  { id: mcp.id, access: mcp.access, countsRequests: false },
  { id: fallback.id, access: fallback.access, countsRequests: false },
  ...workers.map((w) => ({ id: w.id, access: w.access, countsRequests: false, trigger: w.trigger })),
];

let stack: HeraldStacks;
let template: Template;
/** Logical id → a readable name of the resources grants may point at. */
const names = new Map<string, string>();

beforeAll(() => {
  const app = new App({
    context: {
      stage: 'dev',
      'aws:cdk:bundling-stacks': [],
      notifySender: 'alerts@example.com',
      mcpAllowedOrigins: 'https://app.example.com',
      // Tracing on adds the X-Ray grants (off, there are none: test/unit/lib/knobs.test.ts).
      tracing: 'true',
      // A Bedrock engine adds the model grants to the functions with `ai` access.
      ai: {
        bedrock: {
          modelId: 'eu.anthropic.claude-3-5-haiku-20241022-v1:0',
          regions: ['eu-west-1', 'eu-west-3'],
          guardrail: { id: 'gr7abc', version: '1' },
        },
      },
    },
  });
  stack = addHeraldStacks(app, { account: '111111111111', region: 'eu-west-1' });
  template = mergedTemplate(stack.stacks);
  const name = (construct: IConstruct, label: string) => names.set(logicalId(construct), label);
  name(stack.data.table, 'table');
  name(stack.data.tableKey, 'tableKey');
  name(stack.data.webhookSecretsKey, 'webhookKey');
  name(stack.data.connectionSecretsKey, 'connectionKey');
  name(stack.data.streamRelayDlq, 'streamRelayDlq');
  name(stack.data.media.uploadBucket, 'uploadBucket');
  name(stack.data.media.mediaBucket, 'mediaBucket');
  for (const [q, pair] of stack.queues) {
    name(pair.queue, `queue:${q}`);
    name(pair.dlq, `dlq:${q}`);
  }
  for (const [m, machine] of stack.stateMachines) name(machine, `machine:${m}`);
  for (const [id, fn] of stack.functions) {
    name(fn, `fn:${id}`);
    name(fn.logGroup, `logs:${id}`);
  }
}, 180_000);

function logicalId(construct: IConstruct): string {
  const child = (construct.node.defaultChild ?? construct) as CfnElement;
  return Stack.of(child).getLogicalId(child);
}

const list = <T>(v: T | T[] | undefined): T[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * A resource as a readable label: `table`, `table/index/*`, `table/stream`, `tableKey`,
 * `queue:delivery`, `uploadBucket/uploads/*`, `fn:getPost`, `*`, … (unknown shapes stay JSON, so
 * they fail every expectation below).
 */
function label(resource: unknown): string {
  if (resource === '*') return '*';
  const r = resource as Json;
  const getAtt = r['Fn::GetAtt'] as [string, string] | undefined;
  if (getAtt) {
    const base = names.get(getAtt[0]) ?? getAtt[0];
    return getAtt[1] === 'StreamArn' ? `${base}/stream` : base;
  }
  if (typeof r.Ref === 'string') return names.get(r.Ref) ?? r.Ref;
  const join = r['Fn::Join'] as [string, unknown[]] | undefined;
  if (join && join[0] === '') return join[1].map((p) => (typeof p === 'string' ? p : label(p))).join('');
  return JSON.stringify(resource);
}

interface Grant {
  action: string;
  resource: string;
  condition?: Json;
}

type PolicyResource = {
  Properties: { Roles: Array<{ Ref: string }>; PolicyDocument: { Statement: Statement[] } };
};
let policyCache: Array<[string, PolicyResource]> | undefined;
/** Every AWS::IAM::Policy of the stack (read once). */
const policies = () => {
  policyCache ??= Object.entries(template.findResources('AWS::IAM::Policy')) as Array<
    [string, PolicyResource]
  >;
  return policyCache;
};

function roleIdOf(id: string): string {
  const role = stack.functionOf(id).role;
  if (!role) throw new Error(`${id} has no role`);
  return logicalId(role);
}

function statementsOf(id: string): Statement[] {
  const roleId = roleIdOf(id);
  return policies()
    .filter(([, p]) => p.Properties.Roles.some((r) => r.Ref === roleId))
    .flatMap(([, p]) => p.Properties.PolicyDocument.Statement);
}

/** Every (action, resource) a function's role allows, resources as labels. */
function grantsOf(id: string): Grant[] {
  return statementsOf(id).flatMap((s) =>
    list(s.Action).flatMap((action) =>
      list(s.Resource).map((r) => ({
        action,
        resource: label(r),
        ...(s.Condition ? { condition: s.Condition } : {}),
      })),
    ),
  );
}

const service = (action: string) => action.split(':')[0] ?? '';
const of = (grants: Grant[], svc: string) => grants.filter((g) => service(g.action) === svc);
const pairs = (grants: Grant[]) => [...new Set(grants.map((g) => `${g.action} @ ${g.resource}`))].sort();

/** DynamoDB actions that read (and the stream plumbing of the event source mapping). */
const DYNAMO_READS = new Set([
  'dynamodb:BatchGetItem',
  'dynamodb:GetItem',
  'dynamodb:Query',
  'dynamodb:Scan',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DescribeTable',
  'dynamodb:GetRecords',
  'dynamodb:GetShardIterator',
  'dynamodb:DescribeStream',
  'dynamodb:ListStreams',
]);

/** The request limiter's grant (HeraldFunction.grantRequestCounters). */
const LIMITER_CONDITION = {
  'ForAllValues:StringLike': {
    'dynamodb:LeadingKeys': ['ORG#*'],
    'dynamodb:Attributes': ['pk', 'sk', 'api_requests', 'key_*'],
  },
  StringEqualsIfExists: { 'dynamodb:ReturnValues': ['NONE', 'UPDATED_NEW'] },
};

/** The only services a function may use, given its manifest entry. */
function allowedServices(f: FunctionSpec): string[] {
  const out = ['logs', 'xray'];
  if (f.access.table !== 'none') out.push('dynamodb', 'kms');
  if (f.access.secrets?.length) out.push('kms');
  if (f.access.media || f.access.queueBodies?.length) out.push('s3');
  if (f.access.sends?.length || f.trigger?.kind === 'queue' || f.trigger?.kind === 'stream') out.push('sqs');
  if (f.access.starts?.length) out.push('states');
  if (f.access.email) out.push('ses');
  if (f.access.ai) out.push('bedrock');
  if (f.id === mcp.id || invokedBy(f.id).length) out.push('lambda');
  return [...new Set(out)].sort();
}

/** The workers a function invokes by the manifest's `invoke` triggers (completeMediaUpload: the probe). */
function invokedBy(id: string): string[] {
  return workers.filter((w) => w.trigger.kind === 'invoke' && w.trigger.by.includes(id)).map((w) => w.id);
}

describe('least privilege: every IAM policy of the stack', () => {
  const allStatements = () => policies().flatMap(([, p]) => p.Properties.PolicyDocument.Statement);

  it('grants no `*` or `service:*` action, and no partial wildcard beyond the KMS data-key grants', () => {
    const actions = allStatements().flatMap((s) => list(s.Action));
    expect(actions.length).toBeGreaterThan(100);
    expect(actions.filter((a) => a === '*' || a.endsWith(':*'))).toEqual([]);
    expect([...new Set(actions.filter((a) => a.includes('*')))].sort()).toEqual([
      'kms:GenerateDataKey*',
      'kms:ReEncrypt*',
    ]);
  });

  it('uses only Allow statements with Action and Resource (no NotAction, NotResource or principals)', () => {
    for (const s of allStatements()) {
      expect(s.Effect).toBe('Allow');
      expect(s.NotAction).toBeUndefined();
      expect(s.NotResource).toBeUndefined();
      expect(s.Principal).toBeUndefined();
      expect(s.NotPrincipal).toBeUndefined();
      expect(list(s.Action).length).toBeGreaterThan(0);
      expect(list(s.Resource).length).toBeGreaterThan(0);
    }
  });

  it('grants no IAM, STS, Organizations, Secrets Manager or SSM action to anyone', () => {
    const forbidden = /^(iam|sts|organizations|secretsmanager|ssm|kms:(Create|Put|Schedule|Disable|Delete))/;
    expect(allStatements().flatMap((s) => list(s.Action).filter((a) => forbidden.test(a)))).toEqual([]);
  });

  it('allows `Resource: *` only for X-Ray, the stream relay listing streams, and the log delivery of state machines', () => {
    const onStar = (statements: Statement[]) =>
      [
        ...new Set(statements.filter((s) => list(s.Resource).includes('*')).flatMap((s) => list(s.Action))),
      ].sort();
    const functionRoles = new Set(specs.map((f) => roleIdOf(f.id)));
    const ofFunctions = policies().filter(([, p]) => functionRoles.has(p.Properties.Roles[0]?.Ref ?? ''));
    const ofOthers = policies().filter(([, p]) => !functionRoles.has(p.Properties.Roles[0]?.Ref ?? ''));
    expect(onStar(ofFunctions.flatMap(([, p]) => p.Properties.PolicyDocument.Statement))).toEqual([
      'dynamodb:ListStreams',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
    const listStreams = specs.filter((f) => grantsOf(f.id).some((g) => g.action === 'dynamodb:ListStreams'));
    expect(listStreams.map((f) => f.trigger?.kind)).toEqual(['stream']);
    // The state machines' roles: what Step Functions needs for vended logs and tracing, which IAM
    // cannot scope to a resource (AWS documents `Resource: *` for these).
    expect(ofOthers).toHaveLength(stack.stateMachines.size);
    expect(onStar(ofOthers.flatMap(([, p]) => p.Properties.PolicyDocument.Statement))).toEqual([
      'logs:CreateLogDelivery',
      'logs:DeleteLogDelivery',
      'logs:DescribeLogGroups',
      'logs:DescribeResourcePolicies',
      'logs:GetLogDelivery',
      'logs:ListLogDeliveries',
      'logs:PutResourcePolicy',
      'logs:UpdateLogDelivery',
      'xray:GetSamplingRules',
      'xray:GetSamplingTargets',
      'xray:PutTelemetryRecords',
      'xray:PutTraceSegments',
    ]);
  });

  it('gives every function its own role, assumable by Lambda only, with no inline or managed policies', () => {
    const roles = template.findResources('AWS::IAM::Role') as Record<string, { Properties: Json }>;
    const roleIds = specs.map((f) => roleIdOf(f.id));
    expect(new Set(roleIds).size).toBe(specs.length);
    for (const id of roleIds) {
      const props = roles[id]?.Properties ?? {};
      expect(props.Policies, id).toBeUndefined();
      expect(props.ManagedPolicyArns, id).toBeUndefined();
      expect((props.AssumeRolePolicyDocument as { Statement: Statement[] }).Statement).toEqual([
        { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
      ]);
    }
    // Each policy is attached to one role: no function borrows another's grants.
    for (const [pid, p] of policies()) expect(p.Properties.Roles, pid).toHaveLength(1);
  });
});

describe.each(specs)('least privilege of $id', (f) => {
  const grants = () => grantsOf(f.id);
  const table = f.access.table;

  it('uses only the services its manifest access needs', () => {
    const used = [...new Set(grants().map((g) => service(g.action)))].sort();
    expect(used.filter((s) => !allowedServices(f).includes(s))).toEqual([]);
  });

  it('logs only to its own log group', () => {
    expect(pairs(of(grants(), 'logs'))).toEqual([
      `logs:CreateLogStream @ logs:${f.id}`,
      `logs:PutLogEvents @ logs:${f.id}`,
    ]);
  });

  it(`touches the table only as ${table} access allows (writes beyond the limiter's counters only when RW)`, () => {
    const dynamo = of(grants(), 'dynamodb');
    if (table === 'none') {
      expect(dynamo).toEqual([]);
      return;
    }
    for (const g of dynamo) {
      expect(['table', 'table/index/*', 'table/stream', '*'], g.action).toContain(g.resource);
    }
    const writes = dynamo.filter((g) => !DYNAMO_READS.has(g.action));
    if (table === 'RW') {
      expect(writes.map((g) => g.action)).toEqual(expect.arrayContaining(['dynamodb:PutItem']));
      return;
    }
    // RO: at most the limiter's conditional UpdateItem on the base table, and only if it counts requests.
    expect(writes.filter((g) => g.action !== 'dynamodb:UpdateItem')).toEqual([]);
    const updates = writes.filter((g) => g.action === 'dynamodb:UpdateItem');
    if (f.countsRequests) {
      expect(updates).toEqual([
        { action: 'dynamodb:UpdateItem', resource: 'table', condition: LIMITER_CONDITION },
      ]);
    } else {
      expect(updates).toEqual([]);
    }
  });

  it('uses the secrets keys exactly as its `secrets` and `connectionSecrets` access say, the table key only with table access', () => {
    const kms = of(grants(), 'kms');
    const expected = (f.access.secrets ?? []).map((use) =>
      use === 'encrypt' ? 'kms:Encrypt' : 'kms:Decrypt',
    );
    expect(
      kms
        .filter((g) => g.resource === 'webhookKey')
        .map((g) => g.action)
        .sort(),
    ).toEqual(expected.sort());
    const connection = (f.access.connectionSecrets ?? []).map((use) =>
      use === 'seal' ? 'kms:GenerateDataKey' : 'kms:Decrypt',
    );
    expect(
      kms
        .filter((g) => g.resource === 'connectionKey')
        .map((g) => g.action)
        .sort(),
    ).toEqual(connection.sort());
    const onTableKey = kms.filter((g) => g.resource === 'tableKey').map((g) => g.action);
    if (table === 'none') expect(onTableKey).toEqual([]);
    // Sealing with the table key (writes) only for RW access or the limiter's counters.
    if (table !== 'none' && table !== 'RW' && !f.countsRequests) {
      expect([...new Set(onTableKey)].sort()).toEqual(['kms:Decrypt', 'kms:DescribeKey']);
    }
    expect(kms.filter((g) => !['webhookKey', 'connectionKey', 'tableKey'].includes(g.resource))).toEqual([]);
  });

  it('sends only to the queues it `sends` to, and consumes only its own trigger queue', () => {
    const sqs = of(grants(), 'sqs');
    const sendTargets = [
      ...new Set(sqs.filter((g) => g.action === 'sqs:SendMessage').map((g) => g.resource)),
    ];
    const expectedSends = (f.access.sends ?? []).map((q) => `queue:${q}`);
    // A stream consumer's failed batches go to its on-failure destination.
    if (f.trigger?.kind === 'stream') expectedSends.push('streamRelayDlq');
    expect(sendTargets.sort()).toEqual(expectedSends.sort());
    const consumed = [
      ...new Set(
        sqs
          .filter((g) => g.action === 'sqs:ReceiveMessage' || g.action === 'sqs:DeleteMessage')
          .map((g) => g.resource),
      ),
    ];
    const trigger = f.trigger;
    expect(consumed).toEqual(
      trigger?.kind === 'queue' ? [`${trigger.dlq ? 'dlq' : 'queue'}:${trigger.queue}`] : [],
    );
    const mayTouch = new Set([...expectedSends, ...consumed]);
    for (const g of sqs) expect(mayTouch, `${g.action} @ ${g.resource}`).toContain(g.resource);
    expect(sqs.filter((g) => g.action === 'sqs:PurgeQueue' || g.action === 'sqs:SetQueueAttributes')).toEqual(
      [],
    );
  });

  it('touches S3 only as its `media` and `queueBodies` access say, on the object prefixes only', () => {
    const expected: Record<NonNullable<Access['media']>, string[]> = {
      presign: ['s3:PutObject @ uploadBucket/uploads/*'],
      RO: ['s3:GetObject @ mediaBucket/orgs/*'],
      probe: [
        's3:GetObject @ uploadBucket/uploads/*',
        's3:PutObject @ mediaBucket/orgs/*/media/*/_poster.jpg',
      ],
      RW: [
        's3:DeleteObject @ uploadBucket/uploads/*',
        's3:GetObject @ uploadBucket/uploads/*',
        's3:ListBucket @ uploadBucket',
        's3:PutObject @ mediaBucket/orgs/*',
      ],
      import: [
        's3:AbortMultipartUpload @ uploadBucket/uploads/*',
        's3:DeleteObject @ mediaBucket/orgs/*',
        's3:DeleteObject @ uploadBucket/uploads/*',
        's3:GetObject @ uploadBucket/uploads/*',
        's3:ListBucket @ uploadBucket',
        's3:PutObject @ mediaBucket/orgs/*',
        's3:PutObject @ uploadBucket/uploads/*',
      ],
      delete: ['s3:DeleteObject @ mediaBucket/orgs/*', 's3:DeleteObject @ uploadBucket/uploads/*'],
      fit: [
        's3:AbortMultipartUpload @ mediaBucket/orgs/*/media/*/_fit-*',
        's3:DeleteObject @ mediaBucket/orgs/*/media/*/_fit-*',
        's3:GetObject @ mediaBucket/orgs/*',
        's3:ListBucket @ mediaBucket',
        's3:PutObject @ mediaBucket/orgs/*/media/*/_fit-*',
      ],
    };
    const bodies = (f.access.queueBodies ?? []).map(
      (use) => `s3:${use === 'put' ? 'PutObject' : 'GetObject'} @ uploadBucket/queue-bodies/*`,
    );
    // Link cards' images for the fit function (the delivery worker): put on their own prefix only.
    const cardImages = f.access.cardImages ? ['s3:PutObject @ mediaBucket/orgs/_cards/media/*'] : [];
    expect(pairs(of(grants(), 's3'))).toEqual(
      [...(f.access.media ? expected[f.access.media] : []), ...bodies, ...cardImages].sort(),
    );
  });

  it("invokes only what the manifest says (the MCP server: the API operations' functions; a caller: its invoked worker)", () => {
    const invoked = of(grants(), 'lambda');
    if (f.id !== mcp.id) {
      expect(pairs(invoked)).toEqual(invokedBy(f.id).map((id) => `lambda:InvokeFunction @ fn:${id}`));
      return;
    }
    expect(new Set(invoked.map((g) => g.action))).toEqual(new Set(['lambda:InvokeFunction']));
    expect(invoked.map((g) => g.resource).sort()).toEqual(apiOperations.map((op) => `fn:${op.id}`).sort());
  });

  it('starts only the state machines it `starts`, and emails only with `email` access', () => {
    expect(pairs(of(grants(), 'states'))).toEqual(
      (f.access.starts ?? []).map((m) => `states:StartExecution @ machine:${m}`),
    );
    const ses = of(grants(), 'ses');
    if (!f.access.email) expect(ses).toEqual([]);
    else {
      expect(new Set(ses.map((g) => g.action))).toEqual(new Set(['ses:SendEmail']));
      for (const g of ses) expect(g.resource).toMatch(/:identity\/(alerts@)?example\.com$/);
    }
  });
});

describe('least privilege: the probe function and its caller', () => {
  const fnProps = (id: string) =>
    (template.toJSON().Resources as Record<string, { Properties: Json }>)[logicalId(stack.functionOf(id))]
      ?.Properties ?? {};

  it('probeMedia has no table, key or queue grant: it reads uploads and writes posters only', () => {
    const used = [...new Set(grantsOf('probeMedia').map((g) => service(g.action)))].sort();
    expect(used).toEqual(['logs', 's3', 'xray']);
    expect(fnProps('probeMedia').Layers).toHaveLength(1);
    expect((fnProps('probeMedia').Environment as { Variables: Json }).Variables.TABLE_NAME).toBeUndefined();
  });

  it('completeMediaUpload has no ffmpeg layer and invokes exactly the probe function', () => {
    expect(fnProps('completeMediaUpload').Layers).toBeUndefined();
    expect(of(grantsOf('completeMediaUpload'), 'lambda')).toEqual([
      { action: 'lambda:InvokeFunction', resource: 'fn:probeMedia' },
    ]);
    const env = (fnProps('completeMediaUpload').Environment as { Variables: Json }).Variables;
    expect(env.HERALD_PROBE_FUNCTION).toEqual({ Ref: logicalId(stack.functionOf('probeMedia')) });
    expect(env.HERALD_FFPROBE_PATH).toBeUndefined();
  });
});

describe('least privilege: the fit function and its caller', () => {
  const fnProps = (id: string) =>
    (template.toJSON().Resources as Record<string, { Properties: Json }>)[logicalId(stack.functionOf(id))]
      ?.Properties ?? {};

  it('fitMedia has no table, key or queue grant: it reads media and writes renditions only', () => {
    const used = [...new Set(grantsOf('fitMedia').map((g) => service(g.action)))].sort();
    expect(used).toEqual(['logs', 's3', 'xray']);
    expect(fnProps('fitMedia').Layers).toHaveLength(1);
    expect(fnProps('fitMedia').MemorySize).toBe(3008);
    expect((fnProps('fitMedia').Environment as { Variables: Json }).Variables.TABLE_NAME).toBeUndefined();
  });

  it('the delivery worker has no ffmpeg layer and invokes exactly the fit function', () => {
    expect(fnProps('deliveryWorker').Layers).toBeUndefined();
    expect(of(grantsOf('deliveryWorker'), 'lambda')).toEqual([
      { action: 'lambda:InvokeFunction', resource: 'fn:fitMedia' },
    ]);
    const env = (fnProps('deliveryWorker').Environment as { Variables: Json }).Variables;
    expect(env.HERALD_FIT_FUNCTION).toEqual({ Ref: logicalId(stack.functionOf('fitMedia')) });
    expect(env.HERALD_FFMPEG_PATH).toBeUndefined();
  });
});

describe('least privilege: the manifest model itself', () => {
  it('names every queue a worker sends to or consumes, and the sweep covers every function of the stack', () => {
    const known = new Set(queues.map((q) => q.name));
    for (const w of workers) {
      for (const q of w.access.sends ?? []) expect(known).toContain(q);
      if (w.trigger.kind === 'queue') expect(known).toContain(w.trigger.queue);
    }
    expect([...stack.functions.keys()].sort()).toEqual(specs.map((f) => f.id).sort());
  });
});
