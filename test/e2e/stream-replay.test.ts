import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { LocalStackInfo } from '../../bin/local/stack-file.ts';
import { PLATFORMS } from '../../functions/core/constants.ts';
import { type RunningStack, startLocalStack } from '../support/local-stack.ts';
import { ALL_SCOPES, CREDENTIALS, webhookReceiver } from './helpers.ts';

// A batch the stream relay failed for real, replayed: on a stack of its own (its queues are broken
// on purpose), the events queue is deleted, so relaying a new channel's `channel.connected` fails
// until the mapping gives up and sends the batch's pointers to the stream DLQ. The queue is then
// created again (the fix) and `herald stream replay` hands the batch to the relay: the event
// reaches the webhook endpoint and the stream DLQ is empty.

type Json = Record<string, unknown>;
const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let stack: RunningStack;

async function herald(...args: string[]): Promise<Json> {
  const { stdout } = await run(process.execPath, [join(root, 'bin/herald.js'), ...args, '--json'], {
    env: { ...process.env, HERALD_DATA_DIR: stack.dataDir },
    cwd: root,
  });
  return JSON.parse(stdout) as Json;
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(500);
  }
}

const streamDepth = async () =>
  ((await herald('dlq', 'list')).dlqs as Array<{ queue: string; depth: number }>).find(
    (d) => d.queue === 'stream',
  )?.depth;

beforeAll(async () => {
  const fakes = inject('fakesOrigin');
  stack = await startLocalStack(
    {
      ...Object.fromEntries(
        PLATFORMS.map((p) => [`HERALD_PLATFORM_${p.toUpperCase()}_URL`, `${fakes}/${p}`]),
      ),
      HERALD_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
    },
    Boolean(process.env.HERALD_E2E_VERBOSE),
  );
});

afterAll(async () => {
  await stack?.stop();
});

describe('herald stream replay', () => {
  it('replays a batch the relay dead-lettered once its cause is fixed: the event arrives, the DLQ is empty', async () => {
    const info = JSON.parse(readFileSync(join(stack.dataDir, 'stack.json'), 'utf8')) as LocalStackInfo;
    const events = info.queues.events as { url: string; dlqUrl: string };
    const sqs = new SQSClient({
      endpoint: info.sqsEndpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      useQueueUrlAsEndpoint: false,
    });

    const created = await herald(
      'org',
      'create',
      '--name',
      'Replay',
      '--plan',
      'agency',
      '--owner-email',
      'r@e2e.test',
    );
    const orgId = (created.org as Json).id as string;
    const ownerId = (created.owner as Json).id as string;
    const key = (await herald('key', 'mint', '--org', orgId, '--by', ownerId, '--scopes', ALL_SCOPES))
      .key as string;
    const receiver = await webhookReceiver();
    const endpoint = await fetch(`${stack.baseUrl}/v1/webhook-endpoints`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: receiver.url, event_types: ['channel.connected'], description: 'replay' }),
    });
    expect(endpoint.status).toBe(201);
    expect(await streamDepth()).toBe(0);

    // Break it: the relay's sends of events now fail (QueueDoesNotExist).
    const attributes = (
      await sqs.send(new GetQueueAttributesCommand({ QueueUrl: events.url, AttributeNames: ['All'] }))
    ).Attributes as Record<string, string>;
    await sqs.send(new DeleteQueueCommand({ QueueUrl: events.url }));
    const channel = (
      await herald(
        'channel',
        'connect',
        '--org',
        orgId,
        '--platform',
        'bluesky',
        '--credentials',
        JSON.stringify(CREDENTIALS.bluesky),
      )
    ).id as string;

    // Ten retries with backoff (≈ 31 s), then the on-failure destination.
    await until(
      'the batch in the stream DLQ',
      async () => ((await streamDepth()) ?? 0) > 0 || undefined,
      75_000,
    );
    const shown = await herald('dlq', 'show', '--queue', 'stream');
    const about = (shown.messages as Array<{ about: Json }>)[0]?.about;
    expect(about).toMatchObject({ condition: 'RetryAttemptsExhausted', in_stream: 'yes' });
    const dry = await herald('stream', 'replay', '--dry-run');
    expect(dry).toMatchObject({ dry_run: true, replayed: 0 });
    expect((dry.messages as Json[])[0]).toMatchObject({ status: 'would_replay', entities: { channel: 1 } });
    expect(receiver.ofType('channel.connected')).toHaveLength(0);

    // The fix: the queue as it was (same name, so the same URL the functions have).
    const again = await sqs.send(
      new CreateQueueCommand({
        QueueName: events.url.split('/').at(-1),
        Attributes: {
          VisibilityTimeout: attributes.VisibilityTimeout as string,
          MaximumMessageSize: attributes.MaximumMessageSize as string,
          RedrivePolicy: attributes.RedrivePolicy as string,
        },
      }),
    );
    expect(again.QueueUrl).toBe(events.url);

    const replayed = await herald('stream', 'replay');
    expect(replayed).toMatchObject({ dry_run: false, replayed: 1, kept: 0 });
    expect((replayed.messages as Json[])[0]).toMatchObject({ status: 'replayed', records: 1 });
    await until(
      'channel.connected at the endpoint',
      async () => receiver.ofType('channel.connected')[0],
      20_000,
    );
    const event = JSON.parse(receiver.ofType('channel.connected')[0]?.body ?? '{}') as Json;
    expect((event.data as { channel: { id: string } }).channel.id).toBe(channel);
    expect(await streamDepth()).toBe(0);
    // Replayed once: a second run finds nothing.
    expect(await herald('stream', 'replay')).toMatchObject({ messages: [], replayed: 0 });
    sqs.destroy();
  });
});
