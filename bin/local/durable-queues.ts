import {
  closeSync,
  existsSync,
  fdatasync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  write,
  writeSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const writeAsync = promisify(write) as (fd: number, text: string) => Promise<unknown>;
const syncAsync = promisify(fdatasync);

// fauxqs keeps its queues in memory; SQS keeps messages until they are deleted. This is the
// narrowest layer that makes the local queues durable without a second queue engine: fauxqs's own
// store, with every change to a message (sent, received, its visibility changed, deleted, moved to
// the dead-letter queue, purged) appended to a journal under the data directory. A request is
// answered only after its changes are written and synced (one write and one fdatasync per batch of
// concurrent requests). At start the journal is folded into the messages that were alive — body,
// attributes, sent time, receive count, and when each becomes visible again (its delay, or the
// visibility deadline of a receive that was in flight) — and those are put back into the queues
// as they are created. Standard queues only (Herald uses no FIFO queue).

/** fauxqs 1.9's message, as its store keeps it. */
export interface StoredMessage {
  messageId: string;
  body: string;
  md5OfBody: string;
  messageAttributes: Record<string, unknown>;
  md5OfMessageAttributes: string;
  sentTimestamp: number;
  approximateReceiveCount: number;
  approximateFirstReceiveTimestamp?: number;
  delayUntil?: number;
}

interface Inflight {
  message: StoredMessage;
  visibilityDeadline: number;
}

/** The parts of fauxqs's queue this layer wraps. */
interface FauxQueue {
  name: string;
  inflightMessages: Map<string, Inflight>;
  enqueue(msg: StoredMessage): void;
  dequeue(max: number, visibility?: number, dlq?: unknown): Array<{ ReceiptHandle: string }>;
  deleteMessage(receiptHandle: string): boolean;
  changeVisibility(receiptHandle: string, timeoutSeconds: number): void;
  purge(): void;
}

type Entry =
  | { t: 'put'; q: string; m: StoredMessage }
  | { t: 'recv'; id: string; n: number; first: number | undefined; until: number }
  | { t: 'vis'; id: string; until: number }
  | { t: 'del'; id: string }
  | { t: 'purge'; q: string };

interface Live {
  q: string;
  m: StoredMessage;
  /** When it is visible again (a receive's deadline), beyond its own delay. */
  until: number;
}

/** Folds journal entries into the messages alive after them. */
export function fold(entries: Iterable<Entry>, live = new Map<string, Live>()): Map<string, Live> {
  for (const e of entries) {
    if (e.t === 'put') {
      // A message moved to a dead-letter queue keeps its id: the put there replaces it here.
      live.set(e.m.messageId, { q: e.q, m: e.m, until: 0 });
    } else if (e.t === 'recv') {
      const l = live.get(e.id);
      if (!l) continue;
      l.m = { ...l.m, approximateReceiveCount: e.n, approximateFirstReceiveTimestamp: e.first };
      l.until = e.until;
    } else if (e.t === 'vis') {
      const l = live.get(e.id);
      if (l) l.until = e.until;
    } else if (e.t === 'del') {
      live.delete(e.id);
    } else {
      for (const [id, l] of live) if (l.q === e.q) live.delete(id);
    }
  }
  return live;
}

/** Reads a journal, skipping a torn last line (a crash mid-write: that request was never answered). */
export function readJournal(file: string): Entry[] {
  if (!existsSync(file)) return [];
  const out: Entry[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as Entry);
    } catch {
      break;
    }
  }
  return out;
}

export class QueueJournal {
  private readonly live: Map<string, Live>;
  private pending: string[] = [];
  private flushing: Promise<void> | undefined;
  private fd: number;
  private bytes = 0;
  private replaying = false;

  constructor(
    private readonly file: string,
    private readonly compactAtBytes = 8 * 1024 * 1024,
  ) {
    this.live = fold(readJournal(file));
    this.fd = this.rewrite();
  }

  /** Messages alive at start, per queue name (taken once, as each queue is created). */
  private restoring(queue: string): Live[] {
    return [...this.live.values()]
      .filter((l) => l.q === queue)
      .sort((a, b) => a.m.sentTimestamp - b.m.sentTimestamp);
  }

