import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { prepareDataDir } from '../../../bin/local/data-dir.ts';
import { writeFileDurably } from '../../../bin/local/durable-file.ts';
import { QueueJournal } from '../../../bin/local/durable-queues.ts';
import { migrateSharedDb } from '../../../bin/local/services.ts';
import { localSecret, writeStackInfo } from '../../../bin/local/stack-file.ts';
import { createSfn } from '../../../bin/local/standins/step-functions.ts';
import { StreamPoller } from '../../../bin/local/stream-poller.ts';
import { lambdaContext } from '../support/fixtures.ts';
import { clearFaults, faultState, injectFault } from './support/fs-faults.ts';

vi.mock('node:fs', async (importOriginal) =>
  (await import('./support/fs-faults.ts')).faultyFs(importOriginal as never),
);

// Every state file of the local stack survives a power cut: written to a temporary file that is
// synced, renamed over the file, and the directory synced (the rename is only durable then). A
// crash at any point leaves the old content or the new one.

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'herald-durable-'));
  clearFaults();
});
afterEach(() => {
  clearFaults();
  rmSync(dir, { recursive: true, force: true });
});

/** The calls on `file`, its temporary file and its directory, in order (paths relative to `dir`). */
const callsAround = (file: string) =>
  faultState.calls
    .filter((c) => c.path === dir || c.path.startsWith(file))
    .map((c) =>
      [
        c.op,
        c.path === dir ? '<dir>' : c.path.slice(dir.length + 1),
        ...(c.to ? [c.to.slice(dir.length + 1)] : []),
      ].join(' '),
    );

/** The file's new content was synced before the rename, and the directory after it. */
function expectDurable(file: string): void {
  const calls = callsAround(file);
  const name = file.slice(dir.length + 1);
  const rename = calls.lastIndexOf(`renameSync ${name}.tmp ${name}`);
  expect(rename, calls.join('\n')).toBeGreaterThan(0);
  expect(calls.slice(0, rename)).toContain(`fsyncSync ${name}.tmp`);
  expect(calls.slice(rename)).toContain('fsyncSync <dir>');
  expect(existsSync(`${file}.tmp`)).toBe(false);
}

describe('writeFileDurably', () => {
  it('writes a temporary file, syncs it, renames it over the file, then syncs the directory', () => {
    const file = join(dir, 'state.json');

    writeFileDurably(file, '{"a":1}');

    expect(callsAround(file)).toEqual([
      'openSync state.json.tmp',
      'writeSync state.json.tmp',
      'fsyncSync state.json.tmp',
      'closeSync state.json.tmp',
      'renameSync state.json.tmp state.json',
      'openSync <dir>',
      'fsyncSync <dir>',
      'closeSync <dir>',
    ]);
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['state.json']);
  });

  it.each([
    ['writeSync', 'the write'],
    ['fsyncSync', 'the sync'],
    ['renameSync', 'the rename'],
  ])('leaves the old content and no temporary file when %s fails (%s)', (op) => {
    const file = join(dir, 'state.json');
    writeFileSync(file, 'old');
    injectFault({ op, path: /state\.json\.tmp$/, times: 1 });

    expect(() => writeFileDurably(file, 'new')).toThrow(/ENOSPC/);

    expect(readFileSync(file, 'utf8')).toBe('old');
    expect(readdirSync(dir)).toEqual(['state.json']);
  });
});

describe('the local stack writes every state file durably', () => {
  it('the stream checkpoints', async () => {
    const streams = mockClient(DynamoDBStreamsClient);
    streams.on(DescribeStreamCommand).resolves({ StreamDescription: { Shards: [{ ShardId: 's1' }] } });
    streams.on(GetShardIteratorCommand).resolves({ ShardIterator: 'it' });
    streams.on(GetRecordsCommand).resolves({
      Records: [
        { eventID: 'e1', dynamodb: { SequenceNumber: '1', ApproximateCreationDateTime: new Date() } },
      ],
      NextShardIterator: 'it2',
    });
    const file = join(dir, 'stream-checkpoints.json');
    const poller = new StreamPoller({
      client: new DynamoDBStreamsClient({ region: 'us-east-1' }),
      streamArn: 'arn:stream',
      handler: async () => ({ batchItemFailures: [] }),
      context: () => lambdaContext('streamRelay'),
      checkpointFile: file,
    });

    await poller.pollOnce();
    streams.restore();

    expectDurable(file);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ s1: { after: '1' } });
  });

  it('the Step Functions executions', () => {
    const file = join(dir, 'step-functions.json');
    const arn = 'arn:aws:states:us-east-1:000000000000:stateMachine:herald-test';
    const sfn = createSfn(
      [
        {
          arn,
          definition: JSON.stringify({
            StartAt: 'P',
            States: { P: { Type: 'Wait', Seconds: 60, End: true } },
          }),
          taskHandlers: {},
        },
      ],
      () => undefined,
      file,
    );

    sfn.call('StartExecution', { stateMachineArn: arn, name: 'one', input: '{}' });
    sfn.abortAll();

    expectDurable(file);
  });

  it('the data format, stack.json and the local secrets', () => {
    prepareDataDir(dir, []);
    writeStackInfo(dir, { pid: process.pid } as never);
    localSecret(dir, 'kms');

    expectDurable(join(dir, 'format.json'));
    expectDurable(join(dir, 'stack.json'));
    expectDurable(join(dir, 'kms.secret'));
  });

  it("the older data directory's database, renamed to its key's name", () => {
    writeFileSync(join(dir, 'shared-local-instance.db'), 'sqlite');

    expect(migrateSharedDb(dir, { accessKeyId: 'k', secretAccessKey: 's' })).toBe('moved');

    const calls = faultState.calls.map(
      (c) => `${c.op} ${c.path === dir ? '<dir>' : c.path.slice(dir.length + 1)}`,
    );
    const rename = calls.indexOf('renameSync shared-local-instance.db');
    expect(rename).toBeGreaterThanOrEqual(0);
    expect(calls.slice(rename)).toContain('fsyncSync <dir>');
  });

  it('the queue journal, rewritten at start', async () => {
    const file = join(dir, 'queues.journal');

    const journal = new QueueJournal(file);
    await journal.close();

    expectDurable(file);
  });
});
