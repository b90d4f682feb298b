import { ExecutionAlreadyExists, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';
import { ladderExecutionName } from '#core/webhooks';
import { requireEnv } from '#shared/config';
import { lean } from '#shared/sdk';

// Starts the failure ladder for one failure streak. The execution name is derived from the streak,
// and Step Functions answers a repeated start with the same name and input with the same execution,
// so stream retries never start a second ladder.

const sfn = lean(new SFNClient({ maxAttempts: 3 }));

export interface LadderInput {
  org_id: string;
  endpoint_id: string;
  failing_since: string;
  warn_at: string;
  disable_at: string;
}

export async function startLadder(input: LadderInput): Promise<void> {
  try {
    await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: requireEnv('WEBHOOK_LADDER_ARN'),
        name: ladderExecutionName(input.endpoint_id, input.failing_since),
        input: JSON.stringify(input),
      }),
    );
  } catch (err) {
    // Same streak, different deadlines (a changed time scale locally): the running ladder stands.
    if (err instanceof ExecutionAlreadyExists) return;
    throw err;
  }
}
