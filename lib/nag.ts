import { type App, type CfnResource, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import type { HeraldStack } from './herald-stack.ts';

// cdk-nag (AwsSolutions pack) runs as a CDK validation plugin: any finding that is not acknowledged
// here fails synthesis, `cdk synth` and `cdk deploy` included. Each acknowledgement names the exact
// finding on the exact construct (never the whole stack), so a new resource is checked afresh.

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
    'X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) supports no resource-level ' +
    'permissions; for the stream relay also dynamodb:ListStreams, which only accepts "*".',
  'AwsSolutions-IAM5[Resource::<table>/index/*]':
    'grantReadData/grantReadWriteData cover the indexes of this one table (table ARN + /index/*); the ' +
    'table has exactly one index, gsi1, which the access patterns query.',
  'AwsSolutions-IAM5[Action::kms:GenerateDataKey*]':
    'Writing items to a table encrypted with a customer managed key needs data keys; the statement is ' +
    'scoped to that single key (from grantReadWriteData).',
  'AwsSolutions-IAM5[Action::kms:ReEncrypt*]':
    'Part of the KMS permissions grantReadWriteData gives for a customer managed table key; scoped to ' +
    'that single key.',
  'AwsSolutions-L1':
    'Runtime pinned to nodejs22.x on purpose: bundles target node22 and are tested on it; moving to a ' +
    'newer runtime is a deliberate, tested upgrade rather than drift.',
  'AwsSolutions-SQS3':
    'StreamRelayDlq is itself a dead-letter queue: the on-failure destination of the table stream ' +
    'event source mapping (cdk-nag only recognises redrive policies of other queues).',
};

function acknowledge(scope: IConstruct, key: keyof typeof NAG_ACKNOWLEDGEMENTS, id: string = key): void {
  const reason = NAG_ACKNOWLEDGEMENTS[key];
  if (!reason) throw new Error(`no reason written for ${key}`);
  Validations.of(scope).acknowledge({ id, reason });
}

/** Acknowledges the findings we accept, each on the construct it belongs to. */
export function acknowledgeNagFindings(stack: HeraldStack): void {
  acknowledge(stack.api, 'AwsSolutions-APIG4');
  acknowledge(stack.cursorSecret, 'AwsSolutions-SMG4');
  acknowledge(stack.streamRelayDlq, 'AwsSolutions-SQS3');

  const tableLogicalId = stack.getLogicalId(stack.table.node.defaultChild as CfnResource);
  for (const fn of stack.functions.values()) {
    acknowledge(fn, 'AwsSolutions-L1');
    const role = fn.role;
    if (!role) throw new Error(`${fn.node.id} has no role`);
    acknowledge(role, 'AwsSolutions-IAM5[Resource::*]');
    if (fn.tableAccess !== undefined) {
      acknowledge(
        role,
        'AwsSolutions-IAM5[Resource::<table>/index/*]',
        `AwsSolutions-IAM5[Resource::<${tableLogicalId}.Arn>/index/*]`,
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

/** The whole nag wiring, used by bin/app.ts and by the stack test alike. */
export function applyNag(app: App, stack: HeraldStack): void {
  addNagChecks(app);
  acknowledgeNagFindings(stack);
}
