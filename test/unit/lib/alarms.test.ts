import { readFileSync } from 'node:fs';
import path from 'node:path';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { beforeAll, describe, expect, it } from 'vitest';
import { headingSlug } from '#core/markdown';
import { alarmAnchor, docsBaseOf } from '#lib/constructs/alarms';
import { pascal } from '#lib/constructs/ids';
import { addHeraldStacks, type HeraldStacks } from '#lib/herald-stack';
import { applyNag } from '#lib/nag';
import { workers } from '#lib/operations';
import { mergedTemplate } from './stacks-view.ts';

// Every alarm family of the stack (metric, statistic, threshold, periods, missing data, actions),
// the composite's rule, the dashboard and the topics, from one synthesis of a protected stage with
// a ticketEmail (bundling skipped; the nag wiring of bin/app.ts). docs/operator/alarms.md must have
// a section for every alarm name and no section for an alarm that does not exist.

const ENV = { account: '111111111111', region: 'eu-west-1' };
const DOCS = 'https://herald.example.com/docs';
const DOC_FILE = path.resolve(import.meta.dirname, '../../../docs/operator/alarms.md');
/** The page's sections that explain rather than name an alarm. */
const GENERAL_SECTIONS = [
  'Page and ticket',
  'What the alarms cost',
  'The dashboard',
  'Logs Insights queries',
  'Function error rates',
];
/** What pages; everything else tickets. */
const PAGES = [
  'PublishingBroken',
  'StreamRelayDlqAge',
  'PlatformAppRefused',
  'ApiServerErrorRate',
  'TableSystemErrors',
];

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
}
type Props = Record<string, unknown> & {
  AlarmName: string;
  AlarmActions: unknown[];
  OKActions: unknown[];
  AlarmDescription: string;
};

let stacks: HeraldStacks;
let resources: Record<string, Resource>;
let alarms: Map<string, Props>;
let composite: Props & { AlarmRule: unknown };

const logicalId = (c: { node: { defaultChild?: unknown } } | CfnElement): string => {
  const el = ('logicalId' in c ? c : c.node.defaultChild) as CfnElement;
  return Stack.of(el).getLogicalId(el);
};
const ref = (c: Parameters<typeof logicalId>[0]) => ({ Ref: logicalId(c) });
const alarm = (name: string): Props => {
  const a = alarms.get(name);
  if (!a) throw new Error(`no alarm ${name}: ${[...alarms.keys()].join(', ')}`);
  return a;
};
/** The one metric of a single-metric alarm, as the template states it. */
const single = (name: string) => {
  const a = alarm(name);
  return {
    namespace: a.Namespace,
    metric: a.MetricName,
    statistic: a.Statistic ?? a.ExtendedStatistic,
    period: a.Period,
    threshold: a.Threshold,
    comparison: a.ComparisonOperator,
    periods: a.EvaluationPeriods,
    datapoints: a.DatapointsToAlarm,
    missing: a.TreatMissingData,
  };
};

beforeAll(() => {
  const app = new App({
    context: {
      'aws:cdk:bundling-stacks': [],
      stage: 'prod',
      stages: {
        prod: {
          alarmEmail: 'ops@example.com',
          ticketEmail: 'tickets@example.com',
          publicUrl: 'https://herald.example.com',
        },
      },
    },
  });
  stacks = addHeraldStacks(app, ENV);
  applyNag(app, stacks);
  app.synth(); // throws on any unacknowledged nag finding
  resources = mergedTemplate(stacks.stacks).toJSON().Resources as Record<string, Resource>;
  alarms = new Map();
  for (const r of Object.values(resources)) {
    if (r.Type !== 'AWS::CloudWatch::Alarm' && r.Type !== 'AWS::CloudWatch::CompositeAlarm') continue;
    const p = r.Properties as Props;
    const name = p.AlarmName.replace(/^Herald-prod-/, '');
    expect(alarms.has(name), name).toBe(false);
    alarms.set(name, p);
    if (r.Type === 'AWS::CloudWatch::CompositeAlarm') composite = p as typeof composite;
  }
}, 300_000);

