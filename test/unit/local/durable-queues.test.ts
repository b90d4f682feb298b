import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ChangeMessageVisibilityCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fold, JournalCorruptError, readJournal } from '../../../bin/local/durable-queues.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type Queues, startQueues } from '../../../bin/local/services.ts';

// The local queues keep SQS's promise across a crash or a restart: a message whose send was
// acknowledged is there afterwards, with its delay, the visibility deadline of a receive in
// flight and its receive count (so the dead-letter redrive still counts), and a deleted one is not.

let dir = '';
const running: Array<Queues> = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'herald-queues-'));
});
afterEach(async () => {
  for (const q of running.splice(0)) await q.stop();
  rmSync(dir, { recursive: true, force: true });
});

const journal = () => join(dir, 'queues.journal');
const clientOf = (endpoint: string) =>
  new SQSClient({
    endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
  });

async function start() {
  const q = await startQueues(journal());
  running.push(q);
  return { q, sqs: clientOf(q.endpoint), url: q.queues.delivery.url, dlq: q.queues.delivery.dlqUrl };
}

/** Restarts on the same journal without stopping the first (as after a crash: nothing flushed at exit). */
async function restart() {
  return start();
}

const attrs = async (sqs: SQSClient, url: string) =>
  (
    await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesDelayed',
          'ApproximateNumberOfMessagesNotVisible',
        ],
      }),
    )
  ).Attributes ?? {};

describe('the journal', () => {
  it('keeps sent, delayed and in-flight messages, and forgets deleted ones, across a restart', async () => {
    // Arrange
    const a = await start();
    const send = (body: string, delay = 0) =>
      a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: body, DelaySeconds: delay }));
    await send('deleted');
    await send('in flight');
    await send('ready');
    await send('delayed', 600);
    const first = await a.sqs.send(new ReceiveMessageCommand({ QueueUrl: a.url, MaxNumberOfMessages: 2 }));
    const [del, flight] = first.Messages ?? [];
    expect([del?.Body, flight?.Body]).toEqual(['deleted', 'in flight']);
    await a.sqs.send(new DeleteMessageCommand({ QueueUrl: a.url, ReceiptHandle: del?.ReceiptHandle }));

    // Act
    const b = await restart();

    // Assert
    expect(await attrs(b.sqs, b.url)).toEqual({
      ApproximateNumberOfMessages: '1',
      // The one in flight waits out its visibility deadline (120 s), as on SQS; the delayed one its delay.
      ApproximateNumberOfMessagesDelayed: '2',
      ApproximateNumberOfMessagesNotVisible: '0',
    });
    const got = await b.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: b.url,
        MaxNumberOfMessages: 10,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    expect(got.Messages?.map((m) => m.Body)).toEqual(['ready']);
    expect(got.Messages?.[0]?.MessageId).not.toBe(flight?.MessageId);
  });

  it('keeps the receive count: a message received up to maxReceiveCount moves to the DLQ on the next receive', async () => {
    // Arrange: received 5 times (the delivery queue's maxReceiveCount), each time made visible again.
    const a = await start();
    const sent = await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'poison' }));
    for (let i = 0; i < 5; i++) {
      const r = await a.sqs.send(new ReceiveMessageCommand({ QueueUrl: a.url }));
      await a.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: a.url,
          ReceiptHandle: r.Messages?.[0]?.ReceiptHandle,
          VisibilityTimeout: 0,
        }),
      );
    }

    // Act
    const b = await restart();
    const sixth = await b.sqs.send(new ReceiveMessageCommand({ QueueUrl: b.url }));
    const dead = await b.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: b.dlq,
        MessageSystemAttributeNames: ['ApproximateReceiveCount'],
      }),
    );

    // Assert
    expect(sixth.Messages ?? []).toEqual([]);
    expect(dead.Messages?.map((m) => [m.MessageId, m.Body])).toEqual([[sent.MessageId, 'poison']]);
  });

  it('folds to one entry per live message when it starts, and ignores a torn last line', async () => {
    const a = await start();
    for (let i = 0; i < 5; i++)
      await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: `m${i}` }));
    const r = await a.sqs.send(new ReceiveMessageCommand({ QueueUrl: a.url, MaxNumberOfMessages: 3 }));
    for (const m of r.Messages ?? [])
      await a.sqs.send(new DeleteMessageCommand({ QueueUrl: a.url, ReceiptHandle: m.ReceiptHandle }));
    const { appendFileSync } = await import('node:fs');
    appendFileSync(journal(), '{"t":"del","id":"tor');

    await restart();

    const entries = readJournal(journal());
    expect(entries.map((e) => e.t)).toEqual(['put', 'put']);
    expect([...fold(entries).values()].map((l) => l.m.body)).toEqual(['m3', 'm4']);
  });
});

