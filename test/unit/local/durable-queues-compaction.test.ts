import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  fold,
  type JournalOptions,
  journaledStore,
  QueueJournal,
  readJournal,
  type StoredMessage,
} from '../../../bin/local/durable-queues.ts';
import { LOCAL_CREDENTIALS, LOCAL_REGION, type Queues, startQueues } from '../../../bin/local/services.ts';
import { clearFaults, faultState, injectFault } from './support/fs-faults.ts';

vi.mock('node:fs', async (importOriginal) =>
  (await import('./support/fs-faults.ts')).faultyFs(importOriginal as never),
);

// The queue journal compacts beside the request path, once it has doubled since the last
// compaction, and a compaction that fails (full disk) leaves the journal as it was: nothing
// acknowledged is lost, nothing deleted comes back, whatever the compactions did meanwhile.

let dir = '';
const running: Queues[] = [];
const logged: string[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'herald-compaction-'));
  clearFaults();
  logged.length = 0;
});
afterEach(async () => {
  clearFaults();
  for (const q of running.splice(0)) await q.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

const file = () => join(dir, 'queues.journal');
const options: JournalOptions = { compactAtBytes: 4096, retryAfterMs: 0, log: (l) => logged.push(l) };

async function start(opts = options) {
  const q = await startQueues(file(), opts);
  running.push(q);
  const sqs = new SQSClient({
    endpoint: q.endpoint,
    region: LOCAL_REGION,
    credentials: LOCAL_CREDENTIALS,
    useQueueUrlAsEndpoint: false,
    maxAttempts: 1,
  });
  return { q, sqs, url: q.queues.delivery.url, journal: q.journal as QueueJournal };
}

type State = 'visible' | 'in flight' | 'deleted';
interface Expected {
  body: string;
  receives: number;
  state: State;
}

describe('compaction of the queue journal', () => {
  it('keeps every acknowledged message with its state, and none that was deleted, across compactions, failed ones and a restart', async () => {
    // Arrange
    const a = await start();
    const model = new Map<string, Expected>();
    let calls = 0;
    let n = 0;
    const send = async () => {
      const body = `m${n++}`;
      const r = await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: body }));
      calls++;
      model.set(String(r.MessageId), { body, receives: 0, state: 'visible' });
    };
    const round = async () => {
      await Promise.all(Array.from({ length: 8 }, send));
      const got = await a.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: a.url,
          MaxNumberOfMessages: 6,
          MessageSystemAttributeNames: ['ApproximateReceiveCount'],
        }),
      );
      calls++;
      const msgs = got.Messages ?? [];
      for (const m of msgs)
        Object.assign(model.get(String(m.MessageId)) as Expected, {
          receives: Number(m.Attributes?.ApproximateReceiveCount),
          state: 'in flight',
        });
      // Three deleted, one made visible again (while it has receives left), the rest stay in flight.
      await Promise.all(
        msgs.slice(0, 3).map(async (m) => {
          await a.sqs.send(new DeleteMessageCommand({ QueueUrl: a.url, ReceiptHandle: m.ReceiptHandle }));
          calls++;
          (model.get(String(m.MessageId)) as Expected).state = 'deleted';
        }),
      );
      const back = msgs[3];
      if (back && (model.get(String(back.MessageId)) as Expected).receives < 4) {
        await a.sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: a.url,
            ReceiptHandle: back.ReceiptHandle,
            VisibilityTimeout: 0,
          }),
        );
        calls++;
        (model.get(String(back.MessageId)) as Expected).state = 'visible';
      }
    };

    // Act: rounds, with compactions that are slow (requests go on during them) and that fail.
    for (let r = 0; r < 40; r++) {
      if (r === 5) injectFault({ op: 'fsync', path: /\.compacting$/, times: 4, delayMs: 40 });
      if (r === 15) injectFault({ op: 'rename', path: /\.compacting$/, times: 1 });
      if (r === 25) injectFault({ op: 'write', path: /\.compacting$/, times: 1, partial: true });
      await round();
      await a.journal.compacting;
    }
    const stats = { ...a.journal.stats };
    // Restarted as after a crash: the first process never closes its journal.
    const b = await start();

    // Assert
    expect(stats.failedCompactions).toBe(2);
    expect(stats.compactions).toBeGreaterThanOrEqual(3);
    // Amortised: far fewer compactions than calls (each call's journal line is ≈ 100–400 bytes).
    expect(stats.compactions).toBeLessThan(calls / 10);
    expect(logged.filter((l) => l.includes('compacting')).length).toBe(2);
    expect(readdirSync(dir).filter((f) => f !== 'queues.journal')).toEqual([]);

    const live = fold(readJournal(file()));
    const alive = [...model].filter(([, e]) => e.state !== 'deleted');
    expect([...live.keys()].sort()).toEqual(alive.map(([id]) => id).sort());
    const now = Date.now();
    for (const [id, e] of alive) {
      const l = live.get(id);
      expect({ id, body: l?.m.body, receives: l?.m.approximateReceiveCount }).toEqual({
        id,
        body: e.body,
        receives: e.receives,
      });
      // In flight: visible again at its receive's deadline (120 s); visible: now.
      const until = Math.max(l?.until ?? 0, l?.m.delayUntil ?? 0);
      expect({ id, inFlight: until > now }).toEqual({ id, inFlight: e.state === 'in flight' });
    }
    const attrs =
      (
        await b.sqs.send(
          new GetQueueAttributesCommand({
            QueueUrl: b.url,
            AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesDelayed'],
          }),
        )
      ).Attributes ?? {};
    expect(attrs).toEqual({
      ApproximateNumberOfMessages: String(alive.filter(([, e]) => e.state === 'visible').length),
      ApproximateNumberOfMessagesDelayed: String(alive.filter(([, e]) => e.state === 'in flight').length),
    });
  }, 60_000);

  it('keeps a receive deadline apart from the delay: a message made visible after a compaction is visible after a restart', async () => {
    // Arrange: a message in flight (deadline in 120 s) when the journal is compacted.
    const a = await start();
    await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'nacked' }));
    const got = await a.sqs.send(new ReceiveMessageCommand({ QueueUrl: a.url }));
    expect(await a.journal.compact()).toBe(true);

    // Act: its consumer gives it back, then the stack restarts.
    await a.sqs.send(
      new ChangeMessageVisibilityCommand({
        QueueUrl: a.url,
        ReceiptHandle: got.Messages?.[0]?.ReceiptHandle,
        VisibilityTimeout: 0,
      }),
    );
    const b = await start();

    // Assert
    const again = await b.sqs.send(new ReceiveMessageCommand({ QueueUrl: b.url }));
    expect(again.Messages?.map((m) => m.Body)).toEqual(['nacked']);
  });

  it('runs beside the flush: the call that starts a compaction does not wait for it', async () => {
    // Arrange: a journal past its threshold, whose compaction's fsync takes 800 ms.
    const a = await start({ ...options, compactAtBytes: 2048 });
    injectFault({ op: 'fsync', path: /\.compacting$/, times: 2, delayMs: 800 });

    // Act
    let took = 0;
    while (!a.journal.compacting) {
      const t = performance.now();
      await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'x'.repeat(200) }));
      took = performance.now() - t;
    }
    const t = performance.now();
    await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'during' }));
    const during = performance.now() - t;

    // Assert
    expect(took).toBeLessThan(600);
    expect(during).toBeLessThan(600);
    expect(a.journal.compacting).toBeDefined();
    expect(await a.journal.compacting).toBe(true);
    // Durably swapped: the new file synced before the rename, the directory after it.
    const calls = faultState.calls.map((c) => `${c.op} ${c.path.replace(dir, '')}`);
    const rename = calls.indexOf('rename /queues.journal.compacting');
    expect(calls.slice(0, rename)).toContain('fsync /queues.journal.compacting');
    expect(calls.slice(rename)).toContain('fsync ');
  });

  it('is not triggered on every call: it waits until the journal has doubled since the last one', async () => {
    // Arrange: 200 live messages (≈ 70 KiB of journal), far above the threshold.
    const journal = new QueueJournal(file(), { compactAtBytes: 1024, log: (l) => logged.push(l) });
    const store = await journaledStore(journal);
    const queue = store.createQueue('herald-delivery', 'http://q/herald-delivery', 'arn:q', {});
    const message = (i: number): StoredMessage => ({
      messageId: `id-${i}`,
      body: 'x'.repeat(250),
      md5OfBody: '',
      messageAttributes: {},
      md5OfMessageAttributes: '',
      sentTimestamp: Date.now(),
      approximateReceiveCount: 0,
    });
    for (let i = 0; i < 200; i++) queue.enqueue(message(i));
    await journal.flush();
    await journal.compacting;
    const before = journal.stats.compactions;

    // Act: 200 calls of one message each.
    for (let i = 200; i < 400; i++) {
      queue.enqueue(message(i));
      await journal.flush();
      await journal.compacting;
    }

    // Assert: the journal doubles once in those calls (200 → 400 messages' worth).
    expect(journal.stats.compactions - before).toBe(1);
    await journal.close();
    expect(fold(readJournal(file())).size).toBe(400);
  });

  it('starts on a journal it cannot compact (full disk): cuts the torn tail off and appends', async () => {
    // Arrange: a journal of two messages, a torn last line, and no room for the rewrite at start.
    const a = await start();
    await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'one' }));
    await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'two' }));
    writeFileSync(file(), '{"t":"del","id":"to', { flag: 'a' });
    injectFault({ op: 'openSync', path: /queues\.journal\.tmp$/, times: 1 });

    // Act
    const b = await start();
    await b.sqs.send(new SendMessageCommand({ QueueUrl: b.url, MessageBody: 'three' }));

    // Assert
    expect(logged.some((l) => l.includes('at start failed'))).toBe(true);
    expect([...fold(readJournal(file())).values()].map((l) => l.m.body)).toEqual(['one', 'two', 'three']);
  });

  it('keeps the entries of a write that fails part-way and cuts the part off: the journal stays whole', async () => {
    // Arrange
    const a = await start();
    await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'before' }));
    injectFault({ op: 'write', path: /queues\.journal$/, times: 1, partial: true });

    // Act: the send is refused (its line could not be written), the next one writes both.
    const refused = await a.sqs
      .send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'refused' }))
      .then(
        () => 'answered',
        () => 'refused',
      );
    await a.sqs.send(new SendMessageCommand({ QueueUrl: a.url, MessageBody: 'after' }));

    // Assert: an SQS send that fails may still have been stored (the sender retries; at least once).
    expect(refused).toBe('refused');
    expect(faultState.calls.some((c) => c.op === 'ftruncate')).toBe(true);
    expect([...fold(readJournal(file())).values()].map((l) => l.m.body)).toEqual([
      'before',
      'refused',
      'after',
    ]);
  });
});