describe('every alarm', () => {
  it('is named Herald-<stage>-<Name> and links its section of the operator guide', () => {
    expect(alarms.size).toBeGreaterThan(60);
    for (const [name, p] of alarms) {
      expect(p.AlarmName).toBe(`Herald-prod-${name}`);
      expect(
        p.AlarmDescription.endsWith(` Runbook: ${DOCS}/operator/alarms#${headingSlug(name)}`),
        name,
      ).toBe(true);
      expect(p.AlarmDescription.length, name).toBeLessThanOrEqual(1024);
    }
  });

  it('notifies page or ticket, and sends its OK to the same topic', () => {
    const page = ref(stacks.data.alarmTopic);
    const ticket = ref(stacks.data.ticketTopic);
    const paging: string[] = [];
    for (const [name, p] of alarms) {
      expect(p.OKActions, name).toEqual(p.AlarmActions);
      expect([[page], [ticket]], name).toContainEqual(p.AlarmActions);
      if (JSON.stringify(p.AlarmActions) === JSON.stringify([page])) paging.push(name);
    }
    expect(paging.sort()).toEqual([...PAGES].sort());
  });

  it('defaults the runbook base to <publicUrl or API URL>/docs, or the docsUrl', () => {
    expect(docsBaseOf({ docsUrl: undefined, publicUrl: 'https://h.example' }, 'https://api')).toBe(
      'https://h.example/docs',
    );
    expect(docsBaseOf({ docsUrl: undefined, publicUrl: undefined }, 'https://api')).toBe('https://api/docs');
    expect(docsBaseOf({ docsUrl: 'https://d.example/g', publicUrl: 'https://h.example' }, 'x')).toBe(
      'https://d.example/g',
    );
    expect(alarmAnchor('DeliveryDlqAge')).toBe('deliverydlqage');
  });
});

describe('DLQs', () => {
  it('alarm on depth (Maximum ≥ 1) and on the oldest message (3 days) of each unconsumed DLQ', () => {
    for (const [name, { dlq }] of stacks.queues) {
      // Consumed DLQs (delivery, mediaImport, inboxReplies) alarm on what they receive instead.
      if (name === 'delivery' || name === 'mediaImport' || name === 'inboxReplies') continue;
      const q = pascal(name);
      expect(single(`${q}DlqDepth`)).toEqual({
        namespace: 'AWS/SQS',
        metric: 'ApproximateNumberOfMessagesVisible',
        statistic: 'Maximum',
        period: 300,
        threshold: 1,
        comparison: 'GreaterThanOrEqualToThreshold',
        periods: 1,
        datapoints: 1,
        missing: 'notBreaching',
      });
      expect(alarm(`${q}DlqDepth`).Dimensions).toEqual([
        { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(dlq), 'QueueName'] } },
      ]);
      expect(single(`${q}DlqAge`)).toMatchObject({
        metric: 'ApproximateAgeOfOldestMessage',
        statistic: 'Maximum',
        threshold: 3 * 86_400,
      });
    }
  });

  it('alarm on what the consumed delivery DLQ received, and on a consumer that stopped emptying it', () => {
    expect(single('DeliveryDlqReceived')).toMatchObject({
      metric: 'NumberOfMessagesReceived',
      statistic: 'Sum',
      period: 300,
      threshold: 1,
      comparison: 'GreaterThanOrEqualToThreshold',
    });
    expect(single('DeliveryDlqAge')).toMatchObject({
      metric: 'ApproximateAgeOfOldestMessage',
      threshold: 900,
    });
    expect(alarms.has('DeliveryDlqDepth')).toBe(false);
  });

  it('alarm on what the consumed mediaImport DLQ received, and on a consumer that stopped emptying it', () => {
    expect(single('MediaImportDlqReceived')).toMatchObject({
      metric: 'NumberOfMessagesReceived',
      statistic: 'Sum',
      threshold: 1,
    });
    expect(single('MediaImportDlqAge')).toMatchObject({
      metric: 'ApproximateAgeOfOldestMessage',
      threshold: 900,
    });
    expect(alarms.has('MediaImportDlqDepth')).toBe(false);
  });

  it('alarm on what the consumed inboxReplies DLQ received, and on a consumer that stopped emptying it', () => {
    expect(single('InboxRepliesDlqReceived')).toMatchObject({
      metric: 'NumberOfMessagesReceived',
      statistic: 'Sum',
      threshold: 1,
    });
    expect(single('InboxRepliesDlqAge')).toMatchObject({
      metric: 'ApproximateAgeOfOldestMessage',
      threshold: 900,
    });
    expect(alarms.has('InboxRepliesDlqDepth')).toBe(false);
  });

  it("ticket the stream relay DLQ's depth (through the composite) and page its age, within the stream's 24 h", () => {
    const dims = [
      { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(stacks.data.streamRelayDlq), 'QueueName'] } },
    ];
    expect(single('StreamRelayDlqDepth')).toMatchObject({
      metric: 'ApproximateNumberOfMessagesVisible',
      threshold: 1,
    });
    expect(alarm('StreamRelayDlqDepth').Dimensions).toEqual(dims);
    expect(single('StreamRelayDlqAge')).toMatchObject({
      metric: 'ApproximateAgeOfOldestMessage',
      threshold: 6 * 3600,
    });
    expect(alarm('StreamRelayDlqAge').Dimensions).toEqual(dims);
  });
});

