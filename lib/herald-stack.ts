import { CfnOutput, Duration, type Environment, Stack, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import {
  HttpApi,
  HttpMethod,
  HttpRoute,
  HttpRouteKey,
  HttpStage,
  LogGroupLogDestination,
  PayloadFormatVersion,
} from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { Alarm, ComparisonOperator, type IMetric, Stats, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import {
  AttributeType,
  BillingMode,
  ProjectionType,
  StreamViewType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { HeraldFunction } from './herald-function.ts';
import { type Access, fallback, operations, workers } from './operations.ts';
import { readStageConfig, removalPolicyFor, type StageConfig } from './stage.ts';
import { TABLE } from './table-schema.ts';

export interface HeraldStackProps extends StackProps {
  readonly config: StageConfig;
}

const ALARM_PERIOD = Duration.minutes(5);

/** One JSON object per request, from the $context variables of HTTP APIs. */
const ACCESS_LOG_FORMAT = AccessLogFormat.custom(
  JSON.stringify({
    requestId: '$context.requestId',
    ip: '$context.identity.sourceIp',
    requestTime: '$context.requestTime',
    httpMethod: '$context.httpMethod',
    routeKey: '$context.routeKey',
    path: '$context.path',
    status: '$context.status',
    protocol: '$context.protocol',
    responseLength: '$context.responseLength',
    latency: '$context.responseLatency',
    integrationLatency: '$context.integrationLatency',
    integrationError: '$context.integrationErrorMessage',
    userAgent: '$context.identity.userAgent',
  }),
);

/**
 * Herald on AWS: one HTTP API route → one Lambda per manifest operation, the single DynamoDB table,
 * the stream relay that turns "post entered publishing" into delivery-queue messages, and alarms.
 */
export class HeraldStack extends Stack {
  readonly config: StageConfig;
  readonly table: Table;
  readonly tableKey: Key;
  readonly api: HttpApi;
  readonly apiStage: HttpStage;
  readonly deliveryQueue: Queue;
  readonly deliveryDlq: Queue;
  readonly streamRelayDlq: Queue;
  readonly cursorSecret: Secret;
  readonly alarmTopic: Topic;
  /** Every HeraldFunction, keyed by manifest id (operations, the $default fallback, workers). */
  readonly functions: ReadonlyMap<string, HeraldFunction>;

  constructor(scope: Construct, id: string, props: HeraldStackProps) {
    super(scope, id, props);
    const { config } = props;
    this.config = config;
    const removalPolicy = removalPolicyFor(config);
    const functions = new Map<string, HeraldFunction>();
    this.functions = functions;

    // ---- Data --------------------------------------------------------------------------------
    this.tableKey = new Key(this, 'TableKey', {
      description: `Herald ${config.stage}: encryption of the single table and its stream`,
      enableKeyRotation: true,
      removalPolicy,
    });

    this.table = new Table(this, 'Table', {
      partitionKey: { name: TABLE.partitionKey, type: AttributeType.STRING },
      sortKey: { name: TABLE.sortKey, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: TABLE.ttlAttribute,
      stream: StreamViewType.NEW_AND_OLD_IMAGES,
      encryption: TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.tableKey,
      deletionProtection: config.protectData,
      removalPolicy,
    });
    for (const index of TABLE.indexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.name,
        partitionKey: { name: index.partitionKey, type: AttributeType.STRING },
        sortKey: { name: index.sortKey, type: AttributeType.STRING },
        projectionType: ProjectionType.ALL,
      });
    }

    // ---- Delivery queue ------------------------------------------------------------------------
    this.deliveryDlq = new Queue(this, 'DeliveryDlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.deliveryQueue = new Queue(this, 'DeliveryQueue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(60),
      deadLetterQueue: { queue: this.deliveryDlq, maxReceiveCount: 5 },
    });

    // ---- Cursor secret -------------------------------------------------------------------------
    // HMAC key that makes list cursors tamper-evident. It encrypts no data and is no credential:
    // every list query is still scoped to the caller's organization by its API key.
    this.cursorSecret = new Secret(this, 'CursorSecret', {
      description: `Herald ${config.stage}: HMAC key for opaque list cursors`,
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
      removalPolicy,
    });

    // ---- HTTP API ------------------------------------------------------------------------------
    const accessLogs = new LogGroup(this, 'ApiAccessLogs', {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy,
    });
    this.api = new HttpApi(this, 'Api', {
      description: `Herald ${config.stage}: Social Publishing API`,
      createDefaultStage: false,
    });
    // The default stage is declared explicitly: HttpApi's implicit one takes no logging or throttling.
    this.apiStage = new HttpStage(this, 'ApiDefaultStage', {
      httpApi: this.api,
      stageName: '$default',
      autoDeploy: true,
      throttle: { burstLimit: 200, rateLimit: 100 },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: ACCESS_LOG_FORMAT,
      },
    });

    const makeFunction = (id: string, entry: string, access: Access): HeraldFunction => {
      const fn = new HeraldFunction(this, id, {
        entry,
        logRemovalPolicy: removalPolicy,
        environment: { HERALD_DOCS_URL: config.docsUrl },
      });
      if (access.table !== 'none') fn.bindTable(this.table, access.table);
      if (access.cursor) {
        // A CloudFormation dynamic reference ({{resolve:secretsmanager:…}}), resolved at deploy time
        // into the function's configuration. Acceptable because the secret only makes list cursors
        // tamper-evident (see above); it saves a Secrets Manager call on every cold start.
        fn.addEnvironment('HERALD_CURSOR_SECRET', this.cursorSecret.secretValue.unsafeUnwrap());
      }
      functions.set(id, fn);
      return fn;
    };

    for (const op of operations) {
      const fn = makeFunction(op.id, op.entry, op.access);
      // Every API-key request is admitted through the limiter's counters (burst + api_requests).
      if (op.scope !== null) fn.grantRequestCounters(this.table, this.tableKey);
      this.api.addRoutes({
        path: op.path,
        methods: [HttpMethod[op.method]],
        integration: new HttpLambdaIntegration(`${op.id}Integration`, fn, {
          payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
        }),
      });
    }

    // Everything no operation matches ($default route): 404, or 405 with Allow, as problem+json.
    new HttpRoute(this.api, 'DefaultRoute', {
      httpApi: this.api,
      routeKey: HttpRouteKey.DEFAULT,
      integration: new HttpLambdaIntegration(
        `${fallback.id}Integration`,
        makeFunction(fallback.id, fallback.entry, fallback.access),
        { payloadFormatVersion: PayloadFormatVersion.VERSION_2_0 },
      ),
    });

    // ---- Workers -------------------------------------------------------------------------------
    this.streamRelayDlq = new Queue(this, 'StreamRelayDlq', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });

    for (const worker of workers) {
      const fn = makeFunction(worker.id, worker.entry, worker.access);
      if (worker.access.deliveryQueue === 'send') {
        this.deliveryQueue.grantSendMessages(fn);
        fn.addEnvironment('DELIVERY_QUEUE_URL', this.deliveryQueue.queueUrl);
      } else if (worker.access.deliveryQueue === 'consume') {
        this.deliveryQueue.grantConsumeMessages(fn);
        fn.addEnvironment('DELIVERY_QUEUE_URL', this.deliveryQueue.queueUrl);
      }
    }

    const streamRelay = functions.get('streamRelay');
    if (!streamRelay) throw new Error('the workers manifest has no streamRelay');
    streamRelay.addEventSource(
      new DynamoEventSource(this.table, {
        startingPosition: StartingPosition.TRIM_HORIZON,
        batchSize: 100,
        bisectBatchOnError: true,
        retryAttempts: 10,
        reportBatchItemFailures: true,
        maxRecordAge: Duration.days(1),
        onFailure: new SqsDlq(this.streamRelayDlq),
        // Only a post entering `publishing` needs relaying; everything else never wakes the function.
        filters: [
          FilterCriteria.filter({
            dynamodb: {
              NewImage: {
                entity: { S: FilterRule.isEqual('post') },
                status: { S: FilterRule.isEqual('publishing') },
              },
            },
          }),
        ],
      }),
    );

    // ---- Alarms --------------------------------------------------------------------------------
    // CloudWatch cannot publish to a topic under the AWS managed SNS key (its key policy is fixed),
    // so the topic gets its own customer managed key that names CloudWatch.
    const alarmKey = new Key(this, 'AlarmTopicKey', {
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
        conditions: { StringEquals: { 'aws:SourceAccount': this.account } },
      }),
    );
    this.alarmTopic = new Topic(this, 'AlarmTopic', {
      displayName: `Herald ${config.stage} alarms`,
      masterKey: alarmKey,
      enforceSSL: true,
    });
    // enforceSSL gives the topic a resource policy, which replaces SNS's default one: CloudWatch
    // must be allowed to publish explicitly.
    this.alarmTopic.addToResourcePolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        principals: [new ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.alarmTopic.topicArn],
        conditions: { StringEquals: { 'aws:SourceAccount': this.account } },
      }),
    );
    if (config.alarmEmail) this.alarmTopic.addSubscription(new EmailSubscription(config.alarmEmail));

    const alarmAction = new SnsAction(this.alarmTopic);
    const alarm = (id: string, metric: IMetric, description: string): Alarm => {
      const a = new Alarm(this, id, {
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
      this.api.metricServerError({ period: ALARM_PERIOD, statistic: Stats.SUM }),
      'The HTTP API answered 5xx at least once in 5 minutes.',
    );
    alarm(
      'DeliveryDlqDepthAlarm',
      this.deliveryDlq.metricApproximateNumberOfMessagesVisible({
        period: ALARM_PERIOD,
        statistic: Stats.MAXIMUM,
      }),
      'Delivery messages failed 5 times and wait in the delivery DLQ.',
    );
    alarm(
      'StreamRelayDlqDepthAlarm',
      this.streamRelayDlq.metricApproximateNumberOfMessagesVisible({
        period: ALARM_PERIOD,
        statistic: Stats.MAXIMUM,
      }),
      'Table stream batches the relay could not process wait in the stream relay DLQ.',
    );
    for (const [id, fn] of functions) {
      alarm(
        `${id}ErrorsAlarm`,
        fn.metricErrors({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        `Lambda ${id} reported errors.`,
      );
    }

    // ---- Outputs -------------------------------------------------------------------------------
    new CfnOutput(this, 'ApiUrl', { value: this.apiStage.url, description: 'Base URL of the HTTP API' });
    // The admin CLI finds the table through this output: keep the name `TableName`.
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'DeliveryQueueUrl', { value: this.deliveryQueue.queueUrl });
    new CfnOutput(this, 'StackStage', { value: config.stage });
  }
}

/** Stack name for a stage: `Herald-<stage>`. */
export function heraldStackName(stage: string): string {
  return `Herald-${stage}`;
}

/** Adds the Herald stack for the stage in the app's context (`-c stage=…`, default dev). */
export function addHeraldStack(scope: Construct, env?: Environment): HeraldStack {
  const config = readStageConfig(scope);
  return new HeraldStack(scope, heraldStackName(config.stage), {
    config,
    env,
    description: `Herald (${config.stage}): Social Publishing API`,
  });
}
