import { Duration, type RemovalPolicy, Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
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
import { Topic } from 'aws-cdk-lib/aws-sns';
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

export interface AlarmsProps {
  readonly config: StageConfig;
  readonly removalPolicy: RemovalPolicy;
  readonly api: HttpApi;
  readonly queues: Queues;
  readonly stateMachines: ReadonlyMap<StateMachineName, StateMachine>;
  readonly functions: ReadonlyMap<string, HeraldFunction>;
}

/**
 * The alarm topic (encrypted, TLS-only, the configured email subscribed) and an alarm on API 5xx,
 * on every DLQ, on failed state machine executions and on every function's errors.
 */
export class Alarms {
  readonly topic: Topic;

  constructor(
    scope: Construct,
    { config, removalPolicy, api, queues, stateMachines, functions }: AlarmsProps,
  ) {
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

    const alarmAction = new SnsAction(this.topic);
    const alarm = (id: string, metric: IMetric, description: string): Alarm => {
      const a = new Alarm(scope, id, {
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
      });
      a.addAlarmAction(alarmAction);
      return a;
    };

    alarm(
      'Api5xxAlarm',
      api.metricServerError({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      'The HTTP API answered 5xx at least once in 5 minutes.',
    );
    for (const [name, { spec, dlq }] of queues.pairs) {
      alarm(
        `${pascal(name)}DlqAlarm`,
        dlq.metricNumberOfMessagesSent({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        `Messages of the ${name} queue failed ${spec.maxReceiveCount} times and went to its DLQ.`,
      );
    }
    alarm(
      'StreamRelayDlqDepthAlarm',
      queues.streamRelayDlq.metricApproximateNumberOfMessagesVisible({
        period: ALARM_PERIOD,
        statistic: Stats.MAXIMUM,
      }),
      'Table stream batches the relay could not process wait in the stream relay DLQ.',
    );
    alarm(
      'PlatformAppRefusedAlarm',
      new Metric({
        namespace: METRICS_NAMESPACE,
        metricName: PLATFORM_APP_REFUSED,
        period: ALARM_PERIOD,
        statistic: Stats.SUM,
      }),
      "A platform refused Herald's app (its client id or secret) while renewing or connecting a channel: check the platform app (herald platform-app set); the channels stay live meanwhile.",
    );
    for (const [name, machine] of stateMachines) {
      alarm(
        `${pascal(name)}FailedAlarm`,
        machine.metricFailed({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        `An execution of the ${name} state machine failed.`,
      );
    }
    for (const [id, fn] of functions) {
      alarm(
        `${id}ErrorsAlarm`,
        fn.metricErrors({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        `Lambda ${id} reported errors.`,
      );
    }
  }
}