describe('reading the journal', () => {
  const put = (id: string, body: string) =>
    `${JSON.stringify({
      t: 'put',
      q: 'herald-delivery',
      m: {
        messageId: id,
        body,
        md5OfBody: '',
        messageAttributes: {},
        md5OfMessageAttributes: '',
        sentTimestamp: 1,
        approximateReceiveCount: 0,
      },
    })}\n`;

  it.each([
    ['cut short', '{"t":"del","id":"a"'],
    ['whole but without its newline (the write stopped before it: never answered)', '{"t":"del","id":"a"}'],
    ['unreadable', '\u0000\u0000\u0000\n'],
  ])('skips a torn last line (%s)', (_, tail) => {
    writeFileSync(journal(), `${put('a', 'one')}${put('b', 'two')}${tail}`);

    const live = fold(readJournal(journal()));

    expect([...live.values()].map((l) => l.m.body)).toEqual(['one', 'two']);
  });

  it('refuses a damaged line with entries after it, naming the file and the line and what to do', () => {
    writeFileSync(journal(), `${put('a', 'one')}{"t":"put","q":"herald-deli\n${put('b', 'two')}`);

    expect(() => readJournal(journal())).toThrow(JournalCorruptError);
    expect(() => readJournal(journal())).toThrow(
      new RegExp(`${journal()}, line 2: .*delete line 2 .*or move the file away`),
    );
  });

  it('does not start the queues on a damaged journal, and leaves it as it is', async () => {
    const text = `${put('a', 'one')}garbage\n${put('b', 'two')}`;
    writeFileSync(journal(), text);

    await expect(startQueues(journal())).rejects.toThrow(/line 2: not a queue journal entry/);
    expect(readFileSync(journal(), 'utf8')).toBe(text);
  });
});

describe('a crash (kill -9) right after the acknowledgement', () => {
  async function child(): Promise<{ proc: ChildProcess; endpoint: string; url: string }> {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'support/queue-child.ts'), journal()],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const line = await new Promise<string>((ok, fail) => {
      let out = '';
      proc.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('\n')) ok(out.split('\n')[0] as string);
      });
      proc.once('exit', (code) => fail(new Error(`queue child exited ${code}`)));
    });
    const info = JSON.parse(line) as { endpoint: string; queues: Queues['queues'] };
    return { proc, endpoint: info.endpoint, url: info.queues.delivery.url };
  }

  it('never loses an acknowledged send (10 crashes)', async () => {
    const acknowledged: string[] = [];
    for (let i = 0; i < 10; i++) {
      const c = await child();
      const sqs = clientOf(c.endpoint);
      // Several sends in flight; the process dies the instant the first answer arrives.
      await new Promise<void>((done) => {
        let killed = false;
        for (let k = 0; k < 5; k++)
          sqs
            .send(new SendMessageCommand({ QueueUrl: c.url, MessageBody: `${i}-${k}` }))
            .then((r) => {
              if (!killed) {
                killed = true;
                c.proc.kill('SIGKILL');
              }
              acknowledged.push(String(r.MessageId));
            })
            .catch(() => undefined)
            .finally(() => {
              if (killed) setTimeout(done, 50);
            });
      });
      await new Promise((r) =>
        c.proc.exitCode === null && c.proc.signalCode === null ? c.proc.once('exit', r) : r(null),
      );
    }
    const last = await child();
    const sqs = clientOf(last.endpoint);
    const seen = new Set<string>();
    for (;;) {
      const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl: last.url, MaxNumberOfMessages: 10 }));
      if (!r.Messages?.length) break;
      for (const m of r.Messages) seen.add(String(m.MessageId));
    }
    last.proc.kill('SIGKILL');
    expect(acknowledged.length).toBeGreaterThanOrEqual(10);
    expect(acknowledged.filter((id) => !seen.has(id))).toEqual([]);
  }, 60_000);
});
