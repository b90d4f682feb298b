import { type App, type CfnResource, Stack, Validations } from 'aws-cdk-lib';
import { HttpRoute } from 'aws-cdk-lib/aws-apigatewayv2';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import { CARD_IMAGE_PREFIX } from '../functions/core/link-cards.ts';
import { QUEUE_BODY_PREFIX } from '../functions/core/messages.ts';
import { FIT_RENDITION_OBJECTS, PROBE_POSTER_OBJECTS } from './constructs/media.ts';
import type { HeraldStacks } from './herald-stack.ts';
import { workers } from './operations.ts';

// cdk-nag (AwsSolutions pack) runs as a CDK validation plugin: any finding that is not acknowledged
// here fails synthesis, `cdk synth` and `cdk deploy` included. Each acknowledgement names the exact
// finding on the exact construct (never the whole stack), so a new resource is checked afresh.
// cdk-nag names a resource of another stack by its export (the import's name), one of the same
// stack by <LogicalId.Attr>: refIn() gives the name a finding on `consumer` uses.

/** Registers the AwsSolutions checks on the app. */
export function addNagChecks(app: App): void {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
}

/** The acknowledgements, one line each, as recorded on the constructs (for docs and review). */
export const NAG_ACKNOWLEDGEMENTS: Readonly<Record<string, string>> = {
  'AwsSolutions-APIG4':
    'Authorization is done by the API-key check in each Lambda pipeline (hashed key lookup and scope ' +
    'check, with rate limits and quotas per key), which API Gateway authorizers cannot express; ' +
    'GET /v1/openapi.json and the $default fallback (404/405 answers) are public by design.',
  'AwsSolutions-SMG4':
    'The cursor secret only makes list cursors tamper-evident (HMAC); rotating it would invalidate every ' +
    'outstanding cursor mid-pagination. It encrypts no data and is not a credential.',
  'AwsSolutions-IAM5[Resource::*]':
    'X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords; only when the stage turns tracing on) ' +
    'supports no resource-level permissions; for the stream relay also dynamodb:ListStreams, which only accepts "*".',
  'AwsSolutions-IAM5[Resource::<table>/index/*]':
    'grantReadData/grantReadWriteData cover the indexes of this one table (table ARN + /index/*); the ' +
    'table has two indexes (lib/table-schema.ts), gsi1 and gsi2, both queried by the access patterns.',
  'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]':
    'Writing items to a table encrypted with a customer managed key needs data keys; the statement is ' +
    'scoped to that single key (from grantReadWriteData).',
  'AwsSolutions-IAM5[Action::kms:ReEncrypt*]':
    'Part of the KMS permissions grantReadWriteData gives for a customer managed table key; scoped to ' +
    'that single key.',
  'AwsSolutions-L1':
    'Runtime pinned to nodejs22.x on purpose: bundles target node22 and are tested on it; moving to a ' +
    'newer runtime is a deliberate, tested upgrade rather than drift.',
  'AwsSolutions-S1':
    'The upload and media buckets are reached only through presigned PUTs (short-lived, per-object), ' +
    'the Lambda roles and CloudFront; every API call that creates or completes an upload is logged with ' +
    'its request id, and CloudTrail data events can be enabled per account. A log bucket per stage is ' +
    'left to the operator.',
  'AwsSolutions-CFR1':
    'Media urls are attached to public social posts and fetched by platforms worldwide; no geo restriction.',
  'AwsSolutions-CFR2':
    'The distribution serves immutable, already-public media objects (GET/HEAD only, no origin logic); ' +
    'a WAF web ACL (a per-month cost) is left to the operator.',
  'AwsSolutions-CFR3':
    'Access logs of public media downloads are optional for operators (standard logging needs a log ' +
    'bucket with ACLs); the API, not the CDN, is where requests are accounted.',
  'AwsSolutions-CFR4':
    'The distribution uses the default *.cloudfront.net certificate (no custom domain is required to ' +
    'deploy Herald); with a custom domain and ACM certificate, TLS 1.2 is the minimum.',
  'AwsSolutions-IAM5[Resource::<bucket>/<prefix>/*]':
    "Object-level S3 permissions on one prefix of one bucket (uploads/*, orgs/*, queue-bodies/*, the posters orgs/*/media/*/_poster.jpg, the renditions orgs/*/media/*/_fit-*, or link cards' images orgs/_cards/media/*): " +
    'object keys are created per asset or message, so they cannot be listed in advance.',
  'AwsSolutions-IAM5[Resource::*]:StateMachine':
    'The state machine role needs CloudWatch Logs delivery and, when the stage turns tracing on, X-Ray (xray:PutTraceSegments, xray:GetSampling*) ' +
    'permissions (logs:CreateLogDelivery and friends), which support no resource-level scoping.',
  'AwsSolutions-SF2':
    'X-Ray tracing is the stage setting `tracing`, off by default: without SDK instrumentation it shows ' +
    'only service-level segments and costs per trace recorded; an operator turns it on to investigate ' +
    '(docs/operator/settings.md).',
  'AwsSolutions-IAM5[Resource::<function>:*]':
    'grantInvoke covers the ladder step function and its versions/aliases (<arn>:*); it names one function.',
  'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]':
    "Dev only: CDK's provider that empties the buckets when a dev stack is destroyed (autoDeleteObjects) " +
    'runs with the AWS managed basic execution role; protected stages retain their buckets and have no such provider.',
  'AwsSolutions-L1:AutoDelete':
    "Dev only: the runtime of CDK's own bucket-emptying provider is chosen by CDK, not by Herald.",
  'AwsSolutions-SQS3':
    'StreamRelayDlq is itself a dead-letter queue: the on-failure destination of the table stream ' +
    'event source mapping (cdk-nag only recognises redrive policies of other queues).',
};

