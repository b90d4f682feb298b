import path from 'node:path';
import { CfnOutput, Duration, type Environment, Size, Stack, type StackProps } from 'aws-cdk-lib';
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
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { Effect, PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { HeraldFunction, REPO_ROOT } from './herald-function.ts';
import { Media, PROBE_ARCHITECTURE } from './media.ts';
import {
  type Access,
  apiOperations,
  fallback,
  mcp,
  type Operation,
  operations,
  type QueueName,
  queues,
  type StateMachineName,
  stateMachines,
  workers,
} from './operations.ts';
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
  readonly queues: ReadonlyMap<QueueName, { queue: Queue; dlq: Queue }>;
  readonly cursorSecret: Secret;
  readonly alarmTopic: Topic;
  readonly media: Media;
  /** Every HeraldFunction, keyed by manifest id (operations, the $default fallback, workers). */
  readonly functions: ReadonlyMap<string, HeraldFunction>;
  readonly webhookSecretsKey: Key;
  readonly connectionSecretsKey: Key;
  readonly stateMachines = new Map<StateMachineName, StateMachine>();

  functionOf(id: string): HeraldFunction {
    const fn = this.functions.get(id);
    if (!fn) throw new Error(`no function ${id}`);
    return fn;
  }

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
        projectionType: index.projection === 'ALL' ? ProjectionType.ALL : ProjectionType.KEYS_ONLY,
      });
    }

    // ---- Queues (from the manifest), each with its DLQ -------------------------------------------
    const queueMap = new Map<QueueName, { queue: Queue; dlq: Queue }>();
    for (const spec of queues) {
      const name = spec.name.charAt(0).toUpperCase() + spec.name.slice(1);
      const dlq = new Queue(this, `${name}Dlq`, {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
      });
      const queue = new Queue(this, `${name}Queue`, {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSeconds),
        deadLetterQueue: { queue: dlq, maxReceiveCount: spec.maxReceiveCount },
      });
      queueMap.set(spec.name, { queue, dlq });
    }
    const queueOf = (name: QueueName) => {
      const q = queueMap.get(name);
      if (!q) throw new Error(`no queue ${name}`);
      return q;
    };
    this.deliveryQueue = queueOf('delivery').queue;
    this.deliveryDlq = queueOf('delivery').dlq;
    this.queues = queueMap;

    // ---- Cursor secret -------------------------------------------------------------------------
    // HMAC key that makes list cursors tamper-evident. It encrypts no data and is no credential:
    // every list query is still scoped to the caller's organization by its API key.
    this.cursorSecret = new Secret(this, 'CursorSecret', {
      description: `Herald ${config.stage}: HMAC key for opaque list cursors`,
      generateSecretString: { passwordLength: 48, excludePunctuation: true },
      removalPolicy,
    });

    // ---- Webhook signing secrets -----------------------------------------------------------------
    // A key of their own: only the functions that seal (create, rotate) or open (deliver, test)
    // secrets may use it, and the encryption context binds each ciphertext to its endpoint.
    this.webhookSecretsKey = new Key(this, 'WebhookSecretsKey', {
      description: `Herald ${config.stage}: encryption of webhook signing secrets`,
      enableKeyRotation: true,
      removalPolicy,
    });

    // ---- Connection secrets ----------------------------------------------------------------------
    // Channel tokens, the platform apps' client secrets and in-flight grants, sealed per value
    // (envelope encryption: GenerateDataKey, then AES-GCM) under a context naming whose they are.
    // Only the functions that connect, publish, sync or disconnect may use it.
    this.connectionSecretsKey = new Key(this, 'ConnectionSecretsKey', {
      description: `Herald ${config.stage}: encryption of channel tokens and platform app secrets`,
      enableKeyRotation: true,
      removalPolicy,
    });

    // ---- Media (buckets, CDN, ffmpeg layer) ------------------------------------------------------
    this.media = new Media(this, 'Media', { removalPolicy });

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

    const makeFunction = (
      id: string,
      entry: string,
      access: Access,
      timeoutSeconds?: number,
      memoryMb?: Operation['memoryMb'],
      bundleAliases?: Record<string, string>,
    ): HeraldFunction => {
      const fn = new HeraldFunction(this, id, {
        entry,
        ...(bundleAliases ? { bundleAliases } : {}),
        ...(timeoutSeconds ? { timeout: Duration.seconds(timeoutSeconds) } : {}),
        ...(memoryMb ? { memorySize: memoryMb } : {}),
        logRemovalPolicy: removalPolicy,
        environment: { HERALD_DOCS_URL: config.docsUrl },
        // Only the probe function gets the ffmpeg/ffprobe layer (and its architecture, and /tmp room
        // for a 1 GiB video plus its poster).
        ...(access.ffmpeg
          ? {
              layers: [this.media.ffmpegLayer],
              architecture: PROBE_ARCHITECTURE,
              ephemeralStorageSize: Size.gibibytes(2),
            }
          : {}),
      });
      if (access.media) {
        this.media.grant(fn, access.media);
        for (const [k, v] of Object.entries(this.media.environment())) fn.addEnvironment(k, v);
      }
      if (access.ffmpeg) {
        fn.addEnvironment('HERALD_FFPROBE_PATH', '/opt/bin/ffprobe');
        fn.addEnvironment('HERALD_FFMPEG_PATH', '/opt/bin/ffmpeg');
      }
      if (access.table !== 'none') fn.bindTable(this.table, access.table);
      if (access.connectionSecrets?.length) {
        fn.addEnvironment('CONNECTION_SECRETS_KEY_ID', this.connectionSecretsKey.keyArn);
        this.connectionSecretsKey.grant(
          fn,
          ...access.connectionSecrets.map((use) => (use === 'seal' ? 'kms:GenerateDataKey' : 'kms:Decrypt')),
        );
      }
      if (config.publicUrl) fn.addEnvironment('HERALD_PUBLIC_URL', config.publicUrl);
      if (access.secrets?.length) {
        fn.addEnvironment('WEBHOOK_SECRETS_KEY_ID', this.webhookSecretsKey.keyArn);
        this.webhookSecretsKey.grant(
          fn,
          ...access.secrets.map((use) => (use === 'encrypt' ? 'kms:Encrypt' : 'kms:Decrypt')),
        );
      }
      if (access.email && config.notifySender) {
        fn.addEnvironment('HERALD_NOTIFY_FROM', config.notifySender);
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: ['ses:SendEmail'],
            resources: [
              `arn:${this.partition}:ses:${this.region}:${this.account}:identity/${config.notifySender}`,
              `arn:${this.partition}:ses:${this.region}:${this.account}:identity/${config.notifySender.split('@')[1]}`,
            ],
          }),
        );
      }
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
      const fn = makeFunction(op.id, op.entry, op.access, op.timeoutSeconds, op.memoryMb);
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

    // The MCP server: every method of /api/mcp; it invokes the operations' functions, one per tool.
    const mcpFunction = makeFunction(
      mcp.id,
      mcp.entry,
      mcp.access,
      mcp.timeoutSeconds,
      undefined,
      mcp.bundleAliases,
    );
    const operationFunctions = Object.fromEntries(apiOperations.map((op) => [op.id, this.functionOf(op.id)]));
    // Exactly these functions, unqualified (no version/alias wildcard): the tools invoke $LATEST by name.
    mcpFunction.addToRolePolicy(
      new PolicyStatement({
        actions: ['lambda:InvokeFunction'],
        resources: Object.values(operationFunctions).map((fn) => fn.functionArn),
      }),
    );
    if (config.mcpAllowedOrigins.length)
      mcpFunction.addEnvironment('HERALD_MCP_ALLOWED_ORIGINS', config.mcpAllowedOrigins.join(','));
    mcpFunction.addEnvironment(
      'HERALD_OPERATION_FUNCTIONS',
      this.toJsonString(
        Object.fromEntries(Object.entries(operationFunctions).map(([id, fn]) => [id, fn.functionName])),
      ),
    );
    this.api.addRoutes({
      path: mcp.path,
      methods: [HttpMethod.ANY],
      integration: new HttpLambdaIntegration(`${mcp.id}Integration`, mcpFunction, {
        payloadFormatVersion: PayloadFormatVersion.VERSION_2_0,
      }),
    });

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
      const fn = makeFunction(worker.id, worker.entry, worker.access, worker.timeoutSeconds);
      for (const name of worker.access.sends ?? []) {
        queueOf(name).queue.grantSendMessages(fn);
        fn.addEnvironment(queues.find((q) => q.name === name)?.env ?? '', queueOf(name).queue.queueUrl);
      }
      const trigger = worker.trigger;
      if (trigger.kind === 'stream') {
        fn.addEventSource(
          new DynamoEventSource(this.table, {
            startingPosition: StartingPosition.TRIM_HORIZON,
            batchSize: trigger.batchSize,
            bisectBatchOnError: true,
            retryAttempts: trigger.retryAttempts,
            reportBatchItemFailures: true,
            maxRecordAge: Duration.seconds(trigger.maxRecordAgeSeconds),
            onFailure: new SqsDlq(this.streamRelayDlq),
            filters: trigger.entities.map((entity) =>
              FilterCriteria.filter({
                dynamodb: { NewImage: { entity: { S: FilterRule.isEqual(entity) } } },
              }),
            ),
          }),
        );
      } else if (trigger.kind === 'queue') {
        const q = queueOf(trigger.queue);
        fn.addEventSource(
          new SqsEventSource(trigger.dlq ? q.dlq : q.queue, {
            batchSize: trigger.batchSize,
            reportBatchItemFailures: true,
            maxConcurrency: Math.max(2, trigger.concurrency),
          }),
        );
      } else if (trigger.kind === 'schedule') {
        new Rule(this, `${worker.id}Schedule`, {
          schedule: Schedule.rate(Duration.seconds(trigger.everySeconds)),
          targets: [new LambdaFunction(fn, { retryAttempts: 0 })],
        });
      }
    }

    // ---- State machines (ASL files; Task states invoke workers by `${<worker>FunctionArn}`) -------
    for (const spec of stateMachines) {
      const name = spec.name.charAt(0).toUpperCase() + spec.name.slice(1);
      const tasks = workers.filter((w) => w.trigger.kind === 'task' && w.trigger.stateMachine === spec.name);
      const substitutions = Object.fromEntries(
        tasks.map((w) => [`${w.id}FunctionArn`, this.functionOf(w.id).functionArn]),
      );
      const machine = new StateMachine(this, `${name}StateMachine`, {
        definitionBody: DefinitionBody.fromFile(path.join(REPO_ROOT, spec.definition)),
        definitionSubstitutions: substitutions,
        stateMachineType: StateMachineType.STANDARD,
        tracingEnabled: true,
        logs: {
          destination: new LogGroup(this, `${name}Logs`, {
            retention: RetentionDays.ONE_MONTH,
            removalPolicy,
          }),
          level: LogLevel.ALL,
          includeExecutionData: false,
        },
      });
      for (const w of tasks) this.functionOf(w.id).grantInvoke(machine);
      for (const w of workers.filter((x) => x.access.starts?.includes(spec.name))) {
        machine.grantStartExecution(this.functionOf(w.id));
        this.functionOf(w.id).addEnvironment(spec.env, machine.stateMachineArn);
      }
      this.stateMachines.set(spec.name, machine);
    }

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
    for (const [name, { dlq }] of queueMap) {
      alarm(
        `${name.charAt(0).toUpperCase()}${name.slice(1)}DlqAlarm`,
        dlq.metricNumberOfMessagesSent({ period: ALARM_PERIOD, statistic: Stats.SUM }),
        `Messages of the ${name} queue failed ${queues.find((q) => q.name === name)?.maxReceiveCount} times and went to its DLQ.`,
      );
    }
    alarm(
      'StreamRelayDlqDepthAlarm',
      this.streamRelayDlq.metricApproximateNumberOfMessagesVisible({
        period: ALARM_PERIOD,
        statistic: Stats.MAXIMUM,
      }),
      'Table stream batches the relay could not process wait in the stream relay DLQ.',
    );
    for (const [name, machine] of this.stateMachines) {
      alarm(
        `${name.charAt(0).toUpperCase()}${name.slice(1)}FailedAlarm`,
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

    // ---- Outputs -------------------------------------------------------------------------------
    new CfnOutput(this, 'ApiUrl', { value: this.apiStage.url, description: 'Base URL of the HTTP API' });
    // The admin CLI finds the table through this output: keep the name `TableName`.
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'DeliveryQueueUrl', { value: this.deliveryQueue.queueUrl });
    new CfnOutput(this, 'StackStage', { value: config.stage });
    new CfnOutput(this, 'MediaBaseUrl', {
      value: this.media.baseUrl,
      description: 'Origin of media asset urls',
    });
    // The admin CLI seals platform app secrets with this key and prints redirect URIs under this URL.
    new CfnOutput(this, 'ConnectionSecretsKeyArn', { value: this.connectionSecretsKey.keyArn });
    new CfnOutput(this, 'PublicUrl', {
      value: config.publicUrl ?? this.apiStage.url.replace(/\/$/, ''),
      description: 'Where platforms send people back: {PublicUrl}/oauth/callback/{platform}',
    });
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