describe('workers', () => {
  it('alarm when the stream relay is over 60 s behind for 5 minutes', () => {
    expect(single('StreamRelayIteratorAge')).toEqual({
      namespace: 'AWS/Lambda',
      metric: 'IteratorAge',
      statistic: 'Maximum',
      period: 60,
      threshold: 60_000,
      comparison: 'GreaterThanThreshold',
      periods: 5,
      datapoints: 5,
      missing: 'notBreaching',
    });
    expect(alarm('StreamRelayIteratorAge').Dimensions).toEqual([
      { Name: 'FunctionName', Value: ref(stacks.functionOf('streamRelay')) },
    ]);
  });

  it('has a heartbeat per scheduled function: no invocation in 3 periods of its rate, missing data breaching', () => {
    const scheduled = workers.filter((w) => w.trigger.kind === 'schedule');
    expect(scheduled.map((w) => w.id)).toEqual(
      expect.arrayContaining(['scheduleSweeper', 'channelSync', 'engagementSync']),
    );
    for (const w of scheduled) {
      if (w.trigger.kind !== 'schedule') continue;
      expect(single(`${pascal(w.id)}Heartbeat`), w.id).toEqual({
        namespace: 'AWS/Lambda',
        metric: 'Invocations',
        statistic: 'Sum',
        period: w.trigger.everySeconds,
        threshold: 1,
        comparison: 'LessThanThreshold',
        periods: 3,
        datapoints: 3,
        missing: 'breaching',
      });
    }
  });

  it('alarm on the backlog age of the delivery (5 min) and webhooks (15 min) queues', () => {
    expect(single('DeliveryBacklogAge')).toMatchObject({
      metric: 'ApproximateAgeOfOldestMessage',
      statistic: 'Maximum',
      period: 60,
      threshold: 300,
      comparison: 'GreaterThanThreshold',
      periods: 5,
      datapoints: 5,
    });
    expect(alarm('DeliveryBacklogAge').Dimensions).toEqual([
      { Name: 'QueueName', Value: { 'Fn::GetAtt': [logicalId(stacks.data.deliveryQueue), 'QueueName'] } },
    ]);
    expect(single('WebhooksBacklogAge')).toMatchObject({
      period: 300,
      threshold: 900,
      periods: 3,
      datapoints: 3,
    });
  });

  it("alarm on the webhook ladder's failed executions and on account-wide Lambda throttles", () => {
    expect(single('WebhookLadderFailed')).toMatchObject({
      namespace: 'AWS/States',
      metric: 'ExecutionsFailed',
      statistic: 'Sum',
      threshold: 1,
    });
    expect(single('LambdaThrottles')).toMatchObject({
      namespace: 'AWS/Lambda',
      metric: 'Throttles',
      statistic: 'Sum',
      period: 300,
      threshold: 1,
      periods: 5,
      datapoints: 3,
    });
    expect(alarm('LambdaThrottles').Dimensions).toBeUndefined();
  });
});

