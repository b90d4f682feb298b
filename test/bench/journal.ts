import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { journaledStore, QueueJournal, type StoredMessage } from '../../bin/local/durable-queues.ts';
import { fixed, machine, median, table, today } from './support.ts';

// The local queues' journal (bin/local/durable-queues.ts) under a long-running install: how long
// an SQS call waits for its flush (one message journaled, written and fdatasync'd) when the
// queues hold 5k or 40k live messages, and, when a compaction runs, how long it takes and how
// much of the event loop (shared by the front door, the stream poller and the workers) it holds.

export interface JournalRow {
  live: number;
  /** Bytes of journal per message (its `put` line). */
  lineBytes: number;
  journalMiB: number;
  flushMs: { median: number; p99: number; max: number };
  /** The event loop's longest stall during those calls. */
  loopMaxMs: number;
  compaction?: { ms: number; callsDuring: number; flushMaxMs: number; loopMaxMs: number };
}

// A webhook job's size (the largest of Herald's messages), so 8 MiB is ≈ 20k messages.
const body = JSON.stringify({
  event: { id: `msg_${'x'.repeat(26)}`, type: 'post.published', org_id: `org_${'y'.repeat(26)}` },
  endpoint_id: `whe_${'z'.repeat(26)}`,
  attempt: 3,
  due_at: '2026-11-27T12:00:00.000Z',
  data: { post_id: `pst_${'p'.repeat(26)}`, channel_id: `chn_${'c'.repeat(26)}` },
});

const message = (): StoredMessage => ({
  messageId: randomUUID(),
  body,
  md5OfBody: 'd41d8cd98f00b204e9800998ecf8427e',
  messageAttributes: {},
  md5OfMessageAttributes: '',
  sentTimestamp: Date.now(),
  approximateReceiveCount: 0,
});

const p = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;

async function one(live: number, calls: number): Promise<JournalRow> {
  const dir = mkdtempSync(join(tmpdir(), 'herald-journal-bench-'));
  const file = join(dir, 'queues.journal');
  const journal = new QueueJournal(file);
  try {
    const store = await journaledStore(journal);
    const queue = store.createQueue('herald-webhooks', 'http://q/herald-webhooks', 'arn:q', {});
    for (let i = 0; i < live; i++) {
      queue.enqueue(message());
      if (i % 500 === 499) await journal.flush();
    }
    await journal.flush();
    const lineBytes = statSync(file).size / live;
    // Let a compaction the filling started finish, so the steady calls below measure the steady state.
    await journal.compacting;

    for (let i = 0; i < 50; i++) {
      queue.enqueue(message());
      await journal.flush();
    }
    await journal.compacting;

    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const times: number[] = [];
    for (let i = 0; i < calls; i++) {
      queue.enqueue(message());
      const t = performance.now();
      await journal.flush();
      times.push(performance.now() - t);
    }
    loop.disable();
    const sorted = times.sort((a, b) => a - b);
    const row: JournalRow = {
      live,
      lineBytes,
      journalMiB: statSync(file).size / 1024 / 1024,
      flushMs: { median: median(sorted), p99: p(sorted, 0.99), max: sorted.at(-1) ?? 0 },
      loopMaxMs: loop.max / 1e6,
    };

    // A compaction forced now, with one-message calls going on until it is done.
    const during = monitorEventLoopDelay({ resolution: 1 });
    during.enable();
    const t = performance.now();
    let done = false;
    const running = journal.compact().finally(() => {
      done = true;
    });
    const flushes: number[] = [];
    while (!done) {
      queue.enqueue(message());
      const f = performance.now();
      await journal.flush();
      flushes.push(performance.now() - f);
    }
    if (!(await running)) throw new Error('the compaction failed');
    during.disable();
    row.compaction = {
      ms: performance.now() - t,
      callsDuring: flushes.length,
      flushMaxMs: Math.max(...flushes),
      loopMaxMs: during.max / 1e6,
    };
    return row;
  } finally {
    await journal.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchJournal(opts: { sizes?: number[]; calls?: number } = {}): Promise<JournalRow[]> {
  const rows: JournalRow[] = [];
  for (const live of opts.sizes ?? [5_000, 40_000]) rows.push(await one(live, opts.calls ?? 200));
  return rows;
}

export function journalSection(rows: JournalRow[]): string {
  const ms = (n: number) => fixed(n, n < 10 ? 2 : 0);
  const lines = [
    `Run of ${today()} on ${machine()}, \`npm run bench\` with \`BENCH_ONLY=journal\`: the queue journal`,
    '(`bin/local/durable-queues.ts`) on fauxqs’s own store in one process, filled with webhook-job-sized',
    `messages (≈ ${Math.round(rows[0]?.lineBytes ?? 0)} bytes a journal line), then (after 50 unmeasured) 200 calls that each journal one message and wait for`,
    'its flush (one write and one `fdatasync`), as an SQS answer does. The event loop’s longest stall',
    'is over the same calls.',
    '',
    table(
      ['Live messages', 'Journal', 'Flush median', 'p99', 'max', 'Event loop max stall'],
      ['r', 'r', 'r', 'r', 'r', 'r'],
      rows.map((r) => [
        r.live.toLocaleString('en-US'),
        `${fixed(r.journalMiB)} MiB`,
        `${ms(r.flushMs.median)} ms`,
        `${ms(r.flushMs.p99)} ms`,
        `${ms(r.flushMs.max)} ms`,
        `${ms(r.loopMaxMs)} ms`,
      ]),
    ),
  ];
  if (rows.some((r) => r.compaction))
    lines.push(
      '',
      'A compaction forced after those calls, with one-message calls going on until it is done:',
      '',
      table(
        ['Live messages', 'Compaction', 'Calls meanwhile', 'Their slowest flush', 'Event loop max stall'],
        ['r', 'r', 'r', 'r', 'r'],
        rows.flatMap((r) =>
          r.compaction
            ? [
                [
                  r.live.toLocaleString('en-US'),
                  `${ms(r.compaction.ms)} ms`,
                  String(r.compaction.callsDuring),
                  `${ms(r.compaction.flushMaxMs)} ms`,
                  `${ms(r.compaction.loopMaxMs)} ms`,
                ],
              ]
            : [],
        ),
      ),
    );
  return lines.join('\n');
}