  /** Wraps a fauxqs queue so each change to its messages is journaled, and puts back its messages. */
  attach(queue: FauxQueue): void {
    const name = queue.name;
    const enqueue = queue.enqueue.bind(queue);
    const dequeue = queue.dequeue.bind(queue);
    const deleteMessage = queue.deleteMessage.bind(queue);
    const changeVisibility = queue.changeVisibility.bind(queue);
    const purge = queue.purge.bind(queue);
    queue.enqueue = (msg) => {
      enqueue(msg);
      if (!this.replaying) this.append({ t: 'put', q: name, m: msg });
    };
    queue.dequeue = (max, visibility, dlq) => {
      const out = dequeue(max, visibility, dlq);
      for (const r of out) {
        const e = queue.inflightMessages.get(r.ReceiptHandle);
        if (e)
          this.append({
            t: 'recv',
            id: e.message.messageId,
            n: e.message.approximateReceiveCount,
            first: e.message.approximateFirstReceiveTimestamp,
            until: e.visibilityDeadline,
          });
      }
      return out;
    };
    queue.deleteMessage = (handle) => {
      const e = queue.inflightMessages.get(handle);
      const done = deleteMessage(handle);
      if (e) this.append({ t: 'del', id: e.message.messageId });
      return done;
    };
    queue.changeVisibility = (handle, seconds) => {
      const e = queue.inflightMessages.get(handle);
      changeVisibility(handle, seconds);
      if (e) this.append({ t: 'vis', id: e.message.messageId, until: Date.now() + seconds * 1000 });
    };
    queue.purge = () => {
      purge();
      this.append({ t: 'purge', q: name });
    };
    this.replaying = true;
    try {
      for (const l of this.restoring(name)) {
        // Visible again at its delay or its receive's deadline, whichever is later; its consumer
        // died with the process, as a Lambda that times out leaves the message to its deadline.
        const until = Math.max(l.m.delayUntil ?? 0, l.until);
        enqueue({ ...l.m, ...(until > Date.now() ? { delayUntil: until } : { delayUntil: undefined }) });
      }
    } finally {
      this.replaying = false;
    }
  }

  private append(entry: Entry): void {
    fold([entry], this.live);
    this.pending.push(`${JSON.stringify(entry)}\n`);
  }

  /** Writes and syncs what was journaled so far; resolves when it is on disk. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (!this.pending.length) return;
    const text = this.pending.join('');
    this.pending = [];
    this.flushing = (async () => {
      await writeAsync(this.fd, text);
      await syncAsync(this.fd);
      this.bytes += Buffer.byteLength(text);
      if (this.bytes > this.compactAtBytes) {
        closeSync(this.fd);
        this.fd = this.rewrite();
      }
    })();
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  close(): void {
    closeSync(this.fd);
  }

  /** Replaces the journal with one `put` per live message (its receive count and deadline folded in). */
  private rewrite(): number {
    const tmp = `${this.file}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    let text = '';
    for (const l of this.live.values()) {
      const until = Math.max(l.m.delayUntil ?? 0, l.until);
      const m = { ...l.m, ...(until ? { delayUntil: until } : {}) };
      text += `${JSON.stringify({ t: 'put', q: l.q, m })}\n`;
    }
    writeSync(fd, text);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, this.file);
    // The rename itself is durable once the directory is synced.
    const dir = openSync(dirname(this.file), 'r');
    fsyncSync(dir);
    closeSync(dir);
    this.bytes = statSync(this.file).size;
    return openSync(this.file, 'a');
  }
}

/** fauxqs's SqsStore class (not exported by the package), whose createQueue this layer hooks. */
export async function journaledStore(journal: QueueJournal): Promise<unknown> {
  // The package exports only its entry point; its files sit in node_modules as they shipped.
  const paths = createRequire(import.meta.url).resolve.paths('fauxqs') ?? [];
  const file = paths.map((p) => join(p, 'fauxqs', 'dist', 'sqs', 'sqsStore.js')).find((f) => existsSync(f));
  if (!file) throw new Error('fauxqs is not installed; run `npm ci`');
  const { SqsStore } = (await import(pathToFileURL(file).href)) as {
    SqsStore: new () => { createQueue(...args: unknown[]): FauxQueue };
  };
  const store = new SqsStore();
  const create = store.createQueue.bind(store);
  store.createQueue = (...args: unknown[]) => {
    const queue = create(...args);
    journal.attach(queue);
    return queue;
  };
  return store;
}