/** A metric-math alarm's expression and its metrics (id → namespace/name/stat/period/dimension names). */
function math(name: string) {
  const metrics = alarm(name).Metrics as {
    Id: string;
    Expression?: string;
    ReturnData?: boolean;
    MetricStat?: {
      Metric: { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[] };
      Period: number;
      Stat: string;
    };
  }[];
  const expression = metrics.find((m) => m.Expression)?.Expression;
  const inputs = Object.fromEntries(
    metrics
      .filter((m) => m.MetricStat)
      .map((m) => {
        const s = m.MetricStat as NonNullable<(typeof metrics)[number]['MetricStat']>;
        return [m.Id, `${s.Metric.Namespace}/${s.Metric.MetricName}/${s.Stat}/${s.Period}`];
      }),
  );
  return { expression, inputs, metrics };
}

describe('rates', () => {
  it("alarm on each function's error rate (≥ 1 % in 3 of 5 five-minute periods), not on any error", () => {
    for (const [id, fn] of stacks.functions) {
      const name = `${pascal(id)}ErrorRate`;
      const { expression, inputs, metrics } = math(name);
      expect(expression, id).toBe('100 * errors / invocations');
      expect(inputs).toEqual({
        errors: 'AWS/Lambda/Errors/Sum/300',
        invocations: 'AWS/Lambda/Invocations/Sum/300',
      });
      for (const m of metrics.filter((m) => m.MetricStat))
        expect(m.MetricStat?.Metric.Dimensions).toEqual([{ Name: 'FunctionName', Value: ref(fn) }]);
      expect(alarm(name)).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        EvaluationPeriods: 5,
        DatapointsToAlarm: 3,
        TreatMissingData: 'notBreaching',
      });
    }
  });

  it("alarm on the API's 5xx rate (≥ 5 %) and p99 latency (> 5 s)", () => {
    const { expression, inputs } = math('ApiServerErrorRate');
    expect(expression).toBe('100 * FILL(errors, 0) / requests');
    expect(inputs).toEqual({
      errors: 'AWS/ApiGateway/5xx/Sum/300',
      requests: 'AWS/ApiGateway/Count/Sum/300',
    });
    expect(alarm('ApiServerErrorRate')).toMatchObject({
      Threshold: 5,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
    });
    expect(single('ApiLatencyP99')).toMatchObject({
      namespace: 'AWS/ApiGateway',
      metric: 'Latency',
      statistic: 'p99',
      threshold: 5000,
      comparison: 'GreaterThanThreshold',
      periods: 5,
      datapoints: 3,
    });
  });

  it('alarm on the failed share of finished deliveries, from the metrics Herald writes', () => {
    const { expression, inputs } = math('DeliveryFailureRate');
    expect(expression).toBe('100 * FILL(failed, 0) / (FILL(failed, 0) + FILL(published, 0))');
    expect(inputs).toEqual({
      failed: 'Herald/DeliveryFailed/Sum/300',
      published: 'Herald/DeliveryPublished/Sum/300',
    });
    expect(alarm('DeliveryFailureRate')).toMatchObject({
      Threshold: 25,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 3,
    });
  });

  it("alarm on the table's throttles (ticket) and system errors of every operation Herald uses (page)", () => {
    const table = { Name: 'TableName', Value: ref(stacks.data.table) };
    const throttles = math('TableThrottles');
    expect(Object.values(throttles.inputs).sort()).toEqual([
      'AWS/DynamoDB/ReadThrottleEvents/Sum/300',
      'AWS/DynamoDB/WriteThrottleEvents/Sum/300',
    ]);
    for (const m of throttles.metrics.filter((m) => m.MetricStat))
      expect(m.MetricStat?.Metric.Dimensions).toEqual([table]);
    const errors = math('TableSystemErrors');
    const operations = errors.metrics
      .filter((m) => m.MetricStat)
      .map((m) => m.MetricStat?.Metric.Dimensions?.find((d) => d.Name === 'Operation')?.Value);
    expect(operations.sort()).toEqual(
      [
        'BatchGetItem',
        'DeleteItem',
        'GetItem',
        'PutItem',
        'Query',
        'TransactWriteItems',
        'UpdateItem',
      ].sort(),
    );
    expect(errors.expression?.split(' + ')).toHaveLength(operations.length);
  });
});

