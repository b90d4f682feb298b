import { App, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { addHeraldStacks, type HeraldStacks } from '#lib/herald-stack';
import { queues } from '#lib/operations';

// The outputs `herald dlq …` and `herald stream replay` read on AWS (bin/cli/target.ts resolveOps):
// the data stack names every DLQ and the table stream, the workers stack the stream relay.
// A dev synthesis without bundling: only the outputs are asserted.

let stacks: HeraldStacks;
let data: Template;
let workersStack: Stack;
let workers: Template;
const logicalId = (stack: Stack, c: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(c.node.defaultChild as never);

beforeAll(() => {
  const app = new App({ context: { stage: 'dev', 'aws:cdk:bundling-stacks': [] } });
  stacks = addHeraldStacks(app, { account: '111111111111', region: 'eu-west-1' });
  data = Template.fromStack(stacks.data);
  workersStack = stacks.parts.get('workers') as Stack;
  workers = Template.fromStack(workersStack);
}, 300_000);

describe('the outputs of the dead-letter and stream commands', () => {
  it("the data stack outputs each DLQ's URL, the stream DLQ's and the table stream's ARN", () => {
    for (const q of queues) {
      const name = `${q.name.charAt(0).toUpperCase()}${q.name.slice(1)}DlqUrl`;
      const dlq = stacks.queues.get(q.name)?.dlq;
      expect(dlq).toBeDefined();
      data.hasOutput(name, { Value: { Ref: logicalId(stacks.data, dlq as never) } });
    }
    data.hasOutput('StreamRelayDlqUrl', {
      Value: { Ref: logicalId(stacks.data, stacks.data.streamRelayDlq) },
    });
    data.hasOutput('TableStreamArn', {
      Value: { 'Fn::GetAtt': [logicalId(stacks.data, stacks.data.table), 'StreamArn'] },
    });
  });

  it("the workers stack outputs the stream relay's function name; the data stack names nothing of it", () => {
    const relay = stacks.functionOf('streamRelay');
    workers.hasOutput('StreamRelayFunctionName', { Value: { Ref: logicalId(workersStack, relay) } });
    expect(JSON.stringify(data.toJSON())).not.toContain('streamRelay');
  });
});
