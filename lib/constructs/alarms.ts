import { Arn, ArnFormat, Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmRule,
  ComparisonOperator,
  CompositeAlarm,
  type IAlarm,
  type IMetric,
  MathExpression,
  Metric,
  Stats,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { headingSlug } from '../../functions/core/markdown.ts';
import {
  DELIVERY_FAILED,
  DELIVERY_PUBLISHED,
  METRICS_NAMESPACE,
  PLATFORM_APP_REFUSED,
} from '../../functions/core/metrics.ts';
import type { HeraldFunction } from '../herald-function.ts';
import { type QueueName, type StateMachineName, type Worker, workers } from '../operations.ts';
import type { StageConfig } from '../stage.ts';
import { pascal } from './ids.ts';
import type { Queues } from './queues.ts';

// Every alarm Herald creates, each named `Herald-<stage>-<Name>` and documented in
// docs/operator/alarms.md under `## <Name>` (a test compares the template with the page). Two
// destinations: "page" (someone acts now) and "ticket" (someone looks today). An alarm that means
// "posts are not going out" is a child of the PublishingBroken composite, which pages; the
// children themselves only ticket, so one outage pages once.

const FIVE_MINUTES = Duration.minutes(5);
const ONE_MINUTE = Duration.minutes(1);

/** The two SNS destinations, both in the data stack (their subscriptions outlive the stateless stacks). */
export interface AlarmTopicSet {
  readonly page: ITopic;
  readonly ticket: ITopic;
}

export type Destination = keyof AlarmTopicSet;

export interface AlarmTopicsProps {
  readonly config: StageConfig;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The page topic (logical id AlarmTopic, subscribed to `alarmEmail`) and the ticket topic
 * (subscribed to `ticketEmail`, else `alarmEmail`): encrypted with one key CloudWatch may use,
 * TLS-only, CloudWatch allowed to publish.
 */
export class AlarmTopics implements AlarmTopicSet {
  readonly page: Topic;
  readonly ticket: Topic;

  constructor(scope: Construct, { config, removalPolicy }: AlarmTopicsProps) {
    const account = Stack.of(scope).account;
    // CloudWatch cannot publish to a topic under the AWS managed SNS key (its key policy is fixed),
    // so the topics get their own customer managed key that names CloudWatch.
    const alarmKey = new Key(scope, 'AlarmTopicKey', {
      description: `Herald ${config.stage}: encryption of the alarm topic`,
      enableKeyRotation: true,
      removalPolicy,
    });
    alarmKey.addToResourcePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': account } },
      }),
    );
    const topic = (id: string, displayName: string, email: string | undefined): Topic => {
      const t = new Topic(scope, id, { displayName, masterKey: alarmKey, enforceSSL: true });
      // enforceSSL gives the topic a resource policy, which replaces SNS's default one: CloudWatch
      // must be allowed to publish explicitly.
      t.addToResourcePolicy(
        new PolicyStatement({
          effect: Effect.ALLOW,
          principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [t.topicArn],
          conditions: { StringEquals: { 'aws:SourceAccount': account } },
        }),
      );
      if (email) t.addSubscription(new EmailSubscription(email));
      return t;
    };
    this.page = topic('AlarmTopic', `Herald ${config.stage} alarms`, config.alarmEmail);
    this.ticket = topic(
      'TicketTopic',
      `Herald ${config.stage} tickets`,
      config.ticketEmail ?? config.alarmEmail,
    );
  }
}

/** `Herald-<stage>-<name>`: the alarm names the runbook's sections match. */
export function alarmName(stage: string, name: string): string {
  return `Herald-${stage}-${name}`;
}

/** The anchor of `## <name>` in alarms.md (GitHub's slug, as the served guide makes it). */
export const alarmAnchor = (name: string): string => headingSlug(name);

/**
 * Where the operator's guide is served: the stage's docsUrl, else `<publicUrl or API URL>/docs`
 * (the base the problem `type` URIs use, functions/shared/config.ts).
 */
export function docsBaseOf(config: Pick<StageConfig, 'docsUrl' | 'publicUrl'>, apiUrl: string): string {
  return config.docsUrl ?? `${config.publicUrl ?? apiUrl}/docs`;
}