describe('PublishingBroken', () => {
  it('is in ALARM when any of the alarms meaning posts are not going out is', () => {
    const children = [
      'ScheduleSweeperHeartbeat',
      'DeliveryBacklogAge',
      'DeliveryDlqReceived',
      'DeliveryFailureRate',
      'StreamRelayIteratorAge',
      'StreamRelayDlqDepth',
    ];
    expect(composite.AlarmName).toBe('Herald-prod-PublishingBroken');
    const rule = JSON.stringify(composite.AlarmRule);
    const byName = new Map(
      Object.entries(resources)
        .filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm')
        .map(([id, r]) => [(r.Properties as Props).AlarmName.replace(/^Herald-prod-/, ''), id]),
    );
    const named = [...rule.matchAll(/"Fn::GetAtt":\["([A-Za-z0-9]+)","Arn"\]/g)].map((m) => m[1]);
    expect(named.sort()).toEqual(children.map((c) => byName.get(c)).sort());
    expect(rule.match(/ OR /g)).toHaveLength(children.length - 1);
    expect(rule).not.toContain(' AND ');
    // Its children only ticket: one outage pages once.
    for (const c of children) expect(alarm(c).AlarmActions).toEqual([ref(stacks.data.ticketTopic)]);
  });
});

describe('topics', () => {
  it('subscribes alarmEmail to the page topic and ticketEmail to the ticket topic', () => {
    const subs = Object.values(resources).filter((r) => r.Type === 'AWS::SNS::Subscription');
    expect(subs.map((s) => [s.Properties.TopicArn, s.Properties.Endpoint, s.Properties.Protocol])).toEqual(
      expect.arrayContaining([
        [ref(stacks.data.alarmTopic), 'ops@example.com', 'email'],
        [ref(stacks.data.ticketTopic), 'tickets@example.com', 'email'],
      ]),
    );
    expect(subs).toHaveLength(2);
  });

  it('encrypts the ticket topic with the alarm key, TLS-only, and lets CloudWatch publish', () => {
    const [page, ticket] = [stacks.data.alarmTopic, stacks.data.ticketTopic].map(
      (t) => resources[logicalId(t)]?.Properties,
    );
    expect(ticket?.KmsMasterKeyId).toEqual(page?.KmsMasterKeyId);
    const policy = Object.values(resources).find(
      (r) =>
        r.Type === 'AWS::SNS::TopicPolicy' &&
        JSON.stringify(r.Properties.Topics) === JSON.stringify([ref(stacks.data.ticketTopic)]),
    );
    const statements = JSON.stringify(policy?.Properties.PolicyDocument);
    expect(statements).toContain('"aws:SecureTransport":"false"');
    expect(statements).toContain('"Service":"cloudwatch.amazonaws.com"');
    expect(resources[logicalId(stacks.data.ticketTopic)]).toBeDefined();
    expect(stacks.data.ticketTopic.stack).toBe(stacks.data);
  });
});

