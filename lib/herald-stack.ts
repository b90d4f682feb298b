import { CfnOutput, type Environment, Stack, type StackProps } from 'aws-cdk-lib';
import type { DomainName, HttpApi, HttpStage } from 'aws-cdk-lib/aws-apigatewayv2';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { Key } from 'aws-cdk-lib/aws-kms';
import type { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import type { Topic } from 'aws-cdk-lib/aws-sns';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import type { StateMachine } from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { Alarms, AlarmTopics, addApiAlarms, addWorkerAlarms, docsBaseOf } from './constructs/alarms.ts';
import { ApiEndpoint, addConsolePage, addOperation, Gateway, type RoutesProps } from './constructs/api.ts';
import { Dashboard } from './constructs/dashboard.ts';
import { Data, Secrets } from './constructs/data.ts';
import { Functions } from './constructs/functions.ts';
import { pascal } from './constructs/ids.ts';
import { Media } from './constructs/media.ts';
import { type QueuePair, Queues } from './constructs/queues.ts';
import { StateMachines } from './constructs/state-machines.ts';
import { Workers } from './constructs/workers.ts';
import type { HeraldFunction } from './herald-function.ts';
import {
  CONSOLE_PATH,
  consolePages,
  type Operation,
  operations,
  type QueueName,
  type StateMachineName,
} from './operations.ts';
import { readStageConfig, removalPolicyFor, type StageConfig } from './stage.ts';

// Herald on AWS is one data stack and stateless sibling stacks (docs/architecture/stacks.md):
//   Herald-<stage>            every stateful resource (table, keys, secret, buckets + CDN, queues,
//                             the HTTP API resource, the alarm topics, a custom domain) and the outputs
//   Herald-<stage>-api-<tag>  the operations of one manifest tag: functions, routes, alarms
//   Herald-<stage>-console    the console pages
//   Herald-<stage>-workers    the workers, the state machines, the queue, stream and table alarms
//   Herald-<stage>-gateway    the $default stage, the MCP server, the fallback route, the API
//                             alarms and the dashboard
// The stateless stacks reference the data stack (CloudFormation exports and imports) and never the
// other way round, so `cdk deploy` finishes the data stack before it creates theirs.

/** Stateless parts that are not operation tags. */
export const FIXED_PARTS = ['console', 'workers', 'gateway'] as const;

/**
 * Where an operation lives: the stack of its manifest tag. The rule reads only the operation
 * itself, so adding one never moves another; a new tag is a new stack.
 */
export function partOf(op: Pick<Operation, 'tag'>): string {
  return `api-${op.tag.toLowerCase()}`;
}

/** Every stateless part of the manifest, in deployment order (the gateway last). */
export function partNames(): string[] {
  const tags = [...new Set(operations.map(partOf))];
  return [...tags, ...FIXED_PARTS];
}

/** The data stack's name for a stage: `Herald-<stage>` (the name a single-stack deployment has). */
export function heraldStackName(stage: string): string {
  return `Herald-${stage}`;
}

/** A stateless stack's name: `Herald-<stage>-<part>`. */
export function partStackName(stage: string, part: string): string {
  return `${heraldStackName(stage)}-${part}`;
}

export interface HeraldDataStackProps extends StackProps {
  readonly config: StageConfig;
}

/**
 * Every stateful resource, each with the logical id it had when Herald was one stack (the blocks of
 * lib/constructs create them directly in this stack; test/unit/lib/stateful-ids.json pins them),
 * and the outputs the admin CLI reads (bin/cli/target.ts).
 */
export class HeraldDataStack extends Stack {
  readonly config: StageConfig;
  readonly data: Data;
  readonly table: ITable;
  readonly tableKey: Key;
  readonly api: HttpApi;
  readonly domain: DomainName | undefined;
  /** The API's origin, no trailing slash: the custom domain's, else the execute-api endpoint. */
  readonly apiUrl: string;
  readonly queues: Queues;
  readonly deliveryQueue: Queue;
  readonly streamRelayDlq: Queue;
  readonly secrets: Secrets;
  readonly cursorSecret: Secret;
  readonly webhookSecretsKey: Key;
  readonly connectionSecretsKey: Key;
  /** The page topic (alarmEmail). */
  readonly alarmTopic: Topic;
  /** The ticket topic (ticketEmail, else alarmEmail). */
  readonly ticketTopic: Topic;
  readonly media: Media;

  constructor(scope: Construct, id: string, props: HeraldDataStackProps) {
    super(scope, id, { ...props, terminationProtection: props.config.protectData });
    const { config } = props;
    this.config = config;
    const removalPolicy = removalPolicyFor(config);

    this.data = new Data(this, { config, removalPolicy });
    this.table = this.data.table;
    this.tableKey = this.data.tableKey;
    this.queues = new Queues(this, { removalPolicy });
    this.deliveryQueue = this.queues.of('delivery').queue;
    this.streamRelayDlq = this.queues.streamRelayDlq;
    this.secrets = new Secrets(this, { config, removalPolicy });
    this.cursorSecret = this.secrets.cursorSecret;
    this.webhookSecretsKey = this.secrets.webhookSecretsKey;
    this.connectionSecretsKey = this.secrets.connectionSecretsKey;
    // Buckets and CDN: a Construct of its own since it was written (ids Media/…).
    this.media = new Media(this, 'Media', { removalPolicy });
    const endpoint = new ApiEndpoint(this, { config });
    this.api = endpoint.api;
    this.domain = endpoint.domain;
    this.apiUrl = endpoint.url;
    const topics = new AlarmTopics(this, { config, removalPolicy });
    this.alarmTopic = topics.page;
    this.ticketTopic = topics.ticket;

    // ---- Outputs (the admin CLI reads them: keep the names) -----------------------------------
    new CfnOutput(this, 'ApiUrl', { value: `${this.apiUrl}/`, description: 'Base URL of the HTTP API' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName });
    new CfnOutput(this, 'DeliveryQueueUrl', { value: this.deliveryQueue.queueUrl });
    new CfnOutput(this, 'StackStage', { value: config.stage });
    new CfnOutput(this, 'MediaBaseUrl', {
      value: this.media.baseUrl,
      description: 'Origin of media asset urls',
    });
    // The admin CLI seals platform app secrets with this key and prints redirect URIs under this URL.
    new CfnOutput(this, 'ConnectionSecretsKeyArn', { value: this.connectionSecretsKey.keyArn });
    const publicUrl = config.publicUrl ?? this.apiUrl;
    new CfnOutput(this, 'PublicUrl', {
      value: publicUrl,
      description: 'Where platforms send people back: {PublicUrl}/oauth/callback/{platform}',
    });
    // Where owners and admins sign in; the admin CLI builds enrollment links on its origin.
    new CfnOutput(this, 'ConsoleUrl', {
      value: `${publicUrl}${CONSOLE_PATH}`,
      description: 'The console: {ConsoleUrl}/sign-in; enrollment links are {ConsoleUrl}/enroll#…',
    });
    // `herald dlq …` and `herald stream replay` (bin/cli/target.ts resolveOps).
    for (const [name, { dlq }] of this.queues.pairs)
      new CfnOutput(this, `${pascal(name)}DlqUrl`, { value: dlq.queueUrl });
    new CfnOutput(this, 'StreamRelayDlqUrl', { value: this.streamRelayDlq.queueUrl });
    new CfnOutput(this, 'TableStreamArn', { value: this.table.tableStreamArn as string });
  }
}

/** The data stack and the stateless stacks of one stage, built from the manifest (lib/operations.ts). */
export class HeraldStacks {
  readonly config: StageConfig;
  readonly data: HeraldDataStack;
  /** The stateless stacks by part (partNames()). */
  readonly parts: ReadonlyMap<string, Stack>;
  /** Every HeraldFunction, keyed by manifest id (operations, console pages, MCP, fallback, workers). */
  readonly functions: ReadonlyMap<string, HeraldFunction>;
  readonly stateMachines: ReadonlyMap<StateMachineName, StateMachine>;
  readonly apiStage: HttpStage;
  readonly queues: ReadonlyMap<QueueName, QueuePair>;
  /** Every alarm's name, as made (docs/operator/alarms.md has a section for each). */
  readonly alarms: Alarms;

  constructor(scope: Construct, config: StageConfig, env?: Environment) {
    this.config = config;
    const removalPolicy = removalPolicyFor(config);
    const data = new HeraldDataStack(scope, heraldStackName(config.stage), {
      config,
      env,
      description: `Herald (${config.stage}): data (table, keys, buckets, queues, the HTTP API)`,
    });
    this.data = data;
    this.queues = data.queues.pairs;

    const parts = new Map<string, Stack>();
    for (const part of partNames()) {
      parts.set(
        part,
        new Stack(scope, partStackName(config.stage, part), {
          env,
          description: `Herald (${config.stage}): ${part} (stateless)`,
        }),
      );
    }
    this.parts = parts;
    const stackOf = (part: string): Stack => {
      const stack = parts.get(part);
      if (!stack) throw new Error(`no stack for part ${part}`);
      return stack;
    };

    const alarms = new Alarms(
      config,
      { page: data.alarmTopic, ticket: data.ticketTopic },
      docsBaseOf(config, data.apiUrl),
    );
    this.alarms = alarms;
    const functions = new Functions({
      config,
      removalPolicy,
      data: data.data,
      secrets: data.secrets,
      media: data.media,
      alarms,
      apiUrl: data.apiUrl,
    });
    this.functions = functions.all;
    const routes: RoutesProps = { config, data: data.data, api: data.api, functions, queues: data.queues };

    for (const op of operations) addOperation(stackOf(partOf(op)), op, routes);
    for (const page of consolePages) addConsolePage(stackOf('console'), page, routes);

    const workersStack = stackOf('workers');
    new Workers(workersStack, { config, data: data.data, queues: data.queues, functions });
    // `herald stream replay` invokes it (bin/cli/target.ts resolveOps reads this stack's outputs).
    new CfnOutput(workersStack, 'StreamRelayFunctionName', {
      value: functions.get('streamRelay').functionName,
    });
    this.stateMachines = new StateMachines(workersStack, {
      removalPolicy,
      functions,
      tracing: config.tracing,
    }).machines;
    addWorkerAlarms(workersStack, alarms, {
      queues: data.queues,
      functions: functions.all,
      table: data.table,
      stateMachines: this.stateMachines,
    });

    const gatewayStack = stackOf('gateway');
    this.apiStage = new Gateway(gatewayStack, { ...routes, removalPolicy, domain: data.domain }).stage;
    addApiAlarms(gatewayStack, alarms, data.api);
    // Last: its alarm widgets list every alarm made above.
    new Dashboard(gatewayStack, {
      config,
      api: data.api,
      queues: data.queues,
      streamRelay: functions.get('streamRelay'),
      alarms,
    });
    // The stage's route settings name route keys of the other stacks: they must exist first.
    for (const [part, stack] of parts) if (part !== 'gateway') gatewayStack.addStackDependency(stack);
  }

  /** The data stack first, then the stateless stacks. */
  get stacks(): Stack[] {
    return [this.data, ...this.parts.values()];
  }

  functionOf(id: string): HeraldFunction {
    const fn = this.functions.get(id);
    if (!fn) throw new Error(`no function ${id}`);
    return fn;
  }
}

/** Adds Herald's stacks for the stage in the app's context (`-c stage=…`, default dev). */
export function addHeraldStacks(scope: Construct, env?: Environment): HeraldStacks {
  return new HeraldStacks(scope, readStageConfig(scope, { region: env?.region }), env);
}