export interface AlarmSpec {
  /** The alarm's name without `Herald-<stage>-`; also its section heading in alarms.md. */
  readonly name: string;
  readonly metric: IMetric;
  readonly threshold: number;
  /** @default GREATER_THAN_OR_EQUAL_TO_THRESHOLD */
  readonly comparison?: ComparisonOperator;
  /** @default 1 */
  readonly evaluationPeriods?: number;
  /** @default evaluationPeriods */
  readonly datapointsToAlarm?: number;
  /** @default NOT_BREACHING: no data is no activity, which is fine unless said otherwise */
  readonly treatMissingData?: TreatMissingData;
  readonly destination: Destination;
  /** What it means, in one or two sentences; the runbook link is appended. */
  readonly description: string;
}

/**
 * Makes the alarms of a stage: explicit names, runbook links, alarm and OK actions to one topic.
 * It remembers every name it made (the dashboard's alarm widgets read them).
 */
export class Alarms {
  readonly names: string[] = [];

  constructor(
    readonly config: StageConfig,
    readonly topics: AlarmTopicSet,
    /** The operator's guide base URL (docsBaseOf). */
    readonly docsBase: string,
  ) {}

  describe(name: string, text: string): string {
    return `${text} Runbook: ${this.docsBase}/operator/alarms#${alarmAnchor(name)}`;
  }

  add(scope: Construct, spec: AlarmSpec): Alarm {
    const evaluationPeriods = spec.evaluationPeriods ?? 1;
    const alarm = new Alarm(scope, `${spec.name}Alarm`, {
      alarmName: this.#claim(spec.name),
      metric: spec.metric,
      threshold: spec.threshold,
      comparisonOperator: spec.comparison ?? ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods,
      datapointsToAlarm: spec.datapointsToAlarm ?? evaluationPeriods,
      treatMissingData: spec.treatMissingData ?? TreatMissingData.NOT_BREACHING,
      alarmDescription: this.describe(spec.name, spec.description),
    });
    this.#notify(alarm, spec.destination);
    return alarm;
  }

  /** A composite: in ALARM when any child is. */
  addAnyOf(
    scope: Construct,
    name: string,
    children: readonly IAlarm[],
    destination: Destination,
    description: string,
  ): CompositeAlarm {
    const alarm = new CompositeAlarm(scope, `${name}Alarm`, {
      compositeAlarmName: this.#claim(name),
      alarmRule: AlarmRule.anyOf(...children),
      alarmDescription: this.describe(name, description),
    });
    this.#notify(alarm, destination);
    return alarm;
  }

  /** The ARN of an alarm this object made, built from its name (no reference between stacks). */
  arnOf(scope: Construct, name: string): string {
    return Arn.format(
      {
        service: 'cloudwatch',
        resource: 'alarm',
        resourceName: name,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      },
      Stack.of(scope),
    );
  }

  #claim(name: string): string {
    const full = alarmName(this.config.stage, name);
    if (this.names.includes(full)) throw new Error(`alarm ${full} made twice`);
    this.names.push(full);
    return full;
  }

  #notify(alarm: Alarm | CompositeAlarm, destination: Destination): void {
    const action = new SnsAction(this.topics[destination]);
    alarm.addAlarmAction(action);
    alarm.addOkAction(action);
  }
}

// ---- Functions ---------------------------------------------------------------------------------

/**
 * Errors / Invocations ≥ 1 % in 3 of 5 five-minute periods, to the ticket topic. Five-minute
 * periods because a quiet function has too few invocations per minute for a rate; 3 of 5 so one
 * bad period (a deploy, a burst of cold starts) does not alarm. At low traffic any error in 3 of
 * the 5 periods is ≥ 1 %. Queue workers report a failed record in their batch response, not as an
 * error: for them this catches crashes and timeouts only (their DLQs and backlogs say the rest).
 */
export function addFunctionAlarm(scope: Construct, alarms: Alarms, id: string, fn: HeraldFunction): Alarm {
  return alarms.add(scope, {
    name: `${pascal(id)}ErrorRate`,
    metric: new MathExpression({
      expression: '100 * errors / invocations',
      usingMetrics: {
        errors: fn.metricErrors({ period: FIVE_MINUTES, statistic: Stats.SUM }),
        invocations: fn.metricInvocations({ period: FIVE_MINUTES, statistic: Stats.SUM }),
      },
      period: FIVE_MINUTES,
      label: `${id} errors (% of invocations)`,
    }),
    threshold: 1,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    destination: 'ticket',
    description: `Lambda ${id} failed on at least 1 % of its invocations in 3 of the last 5 five-minute periods.`,
  });
}

