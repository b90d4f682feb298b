import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  CloudFormationClient,
  GetTemplateCommand,
  SetStackPolicyCommand,
} from '@aws-sdk/client-cloudformation';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, describe, expect, it } from 'vitest';
import { STATEFUL_TYPES, stackPolicyFor, statefulLogicalIds } from '#lib/stack-policy';
import { protectStack } from '../../../bin/cli/stack-protect.ts';

// The stack policy of the data stack (lib/stack-policy.ts) and `herald stack protect`, which reads
// the deployed template and sets it (bin/cli/stack-protect.ts).

const fixture = JSON.parse(readFileSync(path.join(import.meta.dirname, 'stateful-ids.json'), 'utf8')) as {
  resources: Record<string, { Type: string }>;
};
const cfn = mockClient(CloudFormationClient);
afterEach(() => cfn.reset());

const dataTemplate = {
  Resources: { ...fixture.resources, ApiAccessLogsABC: { Type: 'AWS::Logs::LogGroup' } },
  Outputs: { TableName: { Value: { Ref: 'TableCD117FA1' } } },
};

describe('stack policy', () => {
  it('denies Replace and Delete on every pinned stateful resource and allows every other update', () => {
    const ids = statefulLogicalIds(fixture.resources);
    expect(ids).toEqual(expect.arrayContaining(['TableCD117FA1', 'TableKeyF581D96F', 'ApiF70053CD']));
    // Policies (queue, bucket, topic) and the CDN's access control are replaceable without loss.
    expect(ids).not.toContain('DeliveryQueuePolicy260ED33F');
    for (const [id, r] of Object.entries(fixture.resources))
      expect(ids.includes(id), id).toBe(STATEFUL_TYPES.has(r.Type));
    expect(stackPolicyFor(ids)).toEqual({
      Statement: [
        { Effect: 'Allow', Action: 'Update:*', Principal: '*', Resource: '*' },
        {
          Effect: 'Deny',
          Action: ['Update:Replace', 'Update:Delete'],
          Principal: '*',
          Resource: ids.map((id) => `LogicalResourceId/${id}`),
        },
      ],
    });
  });

  it('refuses to protect nothing, or a malformed logical id', () => {
    expect(() => stackPolicyFor([])).toThrow(/no stateful resources/);
    expect(() => stackPolicyFor(['Table/*'])).toThrow(/invalid logical id/);
  });
});

describe('herald stack protect', () => {
  const client = () => new CloudFormationClient({ region: 'eu-west-1' });

  it("sets the policy built from the deployed data stack's template", async () => {
    cfn
      .on(GetTemplateCommand, { StackName: 'Herald-prod', TemplateStage: 'Original' })
      .resolves({ TemplateBody: JSON.stringify(dataTemplate) });
    cfn.on(SetStackPolicyCommand).resolves({});
    const result = await protectStack({ stack: 'Herald-prod' }, client());
    expect(result.protected).toEqual(statefulLogicalIds(fixture.resources));
    expect(result.protected).not.toContain('ApiAccessLogsABC');
    const calls = cfn.commandCalls(SetStackPolicyCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.args[0].input.StackName).toBe('Herald-prod');
    expect(JSON.parse(calls[0]?.args[0].input.StackPolicyBody ?? '')).toEqual(result.policy);
  });

  it('refuses a stateless stack (no TableName output) and sets nothing', async () => {
    cfn.on(GetTemplateCommand).resolves({
      TemplateBody: JSON.stringify({ Resources: { F: { Type: 'AWS::Lambda::Function' } } }),
    });
    await expect(protectStack({ stack: 'Herald-prod-workers' }, client())).rejects.toThrow(/data stack/);
    expect(cfn.commandCalls(SetStackPolicyCommand)).toHaveLength(0);
  });

  it('refuses a template that is not JSON', async () => {
    cfn.on(GetTemplateCommand).resolves({ TemplateBody: 'Resources:\n  X: {}' });
    await expect(protectStack({ stack: 'Other' }, client())).rejects.toThrow(/not JSON/);
    expect(cfn.commandCalls(SetStackPolicyCommand)).toHaveLength(0);
  });
});
