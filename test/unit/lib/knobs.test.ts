import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { LEASE_SECONDS } from '#core/timing';
import { addHeraldStacks, type HeraldStacks } from '#lib/herald-stack';
import { applyNag } from '#lib/nag';
import { queues, VISIBILITY_FACTOR, workers } from '#lib/operations';
import { CONCURRENCY_SETTINGS, stageConfigFrom } from '#lib/stage';
import {
  LOCAL_CREDENTIALS,
  LOCAL_REGION,
  localVisibility,
  startQueues,
} from '../../../bin/local/services.ts';
import { mergedTemplate } from './stacks-view.ts';

// The stage's scale knobs, tracing and importTable, as they reach the templates (syntheses without
// bundling), and what the settings refuse. test/unit/lib/herald-stack.test.ts checks the defaults on
// its bundled prod synthesis.

const ENV = { account: '111111111111', region: 'eu-west-1' };
const PROD = { alarmEmail: 'ops@example.com', publicUrl: 'https://herald.example.com' };
const RESTORED = 'herald-prod-restored';
const STREAM = `arn:aws:dynamodb:eu-west-1:111111111111:table/${RESTORED}/stream/2026-12-02T04:00:00.000`;
const KNOBS = {
  deliveryConcurrency: '64',
  webhookConcurrency: 16,
  dispatcherConcurrency: 6,
  fanoutConcurrency: 4,
  channelSyncConcurrency: 10,
  engagementSyncConcurrency: 3,
  unpublishConcurrency: 3,
  mediaImportConcurrency: 5,
  inboxReplyConcurrency: 4,
  inboxPollConcurrency: 12,
  inboxRetentionDays: 30,
  inboxDisabledPlatforms: '["x"]',
  throttleRateLimit: 1000,
  throttleBurstLimit: '2000',
  tracing: 'true',
};

interface Synth {
  stacks: HeraldStacks;
  template: Template;
}
type Resource = { Type: string; Properties: Record<string, unknown> };

function synth(context: Record<string, unknown>, nag = false): Synth {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [], ...context } });
  const stacks = addHeraldStacks(app, ENV);
  if (nag) {
    applyNag(app, stacks);
    app.synth(); // throws on any unacknowledged finding
  }
  return { stacks, template: mergedTemplate(stacks.stacks) };
}

const resourcesOf = (s: Synth) => s.template.toJSON().Resources as Record<string, Resource>;
const logicalId = (construct: { node: { defaultChild?: unknown } }) => {
  const child = construct.node.defaultChild as CfnElement;
  return Stack.of(child).getLogicalId(child);
};
const fnResource = (s: Synth, id: string) => {
  const r = resourcesOf(s)[logicalId(s.stacks.functionOf(id))];
  if (!r) throw new Error(`no function ${id}`);
  return r;
};
const envOf = (s: Synth, id: string) =>
  (fnResource(s, id).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
const mappingOf = (s: Synth, id: string) => {
  const found = Object.values(
    s.template.findResources('AWS::Lambda::EventSourceMapping', {
      Properties: { FunctionName: { Ref: logicalId(s.stacks.functionOf(id)) } },
    }),
  );
  expect(found, id).toHaveLength(1);
  return found[0]?.Properties as Record<string, unknown>;
};
const statements = (s: Synth) =>
  Object.values(s.template.findResources('AWS::IAM::Policy')).flatMap(
    (p) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[]; Resource: unknown }>,
  );
const actions = (st: { Action: string | string[] }) => (Array.isArray(st.Action) ? st.Action : [st.Action]);
const queueWorkers = workers.filter((w) => w.trigger.kind === 'queue');

let plain: Synth;
let knobbed: Synth;
let restored: Synth;

beforeAll(() => {
  plain = synth({ stage: 'dev' });
  knobbed = synth({ stage: 'dev', ...KNOBS });
  restored = synth(
    {
      stage: 'prod',
      stages: { prod: { ...PROD, importTable: { tableName: RESTORED, tableStreamArn: STREAM } } },
    },
    true,
  );
}, 300_000);