// ---- Queues, stream, workers -------------------------------------------------------------------

const DLQ_AGE_DAYS = 3;
const CONSUMED_DLQ_AGE = Duration.minutes(15);
/** The stream keeps its records 24 h after they were written: the replay must run before that. */
const STREAM_DLQ_AGE = Duration.hours(6);

/** The queue alarms that watch each queue's traffic, by queue: the backlog a person waits on. */
const BACKLOG: Partial<Record<QueueName, { age: Duration; period: Duration; periods: number }>> = {
  // A post due now waits for this queue: 5 minutes late, for 5 minutes running.
  delivery: { age: Duration.minutes(5), period: ONE_MINUTE, periods: 5 },
  // Receivers wait for their webhooks; a slow endpoint's retries are delayed on purpose, so longer.
  webhooks: { age: Duration.minutes(15), period: FIVE_MINUTES, periods: 3 },
};

export interface WorkerAlarmsProps {
  readonly queues: Queues;
  readonly functions: ReadonlyMap<string, HeraldFunction>;
  readonly table: ITable;
  readonly stateMachines: ReadonlyMap<StateMachineName, StateMachine>;
}

const dlqConsumer = (name: QueueName): Worker | undefined =>
  workers.find((w) => w.trigger.kind === 'queue' && w.trigger.dlq && w.trigger.queue === name);

const ageOf = (queue: Queue, period: Duration) =>
  queue.metricApproximateAgeOfOldestMessage({ period, statistic: Stats.MAXIMUM });

/**
 * The alarms of the workers stack: queues, DLQs, the stream, the scheduled functions' heartbeats,
 * the table, the state machines, the EMF metrics and the PublishingBroken composite over the ones
 * that mean posts are not going out.
 */
