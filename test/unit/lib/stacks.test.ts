import { readFileSync } from 'node:fs';
import path from 'node:path';
import { App, type Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  addHeraldStacks,
  type HeraldStacks,
  heraldStackName,
  partNames,
  partOf,
  partStackName,
} from '#lib/herald-stack';
import { applyNag } from '#lib/nag';
import { consolePages, fallback, mcp, operations, workers } from '#lib/operations';
import { stageConfigFrom } from '#lib/stage';
import { exportsOf, mergedTemplate } from './stacks-view.ts';

// The split into a data stack and stateless siblings (docs/architecture/stacks.md): budgets and
// headroom, the pinned stateful logical ids, what protects them, where each function lives, the
// references between stacks and the custom domain. Syntheses without bundling (the bundles are
// herald-stack.test.ts's), each with the nag wiring of bin/app.ts, so cdk-nag runs on every stack.

const ENV = { account: '111111111111', region: 'eu-west-1' };
/** Each stack's budget: CloudFormation allows 500 resources; 100 stay in reserve for fixes. */
const BUDGET = 400;
const CERT = 'arn:aws:acm:eu-west-1:111111111111:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789';

interface Synth {
  stacks: HeraldStacks;
  templates: Map<Stack, Template>;
  merged: Template;
}

function synth(context: Record<string, unknown>): Synth {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stacks = addHeraldStacks(app, ENV);
  applyNag(app, stacks);
  app.synth(); // throws on any unacknowledged finding, in any stack
  const templates = new Map(stacks.stacks.map((s) => [s, Template.fromStack(s)]));
  return { stacks, templates, merged: mergedTemplate(stacks.stacks) };
}

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
}
const resourcesOf = (t: Template) => (t.toJSON().Resources ?? {}) as Record<string, Resource>;
const templateOf = (s: Synth, stack: Stack) => {
  const t = s.templates.get(stack);
  if (!t) throw new Error(`no template for ${stack.stackName}`);
  return t;
};
const stackOfFunction = (s: Synth, id: string) => {
  const fn = s.stacks.functionOf(id);
  return fn.stack.stackName;
};

const fixture = JSON.parse(readFileSync(path.join(import.meta.dirname, 'stateful-ids.json'), 'utf8')) as {
  resources: Record<
    string,
    { Type: string; KeySchema?: unknown; AttributeDefinitions?: unknown; GlobalSecondaryIndexes?: unknown }
  >;
};
/** The types whose resources hold data or keys: retained on protected stages. */
const RETAINED = new Set([
  'AWS::DynamoDB::Table',
  'AWS::KMS::Key',
  'AWS::SecretsManager::Secret',
  'AWS::S3::Bucket',
  'AWS::SQS::Queue',
]);

let prod: Synth;
let dev: Synth;
let withDomain: Synth;

beforeAll(() => {
  prod = synth({
    stage: 'prod',
    stages: { prod: { alarmEmail: 'ops@example.com', publicUrl: 'https://herald.example.com' } },
  });
  dev = synth({ stage: 'dev' });
  withDomain = synth({
    stage: 'prod',
    stages: {
      prod: {
        alarmEmail: 'ops@example.com',
        domainName: 'api.example.com',
        certificateArn: CERT,
        hostedZoneId: 'Z0123456789ABC',
      },
    },
  });
}, 240_000);

