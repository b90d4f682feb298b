import { Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { IHttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  ComparisonOperator,
  type IMetric,
  Metric,
  Stats,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { METRICS_NAMESPACE, PLATFORM_APP_REFUSED } from '../../functions/core/metrics.ts';
import type { HeraldFunction } from '../herald-function.ts';
import type { StateMachineName } from '../operations.ts';
import type { StageConfig } from '../stage.ts';
import { pascal } from './ids.ts';
import type { Queues } from './queues.ts';

const ALARM_PERIOD = Duration.minutes(5);

export interface AlarmTopicProps {
  readonly config: StageConfig;
  readonly removalPolicy: RemovalPolicy;
}

/**
 * The alarm topic (encrypted, TLS-only, the configured email subscribed), in the data stack so its
 * subscription outlives the stateless stacks. The alarms themselves live next to what they watch
 * (the functions below).
 */
export class AlarmTopic {
  readonly topic: Topic;

  constructor(scope: Construct, { config, removalPolicy }: AlarmTopicProps) {
    const account = Stack.of(scope).account;
    // CloudWatch cannot publish to a topic under the AWS managed SNS key (its key policy is fixed),
    // so the topic gets its own customer managed key that names CloudWatch.
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
    this.topic = new Topic(scope, 'AlarmTopic', {
      displayName: `Herald ${config.stage} alarms`,
      masterKey: alarmKey,
      enforceSSL: true,
    });
    // enforceSSL gives the topic a resource policy, which replaces SNS's default one: CloudWatch
    // must be allowed to publish explicitly.
    this.topic.addToResourcePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: { StringEquals: { 'aws:SourceAccount': account } },
      }),
    );
    if (config.alarmEmail) this.topic.addSubscription(new EmailSubscription(config.alarmEmail));
  }
}

/** One alarm: at least one occurrence in 5 minutes notifies the topic. */
export function addAlarm(
  scope: Construct,
  topic: ITopic,
  id: string,
  metric: IMetric,
  description: string,
): Alarm {
  const a = new Alarm(scope, id, {
    metric,
    threshold: 1,
    evaluationPeriods: 1,
    comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
    treatMissingData: TreatMissingData.NOT_BREACHING,
    alarmDescription: description,
  });
  a.addAlarmAction(new SnsAction(topic));
  return a;
}

export function addApiAlarm(scope: Construct, topic: ITopic, api: IHttpApi): void {
  addAlarm(
    scope,
    topic,
    'Api5xxAlarm',
    api.metricServerError({ period: ALARM_PERIOD, statistic: Stats.SUM }),
    'The HTTP API answered 5xx at least once in 5 minutes.',
  );
}

/** Every DLQ, the stream relay's DLQ and the platform apps refused (the workers' concerns). */
export function addQueueAlarms(scope: Construct, topic: ITopic, queues: Queues): void {
  for (const [name, { spec, dlq }] of queues.pairs) {
    addAlarm(
      scope,
      topic,
      `${pascal(name)}DlqAlarm`,
      dlq.metricNumberOfMessagesSent({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      `Messages of the ${name} queue failed ${spec.maxReceiveCount} times and went to its DLQ.`,
    );
  }
  addAlarm(
    scope,
    topic,
    'StreamRelayDlqDepthAlarm',
    queues.streamRelayDlq.metricApproximateNumberOfMessagesVisible({
      period: ALARM_PERIOD,
      statistic: Stats.MAXIMUM,
    }),
    'Table stream batches the relay could not process wait in the stream relay DLQ.',
  );
  addAlarm(
    scope,
    topic,
    'PlatformAppRefusedAlarm',
    new Metric({
      namespace: METRICS_NAMESPACE,
      metricName: PLATFORM_APP_REFUSED,
      period: ALARM_PERIOD,
      statistic: Stats.SUM,
    }),
    "A platform refused Herald's app (its client id or secret) while renewing or connecting a channel: check the platform app (herald platform-app set); the channels stay live meanwhile.",
  );
}

export function addStateMachineAlarm(
  scope: Construct,
  topic: ITopic,
  name: StateMachineName,
  machine: StateMachine,
): void {
  addAlarm(
    scope,
    topic,
    `${pascal(name)}FailedAlarm`,
    machine.metricFailed({ period: ALARM_PERIOD, statistic: Stats.SUM }),
    `An execution of the ${name} state machine failed.`,
  );
}

export function addFunctionAlarm(scope: Construct, topic: ITopic, id: string, fn: HeraldFunction): void {
  addAlarm(
    scope,
    topic,
    `${id}ErrorsAlarm`,
    fn.metricErrors({ period: ALARM_PERIOD, statistic: Stats.SUM }),
    `Lambda ${id} reported errors.`,
  );
}
