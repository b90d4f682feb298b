// The data stack's stack policy: CloudFormation refuses any update that would replace or delete one
// of its stateful resources (a changed logical id, a property that forces replacement), and allows
// every other update. CDK cannot set a stack policy itself, so `herald stack protect` applies this
// one to a deployed stack (bin/cli/stack-protect.ts); it lasts until it is set again.

/** Resource types whose replacement or deletion loses data, an address or a key people rely on. */
export const STATEFUL_TYPES: ReadonlySet<string> = new Set([
  'AWS::DynamoDB::Table',
  'AWS::KMS::Key',
  'AWS::SecretsManager::Secret',
  'AWS::S3::Bucket',
  'AWS::SQS::Queue',
  'AWS::ApiGatewayV2::Api',
  'AWS::ApiGatewayV2::DomainName',
  'AWS::CloudFront::Distribution',
  'AWS::SNS::Topic',
]);

export interface StackPolicyStatement {
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Principal: '*';
  Resource: string | string[];
}

export interface StackPolicy {
  Statement: StackPolicyStatement[];
}

/** The logical ids of a template's stateful resources, sorted. */
export function statefulLogicalIds(resources: Record<string, { Type?: unknown }>): string[] {
  return Object.entries(resources)
    .filter(([, r]) => typeof r.Type === 'string' && STATEFUL_TYPES.has(r.Type))
    .map(([id]) => id)
    .sort();
}

/** Allow Update:* on everything, deny Update:Replace and Update:Delete on the given logical ids. */
export function stackPolicyFor(logicalIds: readonly string[]): StackPolicy {
  if (!logicalIds.length) throw new Error('no stateful resources to protect: is this the data stack?');
  for (const id of logicalIds)
    if (!/^[A-Za-z0-9]+$/.test(id)) throw new Error(`invalid logical id ${JSON.stringify(id)}`);
  return {
    Statement: [
      { Effect: 'Allow', Action: 'Update:*', Principal: '*', Resource: '*' },
      {
        Effect: 'Deny',
        Action: ['Update:Replace', 'Update:Delete'],
        Principal: '*',
        Resource: logicalIds.map((id) => `LogicalResourceId/${id}`),
      },
    ],
  };
}