describe('stacks and budgets', () => {
  it('is a data stack Herald-<stage> and one stateless stack per part', () => {
    expect(prod.stacks.data.stackName).toBe('Herald-prod');
    expect([...prod.stacks.parts.values()].map((s) => s.stackName)).toEqual(
      partNames().map((part) => partStackName('prod', part)),
    );
    expect(partNames()).toEqual(expect.arrayContaining(['console', 'workers', 'gateway']));
  });

  it(`keeps every stack within ${BUDGET} resources (CloudFormation's limit is 500)`, () => {
    for (const [stack, template] of prod.templates) {
      const count = Object.keys(resourcesOf(template)).length;
      expect(count, stack.stackName).toBeLessThanOrEqual(BUDGET);
      // CloudFormation's limit of outputs (exports included) per stack.
      expect(Object.keys(template.toJSON().Outputs ?? {}).length, stack.stackName).toBeLessThanOrEqual(200);
    }
  });

  it('has room for at least 150 more operations in the api stacks of the existing tags', () => {
    const apiStacks = partNames()
      .filter((p) => p.startsWith('api-'))
      .map((p) => prod.stacks.parts.get(p) as Stack);
    const used = apiStacks.map((s) => Object.keys(resourcesOf(templateOf(prod, s))).length);
    // Resources per operation today (function, role, policy, log group, errors alarm, invoke
    // permission, integration, route), rounded up over everything in the api stacks.
    const perOperation = Math.ceil(used.reduce((a, b) => a + b, 0) / operations.length);
    expect(perOperation).toBeLessThanOrEqual(9);
    const room = used.reduce((sum, n) => sum + Math.floor((BUDGET - n) / perOperation), 0);
    expect(room).toBeGreaterThanOrEqual(150);
    // docs/architecture/stacks.md states the numbers of this version: 9 per operation, room for 242.
  });
});

describe('placement', () => {
  it("puts each operation in its tag's stack, the console pages, workers and gateway in theirs", () => {
    for (const op of operations)
      expect(stackOfFunction(prod, op.id), op.id).toBe(`Herald-prod-api-${op.tag.toLowerCase()}`);
    for (const page of consolePages)
      expect(stackOfFunction(prod, page.id), page.id).toBe('Herald-prod-console');
    for (const w of workers) expect(stackOfFunction(prod, w.id), w.id).toBe('Herald-prod-workers');
    expect(stackOfFunction(prod, mcp.id)).toBe('Herald-prod-gateway');
    expect(stackOfFunction(prod, fallback.id)).toBe('Herald-prod-gateway');
    expect(prod.stacks.apiStage.stack.stackName).toBe('Herald-prod-gateway');
  });

  it('places by the operation alone: a new operation of a new tag is a new stack, the others stay', () => {
    expect(partOf({ tag: 'Posts' })).toBe('api-posts');
    expect(partOf({ tag: 'Inbox' as never })).toBe('api-inbox');
  });

  it('holds no function, route, alarm or stage in the data stack', () => {
    const types = new Set(Object.values(resourcesOf(templateOf(prod, prod.stacks.data))).map((r) => r.Type));
    for (const stateless of [
      'AWS::Lambda::Function',
      'AWS::IAM::Role',
      'AWS::ApiGatewayV2::Route',
      'AWS::ApiGatewayV2::Stage',
      'AWS::CloudWatch::Alarm',
      'AWS::StepFunctions::StateMachine',
      'AWS::Lambda::EventSourceMapping',
    ])
      expect(types.has(stateless), stateless).toBe(false);
  });
});

describe('references between stacks', () => {
  const importsOf = (t: Template) =>
    [...JSON.stringify(t.toJSON()).matchAll(/"Fn::ImportValue":"([^"]+)"/g)].map((m) => m[1]);

  it('never makes the data stack import anything (it deploys first, on its own)', () => {
    for (const s of [prod, dev, withDomain]) expect(importsOf(templateOf(s, s.stacks.data))).toEqual([]);
  });

  it('imports only what some stack exports', () => {
    const exported = exportsOf([...prod.templates.values()].map((t) => t.toJSON()));
    const imports = [...prod.templates.values()].flatMap(importsOf);
    expect(imports.length).toBeGreaterThan(0);
    for (const name of imports) expect(exported.has(name as string), name).toBe(true);
  });

  it('deploys the gateway (whose stage names every route key) after every other stack', () => {
    const gateway = prod.stacks.parts.get('gateway') as Stack;
    const after = gateway.dependencies.map((s) => s.stackName).sort();
    expect(after).toEqual(
      [
        heraldStackName('prod'),
        ...partNames()
          .filter((p) => p !== 'gateway')
          .map((p) => partStackName('prod', p)),
      ].sort(),
    );
  });

  it("gives every function the API's own origin as HERALD_API_URL", () => {
    const functions = Object.values(resourcesOfMerged(prod)).filter(
      (r) => r.Type === 'AWS::Lambda::Function',
    );
    expect(functions.length).toBe(prod.stacks.functions.size);
    const apiId = prod.stacks.data.getLogicalId(prod.stacks.data.api.node.defaultChild as never);
    for (const fn of functions)
      expect(apiUrlOf(fn)).toEqual({
        'Fn::GetAtt': [apiId, 'ApiEndpoint'],
      });
    for (const fn of Object.values(resourcesOfMerged(withDomain)).filter(
      (r) => r.Type === 'AWS::Lambda::Function',
    ))
      expect(apiUrlOf(fn)).toBe('https://api.example.com');
  });
});

