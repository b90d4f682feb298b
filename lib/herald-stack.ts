import { CfnOutput, type Environment, Stack, type StackProps } from 'aws-cdk-lib';
import type { HttpApi, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Key } from 'aws-cdk-lib/aws-kms';
import type { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Topic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { Alarms } from './constructs/alarms.ts';
import { Api } from './constructs/api.ts';
import { Data, Secrets } from './constructs/data.ts';
import { Functions } from './constructs/functions.ts';
import { Media } from './constructs/media.ts';
import { type QueuePair, Queues } from './constructs/queues.ts';
import { StateMachines } from './constructs/state-machines.ts';
import { Workers } from './constructs/workers.ts';
import type { HeraldFunction } from './herald-function.ts';
import { CONSOLE_PATH, type QueueName, type StateMachineName } from './operations.ts';
import { readStageConfig, removalPolicyFor, type StageConfig } from './stage.ts';

export interface HeraldStackProps extends StackProps {
  readonly config: StageConfig;
}

/**
 * Herald on AWS, built from the manifest (lib/operations.ts) by the blocks of lib/constructs: the
 * single table and the secrets' keys (data), the queues, media, one HTTP API route → one Lambda per
 * operation (api), the workers on their triggers, the state machines, and alarms. The blocks create
 * their resources directly in this stack, so logical IDs do not depend on the grouping
 * (lib/constructs/ids.ts).
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
  readonly queues: ReadonlyMap<QueueName, QueuePair>;
  readonly cursorSecret: Secret;
  readonly alarmTopic: Topic;
  readonly media: Media;
  /** Every HeraldFunction, keyed by manifest id (operations, the MCP server, the $default fallback, workers). */
  readonly functions: ReadonlyMap<string, HeraldFunction>;
  readonly webhookSecretsKey: Key;
  readonly connectionSecretsKey: Key;
  readonly stateMachines: ReadonlyMap<StateMachineName, StateMachine>;

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

    const data = new Data(this, { config, removalPolicy });
    this.table = data.table;
    this.tableKey = data.tableKey;

    const queues = new Queues(this);
    this.queues = queues.pairs;
    this.deliveryQueue = queues.of('delivery').queue;
    this.deliveryDlq = queues.of('delivery').dlq;
    this.streamRelayDlq = queues.streamRelayDlq;

    const secrets = new Secrets(this, { config, removalPolicy });
    this.cursorSecret = secrets.cursorSecret;
    this.webhookSecretsKey = secrets.webhookSecretsKey;
    this.connectionSecretsKey = secrets.connectionSecretsKey;

    // Buckets, CDN and the ffmpeg layer: a Construct of its own since it was written (ids Media/…).
    this.media = new Media(this, 'Media', { removalPolicy });

    const functions = new Functions(this, { config, removalPolicy, data, secrets, media: this.media });
    this.functions = functions.all;

    const api = new Api(this, { config, removalPolicy, data, functions });
    this.api = api.api;
    this.apiStage = api.stage;

    new Workers(this, { data, queues, functions });
    this.stateMachines = new StateMachines(this, { removalPolicy, functions }).machines;

    this.alarmTopic = new Alarms(this, {
      config,
      removalPolicy,
      api: this.api,
      queues,
      stateMachines: this.stateMachines,
      functions: functions.all,
    }).topic;

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
    // Where owners and admins sign in; the admin CLI builds enrollment links on its origin.
    new CfnOutput(this, 'ConsoleUrl', {
      value: config.publicUrl
        ? `${config.publicUrl}${CONSOLE_PATH}`
        : `${this.apiStage.url}${CONSOLE_PATH.slice(1)}`,
      description: 'The console: {ConsoleUrl}/sign-in; enrollment links are {ConsoleUrl}/enroll#…',
    });
  }
}

/** Stack name for a stage: `Herald-<stage>`. */
export function heraldStackName(stage: string): string {
  return `Herald-${stage}`;
}

/** Adds the Herald stack for the stage in the app's context (`-c stage=…`, default dev). */
export function addHeraldStack(scope: Construct, env?: Environment): HeraldStack {
  const config = readStageConfig(scope, { region: env?.region });
  return new HeraldStack(scope, heraldStackName(config.stage), {
    config,
    env,
    description: `Herald (${config.stage}): Social Publishing API`,
  });
}