describe('concurrency and the stage throttle', () => {
  it("uses the manifest's concurrency and 100/200 when the stage sets none", () => {
    for (const w of queueWorkers)
      expect(mappingOf(plain, w.id).ScalingConfig, w.id).toEqual({
        MaximumConcurrency: (w.trigger as { concurrency: number }).concurrency,
      });
    const stage = Object.values(plain.template.findResources('AWS::ApiGatewayV2::Stage'))[0];
    expect(stage?.Properties.DefaultRouteSettings).toMatchObject({
      ThrottlingRateLimit: 100,
      ThrottlingBurstLimit: 200,
    });
  });

  it.each(Object.entries(CONCURRENCY_SETTINGS))('%s sets the maximum concurrency of %s', (key, worker) => {
    expect(mappingOf(knobbed, worker).ScalingConfig).toEqual({
      MaximumConcurrency: Number(KNOBS[key as keyof typeof KNOBS]),
    });
  });

  it('names a queue worker of the manifest in every concurrency setting', () => {
    expect(Object.values(CONCURRENCY_SETTINGS).sort()).toEqual(
      queueWorkers
        .filter((w) => !(w.trigger.kind === 'queue' && w.trigger.dlq))
        .map((w) => w.id)
        .sort(),
    );
  });

  it('passes the inbox settings to the functions only when set (their own defaults otherwise)', () => {
    expect(envOf(knobbed, 'inboxPollWorker')).toMatchObject({
      HERALD_INBOX_RETENTION_DAYS: '30',
      HERALD_INBOX_DISABLED_PLATFORMS: 'x',
    });
    expect(envOf(plain, 'inboxPollWorker')).not.toHaveProperty('HERALD_INBOX_RETENTION_DAYS');
    expect(envOf(plain, 'inboxPollWorker')).not.toHaveProperty('HERALD_INBOX_DISABLED_PLATFORMS');
  });

  it('sets the stage throttle', () => {
    const stage = Object.values(knobbed.template.findResources('AWS::ApiGatewayV2::Stage'))[0];
    expect(stage?.Properties.DefaultRouteSettings).toMatchObject({
      ThrottlingRateLimit: 1000,
      ThrottlingBurstLimit: 2000,
    });
  });
});

describe('visibility timeouts', () => {
  it.each(queueWorkers.map((w) => [w.id, w] as const))(
    "%s's queue shows a message again only after 6 × its timeout, and after a delivery's lease",
    (_id, w) => {
      const trigger = w.trigger as { queue: (typeof queues)[number]['name']; dlq?: boolean };
      const pair = plain.stacks.queues.get(trigger.queue);
      if (!pair) throw new Error(`no queue ${trigger.queue}`);
      const q = resourcesOf(plain)[logicalId(trigger.dlq ? pair.dlq : pair.queue)];
      expect(q?.Properties.VisibilityTimeout).toBe(VISIBILITY_FACTOR * w.timeoutSeconds);
      expect(q?.Properties.VisibilityTimeout).toBeGreaterThan(LEASE_SECONDS);
    },
  );
});

describe('visibility timeouts in the local stack', () => {
  it("are 2 × the consumer's timeout (its receive loops are never throttled), a delivery's still past its lease", async () => {
    const q = await startQueues();
    const sqs = new SQSClient({
      endpoint: q.endpoint,
      region: LOCAL_REGION,
      credentials: LOCAL_CREDENTIALS,
      useQueueUrlAsEndpoint: false,
    });
    try {
      for (const w of queueWorkers) {
        const trigger = w.trigger as { queue: (typeof queues)[number]['name']; dlq?: boolean };
        const local = q.queues[trigger.queue];
        const res = await sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: trigger.dlq ? local.dlqUrl : local.url,
            AttributeNames: ['VisibilityTimeout'],
          }),
        );
        expect(Number(res.Attributes?.VisibilityTimeout), w.id).toBe(2 * w.timeoutSeconds);
      }
      expect(
        localVisibility(queues.find((x) => x.name === 'delivery')?.visibilityTimeoutSeconds ?? 0),
      ).toBeGreaterThan(LEASE_SECONDS);
    } finally {
      sqs.destroy();
      await q.stop();
    }
  });
});