function acknowledge(scope: IConstruct, key: keyof typeof NAG_ACKNOWLEDGEMENTS, id: string = key): void {
  const reason = NAG_ACKNOWLEDGEMENTS[key];
  if (!reason) throw new Error(`no reason written for ${key}`);
  Validations.of(scope).acknowledge({ id, reason });
}

/** `<LogicalId.Arn>` in the resource's own stack; elsewhere the name of the export the import reads. */
function refIn(consumer: Stack, resource: IConstruct, attribute = 'Arn'): string {
  const producer = Stack.of(resource);
  const cfn = resource.node.defaultChild as CfnResource;
  if (producer === consumer) return `<${producer.getLogicalId(cfn)}.${attribute}>`;
  // The same export the reference itself creates (exportValue is idempotent per value).
  const imported = producer.resolve(producer.exportValue(cfn.getAtt(attribute))) as {
    'Fn::ImportValue': string;
  };
  return imported['Fn::ImportValue'];
}

/** An imported resource's ARN as cdk-nag writes it: joins flattened, `{ Ref: X }` as `<X>`. */
function flatArn(node: unknown): string {
  if (typeof node === 'string') return node;
  const n = node as { 'Fn::Join'?: [string, unknown[]]; Ref?: string };
  if (n['Fn::Join']) return n['Fn::Join'][1].map(flatArn).join(n['Fn::Join'][0]);
  if (n.Ref) return `<${n.Ref}>`;
  throw new Error(`cannot flatten ${JSON.stringify(node)}`);
}