export function addWorkerAlarms(
  scope: Construct,
  alarms: Alarms,
  { queues, functions, table, stateMachines }: WorkerAlarmsProps,
): CompositeAlarm {
  const publishing: Alarm[] = [];
  const fnOf = (id: string): HeraldFunction => {
    const fn = functions.get(id);
    if (!fn) throw new Error(`no function ${id}`);
    return fn;
  };

  for (const [name, { spec, queue, dlq }] of queues.pairs) {
    const q = pascal(name);
    const consumer = dlqConsumer(name);
    if (consumer) {
      // Its consumer empties it within seconds (the delivery DLQ: marks each delivery failed), so
      // its depth stays near 0: every message it receives is the event worth knowing.
      const received = alarms.add(scope, {
        name: `${q}DlqReceived`,
        metric: dlq.metricNumberOfMessagesReceived({ period: FIVE_MINUTES, statistic: Stats.SUM }),
        threshold: 1,
        destination: 'ticket',
        description: `Messages of the ${name} queue failed ${spec.maxReceiveCount} times and went to its DLQ, where ${consumer.id} ends them (for delivery: marked failed, category system).`,
      });
      if (name === 'delivery') publishing.push(received);
      alarms.add(scope, {
        name: `${q}DlqAge`,
        metric: ageOf(dlq, FIVE_MINUTES),
        threshold: CONSUMED_DLQ_AGE.toSeconds(),
        destination: 'ticket',
        description: `A message has waited over ${CONSUMED_DLQ_AGE.toMinutes()} minutes in the ${name} DLQ: its consumer ${consumer.id} is not emptying it.`,
      });
    } else {
      alarms.add(scope, {
        name: `${q}DlqDepth`,
        metric: dlq.metricApproximateNumberOfMessagesVisible({
          period: FIVE_MINUTES,
          statistic: Stats.MAXIMUM,
        }),
        threshold: 1,
        destination: 'ticket',
        description:
          name === 'channelSync'
            ? `Channel sync messages failed ${spec.maxReceiveCount} times and wait in the channelSync DLQ. It needs no redrive (the finder sends their channels again), but the failures have a cause.`
            : `Messages of the ${name} queue failed ${spec.maxReceiveCount} times and wait in its DLQ (kept 14 days).`,
      });
      alarms.add(scope, {
        name: `${q}DlqAge`,
        metric: ageOf(dlq, FIVE_MINUTES),
        threshold: Duration.days(DLQ_AGE_DAYS).toSeconds(),
        destination: 'ticket',
        description: `A message has waited over ${DLQ_AGE_DAYS} days in the ${name} DLQ; SQS deletes it after 14.`,
      });
    }
    const backlog = BACKLOG[name];
    if (backlog) {
      const a = alarms.add(scope, {
        name: `${q}BacklogAge`,
        metric: ageOf(queue, backlog.period),
        threshold: backlog.age.toSeconds(),
        comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: backlog.periods,
        destination: 'ticket',
        description: `The oldest message of the ${name} queue has been waiting over ${backlog.age.toMinutes()} minutes for ${backlog.periods} periods of ${backlog.period.toMinutes()} minute(s) running.`,
      });
      if (name === 'delivery') publishing.push(a);
    }
  }

  publishing.push(
    alarms.add(scope, {
      name: 'StreamRelayDlqDepth',
      metric: queues.streamRelayDlq.metricApproximateNumberOfMessagesVisible({
        period: FIVE_MINUTES,
        statistic: Stats.MAXIMUM,
      }),
      threshold: 1,
      destination: 'ticket',
      description:
        'The stream relay gave up on a batch of table changes: its deliveries, events and ladder starts did not happen. The DLQ holds only pointers; replay them before the records leave the stream, 24 h after they were written.',
    }),
  );
  alarms.add(scope, {
    name: 'StreamRelayDlqAge',
    metric: ageOf(queues.streamRelayDlq, FIVE_MINUTES),
    threshold: STREAM_DLQ_AGE.toSeconds(),
    destination: 'page',
    description: `A stream relay batch has waited over ${STREAM_DLQ_AGE.toHours()} h unreplayed: its records leave the stream at most 18 h from now, and then the replay cannot recover them.`,
  });

  for (const worker of workers) {
    const { trigger } = worker;
    const fn = fnOf(worker.id);
    if (trigger.kind === 'stream') {
      publishing.push(
        alarms.add(scope, {
          name: `${pascal(worker.id)}IteratorAge`,
          metric: fn.metric('IteratorAge', { period: ONE_MINUTE, statistic: Stats.MAXIMUM }),
          threshold: 60_000,
          comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
          evaluationPeriods: 5,
          destination: 'ticket',
          description: `The ${worker.id} function has been over 60 s behind the table stream for 5 minutes: posts are dispatched late, and at 24 h records are lost.`,
        }),
      );
    }
    if (trigger.kind === 'schedule') {
      // Period = the schedule's rate: one invocation per period; three missed in a row is dead.
      // Missing data is breaching: a function that never runs publishes no Invocations at all.
      const period = Duration.seconds(Math.max(60, trigger.everySeconds));
      const a = alarms.add(scope, {
        name: `${pascal(worker.id)}Heartbeat`,
        metric: fn.metricInvocations({ period, statistic: Stats.SUM }),
        threshold: 1,
        comparison: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: 3,
        treatMissingData: TreatMissingData.BREACHING,
        destination: 'ticket',
        description: `The scheduled ${worker.id} (every ${trigger.everySeconds} s) did not run in 3 periods in a row.`,
      });
      if (worker.id === 'scheduleSweeper') publishing.push(a);
    }
  }

  // The EMF metrics (functions/core/metrics.ts): totals have no dimensions.
  const emf = (metricName: string, period = FIVE_MINUTES) =>
    new Metric({ namespace: METRICS_NAMESPACE, metricName, period, statistic: Stats.SUM });
  publishing.push(
    alarms.add(scope, {
      name: 'DeliveryFailureRate',
      metric: new MathExpression({
        expression: '100 * FILL(failed, 0) / (FILL(failed, 0) + FILL(published, 0))',
        usingMetrics: { failed: emf(DELIVERY_FAILED), published: emf(DELIVERY_PUBLISHED) },
        period: FIVE_MINUTES,
        label: 'deliveries failed (% of finished)',
      }),
      threshold: 25,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
      destination: 'ticket',
      description:
        'At least 25 % of the deliveries that finished failed, in 3 of the last 5 five-minute periods (all platforms and categories).',
    }),
  );
  alarms.add(scope, {
    name: 'PlatformAppRefused',
    metric: emf(PLATFORM_APP_REFUSED),
    threshold: 1,
    destination: 'page',
    description:
      "A platform refused Herald's app (its client id or secret) while renewing or connecting a channel: check the platform app (herald platform-app set); the channels stay live meanwhile.",
  });

  // Lambda throttles for the whole account and region (no per-function alarm: the functions have
  // no reserved concurrency, so a throttle means the account's limit, whichever function hit it).
  alarms.add(scope, {
    name: 'LambdaThrottles',
    metric: new Metric({
      namespace: 'AWS/Lambda',
      metricName: 'Throttles',
      period: FIVE_MINUTES,
      statistic: Stats.SUM,
    }),
    threshold: 1,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    destination: 'ticket',
    description:
      "Lambda throttled invocations in this account and region in 3 of the last 5 five-minute periods: the account's concurrency limit is reached.",
  });

  addTableAlarms(scope, alarms, table);
  for (const [name, machine] of stateMachines) {
    alarms.add(scope, {
      name: `${pascal(name)}Failed`,
      metric: machine.metricFailed({ period: FIVE_MINUTES, statistic: Stats.SUM }),
      threshold: 1,
      destination: 'ticket',
      description: `An execution of the ${name} state machine failed.`,
    });
  }

  return alarms.addAnyOf(
    scope,
    'PublishingBroken',
    publishing,
    'page',
    `Posts are not going out: one of ${publishing.length} alarms is in ALARM (its name is in the notification's reason).`,
  );
}

