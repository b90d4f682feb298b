import type { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { type StackPolicy, stackPolicyFor, statefulLogicalIds } from '../../lib/stack-policy.ts';

// `herald stack protect --stack Herald-<stage>`: reads the deployed template of the data stack and
// sets the stack policy of lib/stack-policy.ts on it (CDK cannot set one), so no later deploy can
// replace or delete a stateful resource. Run again after a deploy that adds one (a custom domain).

export interface Protected {
  stack: string;
  protected: string[];
  policy: StackPolicy;
}

export async function protectStack(
  opts: { stack: string; region?: string | undefined },
  cfn?: CloudFormationClient,
): Promise<Protected> {
  const { CloudFormationClient, GetTemplateCommand, SetStackPolicyCommand } = await import(
    '@aws-sdk/client-cloudformation'
  );
  const client = cfn ?? new CloudFormationClient(opts.region ? { region: opts.region } : {});
  const { TemplateBody } = await client.send(
    new GetTemplateCommand({ StackName: opts.stack, TemplateStage: 'Original' }),
  );
  if (!TemplateBody) throw new Error(`stack ${opts.stack} returned no template`);
  let template: { Resources?: Record<string, { Type?: unknown }>; Outputs?: Record<string, unknown> };
  try {
    template = JSON.parse(TemplateBody);
  } catch {
    throw new Error(`stack ${opts.stack}'s template is not JSON: is it a Herald stack?`);
  }
  if (!template.Outputs?.TableName)
    throw new Error(
      `stack ${opts.stack} has no TableName output: give the data stack (Herald-<stage>), not a Herald-<stage>-<part> one`,
    );
  const ids = statefulLogicalIds(template.Resources ?? {});
  const policy = stackPolicyFor(ids);
  await client.send(
    new SetStackPolicyCommand({ StackName: opts.stack, StackPolicyBody: JSON.stringify(policy) }),
  );
  return { stack: opts.stack, protected: ids, policy };
}