describe('dashboard', () => {
  interface Widget {
    type: string;
    properties: { title?: string; metrics?: unknown[][]; alarms?: string[] };
  }
  /** The dashboard's body, its CloudFormation references replaced by "<ref>". */
  const widgets = (): Widget[] => {
    const dashboards = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    expect(dashboards[0]?.Properties.DashboardName).toBe('Herald-prod');
    const body = dashboards[0]?.Properties.DashboardBody as { 'Fn::Join': [string, unknown[]] };
    const [, parts] = body['Fn::Join'];
    const text = parts.map((p) => (typeof p === 'string' ? p : '<ref>')).join('');
    return (JSON.parse(text) as { widgets: Widget[] }).widgets;
  };
  const metricsOf = (title: string) => {
    const w = widgets().find((x) => x.properties.title === title);
    if (!w) throw new Error(`no widget ${title}`);
    return (w.properties.metrics ?? []).map((m) =>
      m.map((part) => (typeof part === 'object' && part && 'expression' in part ? part.expression : part)),
    );
  };
  const names = (title: string) => metricsOf(title).map((m) => `${m[0]}/${m[1]}`);

  it('charts the API: requests, 4xx, 5xx, p50 and p99 latency', () => {
    expect(names('API requests and errors')).toEqual([
      'AWS/ApiGateway/Count',
      'AWS/ApiGateway/4xx',
      'AWS/ApiGateway/5xx',
    ]);
    expect(metricsOf('API latency (ms)').map((m) => (m.at(-1) as { stat: string }).stat)).toEqual([
      'p50',
      'p99',
    ]);
  });

  it("charts each queue's depth and oldest message, each DLQ's depth, the stream relay", () => {
    const n = stacks.queues.size;
    expect(names('Queue depth (messages visible)')).toEqual(
      Array(n).fill('AWS/SQS/ApproximateNumberOfMessagesVisible'),
    );
    expect(names('Queue oldest message (s)')).toEqual(Array(n).fill('AWS/SQS/ApproximateAgeOfOldestMessage'));
    expect(names('DLQ depth (messages visible)')).toHaveLength(n + 1);
    expect(names('Stream relay: iterator age (ms) and errors')).toEqual([
      'AWS/Lambda/IteratorAge',
      'AWS/Lambda/Errors',
    ]);
  });

  it('charts the metrics Herald writes, per platform by search, webhooks by outcome', () => {
    expect(metricsOf('Deliveries published, by platform')).toEqual([
      [`SEARCH('{Herald,platform} MetricName="DeliveryPublished"', 'Sum', 300)`],
    ]);
    expect(metricsOf('Deliveries failed, by platform and category')).toEqual([
      [`SEARCH('{Herald,platform,category} MetricName="DeliveryFailed"', 'Sum', 300)`],
    ]);
    expect(names('Publish lateness (s): all platforms')).toEqual([
      'Herald/PublishLateness',
      'Herald/PublishLateness',
      'Herald/DeliveryRetried',
    ]);
    expect(metricsOf('Publish lateness p99 (s), by platform')).toEqual([
      [`SEARCH('{Herald,platform} MetricName="PublishLateness"', 'p99', 300)`],
    ]);
    expect(metricsOf('Webhook deliveries, by outcome').map((m) => m.slice(0, 4))).toEqual(
      ['delivered', 'retried', 'failed'].map((o) => ['Herald', 'WebhookDelivery', 'outcome', o]),
    );
    expect(metricsOf('Channel status changes, by platform and status')).toEqual([
      [`SEARCH('{Herald,platform,status} MetricName="ChannelStatusChanged"', 'Sum', 300)`],
    ]);
  });

  it('shows the state of every alarm', () => {
    const shown = widgets()
      .filter((w) => w.type === 'alarm')
      .flatMap((w) => w.properties.alarms ?? []);
    expect(
      shown.map((arn) => arn.replace(/^arn:<ref>:cloudwatch:eu-west-1:111111111111:alarm:/, '')).sort(),
    ).toEqual([...alarms.values()].map((p) => p.AlarmName).sort());
  });
});

describe('docs/operator/alarms.md', () => {
  const doc = readFileSync(DOC_FILE, 'utf8');
  const sections = [...doc.matchAll(/^## (.+)$/gm)].map((m) => (m[1] as string).trim());

  it('has one section per alarm the stack creates, and none for an alarm that does not exist', () => {
    const named = sections.filter((s) => !GENERAL_SECTIONS.includes(s));
    expect(new Set(named).size).toBe(named.length);
    expect([...named].sort()).toEqual([...alarms.keys()].sort());
    for (const s of GENERAL_SECTIONS) expect(sections, s).toContain(s);
  });

  it('states the alarm count and the metrics they read (what they cost)', () => {
    const metricAlarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm');
    const read = metricAlarms.reduce((n, r) => {
      const metrics = r.Properties.Metrics as { MetricStat?: unknown }[] | undefined;
      return n + (metrics ? metrics.filter((m) => m.MetricStat).length : 1);
    }, 0);
    expect(doc.replace(/\s+/g, ' ')).toContain(
      `has ${metricAlarms.length} metric alarms reading ${read} metrics and one composite`,
    );
  });
});