/** The DynamoDB operations Herald's adapters call (SystemErrors is reported per operation). */
const TABLE_OPERATIONS = [
  'GetItem',
  'PutItem',
  'UpdateItem',
  'DeleteItem',
  'Query',
  'BatchGetItem',
  'TransactWriteItems',
] as const;

function addTableAlarms(scope: Construct, alarms: Alarms, table: ITable): void {
  const tableMetric = (metricName: string, operation?: string) =>
    new Metric({
      namespace: 'AWS/DynamoDB',
      metricName,
      dimensionsMap: { TableName: table.tableName, ...(operation ? { Operation: operation } : {}) },
      period: FIVE_MINUTES,
      statistic: Stats.SUM,
    });
  alarms.add(scope, {
    name: 'TableThrottles',
    metric: new MathExpression({
      expression: 'FILL(reads, 0) + FILL(writes, 0)',
      usingMetrics: { reads: tableMetric('ReadThrottleEvents'), writes: tableMetric('WriteThrottleEvents') },
      period: FIVE_MINUTES,
      label: 'table throttle events',
    }),
    threshold: 1,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    destination: 'ticket',
    description: 'DynamoDB throttled requests to the table in 3 of the last 5 five-minute periods.',
  });
  const usingMetrics = Object.fromEntries(
    TABLE_OPERATIONS.map((op) => [op.toLowerCase(), tableMetric('SystemErrors', op)]),
  );
  alarms.add(scope, {
    name: 'TableSystemErrors',
    metric: new MathExpression({
      expression: TABLE_OPERATIONS.map((op) => `FILL(${op.toLowerCase()}, 0)`).join(' + '),
      usingMetrics,
      period: FIVE_MINUTES,
      label: 'table system errors',
    }),
    threshold: 1,
    evaluationPeriods: 5,
    datapointsToAlarm: 2,
    destination: 'page',
    description:
      'DynamoDB answered the table with internal errors (HTTP 500) in 2 of the last 5 five-minute periods.',
  });
}

// ---- API ---------------------------------------------------------------------------------------

export function addApiAlarms(scope: Construct, alarms: Alarms, api: IHttpApi): void {
  alarms.add(scope, {
    name: 'ApiServerErrorRate',
    metric: new MathExpression({
      expression: '100 * FILL(errors, 0) / requests',
      usingMetrics: {
        errors: api.metricServerError({ period: FIVE_MINUTES, statistic: Stats.SUM }),
        requests: api.metricCount({ period: FIVE_MINUTES, statistic: Stats.SUM }),
      },
      period: FIVE_MINUTES,
      label: 'API 5xx (% of requests)',
    }),
    threshold: 5,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    destination: 'page',
    description: 'At least 5 % of API requests answered 5xx in 3 of the last 5 five-minute periods.',
  });
  alarms.add(scope, {
    name: 'ApiLatencyP99',
    metric: api.metricLatency({ period: FIVE_MINUTES, statistic: Stats.p(99) }),
    threshold: 5_000,
    comparison: ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 5,
    datapointsToAlarm: 3,
    destination: 'ticket',
    description: "The API's p99 latency was over 5 s in 3 of the last 5 five-minute periods.",
  });
}