/** Acknowledges the findings we accept, each on the construct it belongs to. */
export function acknowledgeNagFindings(stacks: HeraldStacks): void {
  const { data } = stacks;
  acknowledge(data.api, 'AwsSolutions-APIG4');
  for (const stack of stacks.parts.values())
    for (const route of stack.node.findAll().filter((c) => c instanceof HttpRoute))
      acknowledge(route, 'AwsSolutions-APIG4');
  acknowledge(data.cursorSecret, 'AwsSolutions-SMG4');
  acknowledge(data.streamRelayDlq, 'AwsSolutions-SQS3');

  acknowledge(data.media.uploadBucket, 'AwsSolutions-S1');
  acknowledge(data.media.mediaBucket, 'AwsSolutions-S1');
  for (const id of [
    'AwsSolutions-CFR1',
    'AwsSolutions-CFR2',
    'AwsSolutions-CFR3',
    'AwsSolutions-CFR4',
  ] as const)
    acknowledge(data.media.distribution, id);
  const autoDelete = data.node.tryFindChild('Custom::S3AutoDeleteObjectsCustomResourceProvider');
  if (autoDelete) {
    const managed =
      'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]';
    acknowledge(autoDelete, managed);
    acknowledge(autoDelete, 'AwsSolutions-L1:AutoDelete', 'AwsSolutions-L1');
  }

  // `*` is X-Ray's (every function, when tracing is on) and the stream mapping's ListStreams.
  const streamWorkers = new Set(workers.filter((w) => w.trigger.kind === 'stream').map((w) => w.id));
  for (const fn of stacks.functions.values()) {
    const stack = Stack.of(fn);
    acknowledge(fn, 'AwsSolutions-L1');
    const role = fn.role;
    if (!role) throw new Error(`${fn.node.id} has no role`);
    if (stacks.config.tracing || streamWorkers.has(fn.node.id))
      acknowledge(role, 'AwsSolutions-IAM5[Resource::*]');
    const upload = refIn(stack, data.media.uploadBucket);
    const prefixes = [
      `${upload}/uploads/*`,
      `${upload}/${QUEUE_BODY_PREFIX}*`,
      `${refIn(stack, data.media.mediaBucket)}/orgs/*`,
      `${refIn(stack, data.media.mediaBucket)}/${PROBE_POSTER_OBJECTS}`,
      `${refIn(stack, data.media.mediaBucket)}/${FIT_RENDITION_OBJECTS}`,
      `${refIn(stack, data.media.mediaBucket)}/${CARD_IMAGE_PREFIX}media/*`,
    ];
    for (const prefix of prefixes)
      acknowledge(
        role,
        'AwsSolutions-IAM5[Resource::<bucket>/<prefix>/*]',
        `AwsSolutions-IAM5[Resource::${prefix}]`,
      );
    if (fn.tableAccess !== undefined) {
      const table = data.data.imported
        ? flatArn(stack.resolve(data.table.tableArn))
        : refIn(stack, data.table);
      acknowledge(
        role,
        'AwsSolutions-IAM5[Resource::<table>/index/*]',
        `AwsSolutions-IAM5[Resource::${table}/index/*]`,
      );
    }
    if (fn.tableAccess === 'RW') {
      acknowledge(role, 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]');
      acknowledge(role, 'AwsSolutions-IAM5[Action::kms:ReEncrypt*]');
    } else if (fn.countsRequests) {
      acknowledge(role, 'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]');
    }
  }
}

/** The state machines' roles (their Task states invoke one worker each, of the same stack). */
function acknowledgeStateMachines(stacks: HeraldStacks): void {
  for (const machine of stacks.stateMachines.values()) {
    if (!stacks.config.tracing) acknowledge(machine, 'AwsSolutions-SF2');
    acknowledge(
      machine.role,
      'AwsSolutions-IAM5[Resource::*]:StateMachine',
      'AwsSolutions-IAM5[Resource::*]',
    );
    const stack = Stack.of(machine);
    for (const fn of stacks.functions.values()) {
      if (Stack.of(fn) !== stack) continue;
      acknowledge(
        machine.role,
        'AwsSolutions-IAM5[Resource::<function>:*]',
        `AwsSolutions-IAM5[Resource::${refIn(stack, fn)}:*]`,
      );
    }
  }
}

/** The whole nag wiring, used by bin/app.ts and by the stack test alike: every stack is checked. */
export function applyNag(app: App, stacks: HeraldStacks): void {
  addNagChecks(app);
  acknowledgeNagFindings(stacks);
  acknowledgeStateMachines(stacks);
}