const apiUrlOf = (fn: Resource): unknown =>
  (fn.Properties?.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables
    .HERALD_API_URL;

function resourcesOfMerged(s: Synth): Record<string, Resource> {
  return resourcesOf(s.merged);
}

describe('stateful logical ids (pinned from the single-stack template)', () => {
  it('keeps every one in the data stack, with its type', () => {
    const data = resourcesOf(templateOf(prod, prod.stacks.data));
    const ids = Object.keys(fixture.resources);
    expect(ids.length).toBeGreaterThanOrEqual(37);
    for (const [id, pinned] of Object.entries(fixture.resources))
      expect(data[id]?.Type, id).toBe(pinned.Type);
    // …and in no other stack.
    for (const stack of prod.stacks.parts.values())
      for (const id of ids)
        expect(resourcesOf(templateOf(prod, stack))[id], `${id} in ${stack.stackName}`).toBeUndefined();
  });

  it("keeps the table's key schema, attributes and index names", () => {
    const data = resourcesOf(templateOf(prod, prod.stacks.data));
    for (const [id, pinned] of Object.entries(fixture.resources).filter(([, r]) => r.KeySchema)) {
      const props = data[id]?.Properties ?? {};
      expect(props.KeySchema).toEqual(pinned.KeySchema);
      expect(props.AttributeDefinitions).toEqual(pinned.AttributeDefinitions);
      expect(
        (props.GlobalSecondaryIndexes as { IndexName: string; KeySchema: unknown }[]).map((g) => ({
          IndexName: g.IndexName,
          KeySchema: g.KeySchema,
        })),
      ).toEqual(pinned.GlobalSecondaryIndexes);
    }
  });

  it('retains (on delete and on replace) every one that holds data or keys on protected stages', () => {
    const data = resourcesOf(templateOf(prod, prod.stacks.data));
    const retained = Object.entries(fixture.resources).filter(([, r]) => RETAINED.has(r.Type));
    expect(retained.length).toBe(21); // table, 4 keys, secret, 2 buckets, 13 queues
    for (const [id] of retained) {
      expect(data[id]?.DeletionPolicy, id).toBe('Retain');
      expect(data[id]?.UpdateReplacePolicy, id).toBe('Retain');
    }
  });
});

describe('protection', () => {
  it('turns termination protection on for the data stack of protected stages only', () => {
    expect(prod.stacks.data.terminationProtection).toBe(true);
    expect(dev.stacks.data.terminationProtection).toBe(false);
    for (const stack of prod.stacks.parts.values())
      expect(stack.terminationProtection, stack.stackName).toBe(false);
  });

  it('deletes queues and empties buckets on a dev destroy, so it completes', () => {
    const data = resourcesOf(templateOf(dev, dev.stacks.data));
    const queues = Object.values(data).filter((r) => r.Type === 'AWS::SQS::Queue');
    expect(queues).toHaveLength(21);
    for (const q of queues) expect(q.DeletionPolicy).toBe('Delete');
    for (const b of Object.values(data).filter((r) => r.Type === 'AWS::S3::Bucket'))
      expect(b.DeletionPolicy).toBe('Delete');
    templateOf(dev, dev.stacks.data).resourceCountIs('Custom::S3AutoDeleteObjects', 2);
    templateOf(prod, prod.stacks.data).resourceCountIs('Custom::S3AutoDeleteObjects', 0);
  });
});

describe('custom domain', () => {
  const data = () => templateOf(withDomain, withDomain.stacks.data);
  const gateway = () => templateOf(withDomain, withDomain.stacks.parts.get('gateway') as Stack);

  it('creates the regional API Gateway domain (TLS 1.2, the ACM certificate) in the data stack', () => {
    data().hasResourceProperties('AWS::ApiGatewayV2::DomainName', {
      DomainName: 'api.example.com',
      DomainNameConfigurations: [
        { CertificateArn: CERT, EndpointType: 'REGIONAL', SecurityPolicy: 'TLS_1_2' },
      ],
    });
  });

  it('maps it to the $default stage in the stack holding the stage', () => {
    const stageId = Object.keys(gateway().findResources('AWS::ApiGatewayV2::Stage'))[0];
    gateway().hasResource('AWS::ApiGatewayV2::ApiMapping', {
      Properties: {
        DomainName: { 'Fn::ImportValue': Match.stringLikeRegexp('ApiDomain') },
        Stage: '$default',
      },
      DependsOn: [stageId],
    });
  });

  it('creates alias A and AAAA records in the hosted zone, in the data stack', () => {
    for (const type of ['A', 'AAAA'])
      data().hasResourceProperties('AWS::Route53::RecordSet', {
        Name: 'api.example.com.',
        Type: type,
        HostedZoneId: 'Z0123456789ABC',
        AliasTarget: {
          DNSName: { 'Fn::GetAtt': [Match.stringLikeRegexp('ApiDomain'), 'RegionalDomainName'] },
          HostedZoneId: { 'Fn::GetAtt': [Match.stringLikeRegexp('ApiDomain'), 'RegionalHostedZoneId'] },
        },
      });
  });

  it('disables the execute-api endpoint and points the outputs at the domain', () => {
    data().hasResourceProperties('AWS::ApiGatewayV2::Api', { DisableExecuteApiEndpoint: true });
    data().hasOutput('ApiUrl', { Value: 'https://api.example.com/' });
    data().hasOutput('PublicUrl', { Value: 'https://api.example.com' });
    data().hasOutput('ConsoleUrl', { Value: 'https://api.example.com/console' });
  });

  it('creates none of it without a domain, and no records without a hosted zone', () => {
    for (const type of [
      'AWS::ApiGatewayV2::DomainName',
      'AWS::ApiGatewayV2::ApiMapping',
      'AWS::Route53::RecordSet',
    ])
      prod.merged.resourceCountIs(type, 0);
    prod.merged.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      DisableExecuteApiEndpoint: Match.absent(),
    });
    const noZone = synth({ stage: 'dev', domainName: 'api.example.com', certificateArn: CERT });
    noZone.merged.resourceCountIs('AWS::ApiGatewayV2::DomainName', 1);
    noZone.merged.resourceCountIs('AWS::ApiGatewayV2::ApiMapping', 1);
    noZone.merged.resourceCountIs('AWS::Route53::RecordSet', 0);
  });

  it('refuses an incomplete or malformed domain setting', () => {
    expect(() => stageConfigFrom({ domainName: 'api.example.com' })).toThrow(/certificateArn/);
    expect(() => stageConfigFrom({ certificateArn: CERT })).toThrow(/without domainName/);
    expect(() => stageConfigFrom({ domainName: 'https://api.example.com', certificateArn: CERT })).toThrow(
      /domainName/,
    );
    expect(() =>
      stageConfigFrom({ domainName: 'api.example.com', certificateArn: CERT, hostedZoneId: 'nope' }),
    ).toThrow(/hostedZoneId/);
    expect(stageConfigFrom({ domainName: 'api.example.com', certificateArn: CERT })).toMatchObject({
      domain: { name: 'api.example.com', certificateArn: CERT },
      publicUrl: 'https://api.example.com',
    });
  });
});