describe('tracing', () => {
  it('is off by default: no tracing config, no X-Ray permission anywhere', () => {
    for (const id of plain.stacks.functions.keys())
      expect(fnResource(plain, id).Properties.TracingConfig, id).toBeUndefined();
    const machine = resourcesOf(plain)[logicalId(plain.stacks.stateMachines.get('webhookLadder') as never)];
    expect(machine?.Properties.TracingConfiguration).toEqual({ Enabled: false });
    expect(
      statements(plain)
        .flatMap(actions)
        .filter((a) => a.startsWith('xray:')),
    ).toEqual([]);
  });

  it('is active on every function and the state machine when the stage turns it on', () => {
    for (const id of knobbed.stacks.functions.keys())
      expect(fnResource(knobbed, id).Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
    const machine =
      resourcesOf(knobbed)[logicalId(knobbed.stacks.stateMachines.get('webhookLadder') as never)];
    expect(machine?.Properties.TracingConfiguration).toEqual({ Enabled: true });
    expect(statements(knobbed).flatMap(actions)).toContain('xray:PutTraceSegments');
  });
});

describe('the engagement sync fan-out', () => {
  it('has its queue and DLQ in the data stack, consumed by the worker in batches of 5', () => {
    const pair = plain.stacks.queues.get('engagementSync');
    if (!pair) throw new Error('no engagementSync queue');
    expect(Stack.of(pair.queue)).toBe(plain.stacks.data);
    expect(logicalId(pair.queue)).toMatch(/^EngagementSyncQueue/);
    expect(logicalId(pair.dlq)).toMatch(/^EngagementSyncDlq/);
    expect(mappingOf(plain, 'engagementSyncWorker')).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [logicalId(pair.queue), 'Arn'] },
      BatchSize: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('gives the hourly finder the queue to send to and no table write', () => {
    const pair = plain.stacks.queues.get('engagementSync');
    expect(envOf(plain, 'engagementSync').ENGAGEMENT_SYNC_QUEUE_URL).toEqual({
      Ref: logicalId(pair?.queue as never),
    });
    const role = logicalId(plain.stacks.functionOf('engagementSync').role as never);
    const own = Object.values(
      plain.template.findResources('AWS::IAM::Policy', {
        Properties: { Roles: Match.arrayWith([{ Ref: role }]) },
      }),
    ).flatMap((p) => p.Properties.PolicyDocument.Statement as Array<{ Action: string | string[] }>);
    const granted = own.flatMap(actions);
    expect(granted).toContain('sqs:SendMessage');
    expect(granted.filter((a) => /^dynamodb:(Put|Update|Delete|BatchWrite)/.test(a))).toEqual([]);
    expect(
      granted.filter((a) => a.startsWith('kms:') && a !== 'kms:Decrypt' && a !== 'kms:DescribeKey'),
    ).toEqual([]);
  });
});

describe('importTable', () => {
  it('creates no table and names the restored one to every function', () => {
    expect(restored.template.findResources('AWS::DynamoDB::Table')).toEqual({});
    expect(restored.template.findResources('AWS::DynamoDB::GlobalTable')).toEqual({});
    for (const id of ['listPosts', 'streamRelay', 'engagementSyncWorker'])
      expect(envOf(restored, id).TABLE_NAME, id).toBe(RESTORED);
    expect(restored.template.toJSON().Outputs.TableName.Value).toBe(RESTORED);
  });

  it("reads the restored table's stream", () => {
    expect(mappingOf(restored, 'streamRelay').EventSourceArn).toBe(STREAM);
  });

  it('grants table actions on that table and its indexes only, under the kept table key', () => {
    const tableArn = `arn:<AWS::Partition>:dynamodb:eu-west-1:111111111111:table/${RESTORED}`;
    const flat = (r: unknown): string =>
      typeof r === 'string'
        ? r
        : (r as { 'Fn::Join'?: [string, unknown[]]; Ref?: string })['Fn::Join']
          ? (r as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1].map(flat).join('')
          : `<${(r as { Ref: string }).Ref}>`;
    const tableStatements = statements(restored).filter((s) =>
      actions(s).some((a) => a.startsWith('dynamodb:') && a !== 'dynamodb:ListStreams'),
    );
    expect(tableStatements.length).toBeGreaterThan(20);
    for (const s of tableStatements) {
      const resources = (Array.isArray(s.Resource) ? s.Resource : [s.Resource]).map(flat);
      for (const r of resources) expect([tableArn, `${tableArn}/index/*`, STREAM]).toContain(r);
    }
    const key = logicalId(restored.stacks.data.tableKey);
    const keyStatements = statements(restored).filter((s) => actions(s).includes('kms:Decrypt'));
    expect(keyStatements.some((s) => JSON.stringify(s.Resource).includes(key))).toBe(true);
  });

  it('keeps the table key', () => {
    expect(resourcesOf(restored)[logicalId(restored.stacks.data.tableKey)]?.Type).toBe('AWS::KMS::Key');
  });
});

describe('settings that are refused', () => {
  const prod = (entry: Record<string, unknown>) =>
    stageConfigFrom({ stage: 'prod', stages: { prod: { ...PROD, ...entry } } }, { region: 'eu-west-1' });

  it.each([1, 1001, 2.5, 'many', -4])('refuses deliveryConcurrency %s', (value) => {
    expect(() => prod({ deliveryConcurrency: value })).toThrow(
      /invalid deliveryConcurrency .*: an integer from 2 to 1000 \(the range of an SQS event source's maximum concurrency\)/,
    );
  });

  it('refuses a throttle of 0 or below, and a fractional burst', () => {
    expect(() => prod({ throttleRateLimit: 0 })).toThrow(
      /invalid throttleRateLimit 0: a number of requests per second above 0/,
    );
    expect(() => prod({ throttleBurstLimit: 10.5 })).toThrow(
      /invalid throttleBurstLimit 10.5: a whole number/,
    );
  });

  it('refuses a tracing that is not a boolean', () => {
    expect(() => prod({ tracing: 'yes' })).toThrow(/invalid tracing "yes": true or false/);
    expect(prod({ tracing: true }).tracing).toBe(true);
    expect(prod({}).tracing).toBe(false);
  });

  it("refuses an importTable whose stream is another table's, of another region, or malformed", () => {
    const other = STREAM.replace(`table/${RESTORED}/`, 'table/herald-prod-old/');
    expect(() => prod({ importTable: { tableName: RESTORED, tableStreamArn: other } })).toThrow(
      /importTable.tableStreamArn is the stream of table herald-prod-old, not of herald-prod-restored/,
    );
    expect(() =>
      prod({
        importTable: { tableName: RESTORED, tableStreamArn: STREAM.replace('eu-west-1', 'us-east-1') },
      }),
    ).toThrow(/is in us-east-1 but the stack deploys to eu-west-1/);
    expect(() => prod({ importTable: { tableName: RESTORED, tableStreamArn: 'stream' } })).toThrow(
      /invalid importTable.tableStreamArn "stream": a stream ARN like/,
    );
    expect(() => prod({ importTable: { tableName: RESTORED } })).toThrow(
      /invalid importTable.tableStreamArn/,
    );
    expect(() => prod({ importTable: 'herald-prod-restored' })).toThrow(
      /invalid importTable "herald-prod-restored": an object/,
    );
    expect(() => prod({ importTable: { tableName: RESTORED, tableStreamArn: STREAM, key: 'x' } })).toThrow(
      /unknown key key/,
    );
  });

  it('refuses importTable on dev, whose created table a switch would delete', () => {
    expect(() =>
      stageConfigFrom({
        stage: 'dev',
        importTable: JSON.stringify({ tableName: RESTORED, tableStreamArn: STREAM }),
      }),
    ).toThrow(/importTable is refused on stage dev: its resources are not retained/);
  });

  it('takes the knobs from cdk.json only on a protected stage', () => {
    expect(() =>
      stageConfigFrom({ stage: 'prod', stages: { prod: PROD }, deliveryConcurrency: '32' }),
    ).toThrow(/-c deliveryConcurrency=32 differs from context.stages.prod.deliveryConcurrency/);
    expect(
      stageConfigFrom({
        stage: 'prod',
        stages: { prod: { ...PROD, deliveryConcurrency: 32 } },
        deliveryConcurrency: '32',
      }).concurrency,
    ).toEqual({ deliveryWorker: 32 });
  });
});
