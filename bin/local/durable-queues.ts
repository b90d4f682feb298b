import {
  close,
  closeSync,
  constants,
  existsSync,
  fdatasync,
  fstatSync,
  fsync,
  ftruncate,
  open,
  openSync,
  readFileSync,
  rename,
  rmSync,
  truncateSync,
  unlink,
  write,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { syncDirectoryAsync, writeFileDurably } from './durable-file.ts';

// fauxqs keeps its queues in memory; SQS keeps messages until they are deleted. This is the
// narrowest layer that makes the local queues durable without a second queue engine: fauxqs's own
// store, with every change to a message (sent, received, its visibility changed, deleted, moved to
// the dead-letter queue, purged) appended to a journal under the data directory. A request is
// answered only after its changes are written and synced (one write and one fdatasync per batch of
// concurrent requests). At start the journal is folded into the messages that were alive — body,
// attributes, sent time, receive count, and when each becomes visible again (its delay, or the
// visibility deadline of a receive that was in flight) — and those are put back into the queues
// as they are created. Standard queues only (Herald uses no FIFO queue).
//
// The journal is rewritten as its live messages at start and, beside the request path, once it
// has doubled since (and is at least 8 MiB): a constant cost per change however many messages are
// alive, where rewriting on every flush past the threshold held the event loop for 200 ms a call
// at 40k messages (BENCHMARKS.md).

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
export interface FauxQueue {
  name: string;
  inflightMessages: Map<string, Inflight>;
  enqueue(msg: StoredMessage): void;
  dequeue(max: number, visibility?: number, dlq?: unknown): Array<{ ReceiptHandle: string }>;
  deleteMessage(receiptHandle: string): boolean;
  changeVisibility(receiptHandle: string, timeoutSeconds: number): void;
  purge(): void;
}

type Entry =
  /** `u`: a compacted message's receive deadline, apart from its delay (a later `vis` replaces it). */
  | { t: 'put'; q: string; m: StoredMessage; u?: number }
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

/**
 * Folds journal entries into the messages alive after them. A change replaces a message's record
 * rather than changing it, so a list of records taken earlier stays as it was (compaction's snapshot).
 */
export function fold(entries: Iterable<Entry>, live = new Map<string, Live>()): Map<string, Live> {
  for (const e of entries) {
    if (e.t === 'put') {
      // A message moved to a dead-letter queue keeps its id: the put there replaces it here.
      // A copy: fauxqs changes its own message objects as they are received.
      live.set(e.m.messageId, { q: e.q, m: { ...e.m }, until: e.u ?? 0 });
    } else if (e.t === 'recv') {
      const l = live.get(e.id);
      if (!l) continue;
      live.set(e.id, {
        q: l.q,
        m: { ...l.m, approximateReceiveCount: e.n, approximateFirstReceiveTimestamp: e.first },
        until: e.until,
      });
    } else if (e.t === 'vis') {
      const l = live.get(e.id);
      if (l) live.set(e.id, { ...l, until: e.until });
    } else if (e.t === 'del') {
      live.delete(e.id);
    } else {
      for (const [id, l] of live) if (l.q === e.q) live.delete(id);
    }
  }
  return live;
}

/** One `put` of a live message with its receive count and deadline (a compacted journal). */
function putLine(l: Live): string {
  return `${JSON.stringify({ t: 'put', q: l.q, m: l.m, ...(l.until ? { u: l.until } : {}) })}\n`;
}

/** A damaged journal: a line that is not an entry, with entries after it. */
export class JournalCorruptError extends Error {}

const KINDS = new Set<unknown>(['put', 'recv', 'vis', 'del', 'purge']);

function parseEntry(text: string): Entry | undefined {
  try {
    const e = JSON.parse(text) as { t?: unknown } | null;
    return e && typeof e === 'object' && KINDS.has(e.t) ? (e as Entry) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A journal's entries, and the length of its whole lines. Only the last line may be torn (cut short
 * or unreadable): a crash mid-write leaves that, and its request was never answered, so it is
 * skipped. A bad line with entries after it is damage, not a crash: entries that were acknowledged
 * follow it, so this refuses (JournalCorruptError) rather than start without them.
 */
export function scanJournal(file: string): { entries: Entry[]; wholeBytes: number; tornTail: boolean } {
  if (!existsSync(file)) return { entries: [], wholeBytes: 0, tornTail: false };
  const buf = readFileSync(file);
  const entries: Entry[] = [];
  let at = 0;
  for (let line = 1; at < buf.length; line++) {
    const nl = buf.indexOf(0x0a, at);
    const end = nl < 0 ? buf.length : nl;
    if (end === at) {
      at = end + 1;
      continue;
    }
    const entry = nl < 0 ? undefined : parseEntry(buf.toString('utf8', at, end));
    if (!entry) {
      if (nl < 0 || nl === buf.length - 1) return { entries, wholeBytes: at, tornTail: true };
      throw new JournalCorruptError(
        `${file}, line ${line}: not a queue journal entry, and entries follow it, so it is damage rather ` +
          'than the torn end a crash leaves. The local queues do not start without the acknowledged ' +
          `messages after it. To start anyway, keep a copy of the file, then either delete line ${line} ` +
          `(\`sed -i '${line}d' ${file}\`; one change to one message is lost) or move the file away ` +
          '(every queued message is lost).',
      );
    }
    entries.push(entry);
    at = nl + 1;
  }
  return { entries, wholeBytes: at, tornTail: false };
}

/** A journal's entries (see scanJournal). */
export function readJournal(file: string): Entry[] {
  return scanJournal(file).entries;
}

export interface JournalOptions {
  /**
   * The journal is compacted (rewritten as its live messages) once it is this big and twice its
   * size after the last compaction, so its cost per change stays constant however many messages
   * are alive.
   */
  compactAtBytes?: number;
  /** After a failed compaction, the wait before the next try (meanwhile the journal grows). */
  retryAfterMs?: number;
  /** Where a failed compaction is reported. */
  log?: (line: string) => void;
}

export class QueueJournal {
  private readonly live: Map<string, Live>;
  private pending: string[] = [];
  /** Entries journaled so far; `pending` holds the last of them. */
  private seq = 0;
  private fd: number;
  /** The journal's size (its whole lines). */
  private bytes: number;
  /** Its size after the last compaction. */
  private compactedBytes: number;
  private replaying = false;
  /** Flushes and a compaction's swap take turns. */
  private lock: Promise<unknown> = Promise.resolve();
  private compaction: Promise<boolean> | undefined;
  /** While a compaction runs: the lines written to the journal after its snapshot (entry `after`). */
  private carried: { after: number; lines: string[] } | undefined;
  private retryAt = 0;
  /** A write failed part-way and cutting it off failed too: cut before writing again. */
  private cutOwed = false;
  /** A compaction renamed the journal and syncing the directory failed: sync before answering. */
  private dirSyncOwed = false;
  private closed = false;
  private readonly compactAtBytes: number;
  private readonly retryAfterMs: number;
  private readonly log: (line: string) => void;
  readonly stats = { compactions: 0, failedCompactions: 0 };

  constructor(
    private readonly file: string,
    opts: JournalOptions = {},
  ) {
    this.compactAtBytes = opts.compactAtBytes ?? 8 * 1024 * 1024;
    this.retryAfterMs = opts.retryAfterMs ?? 60_000;
    this.log = opts.log ?? ((line) => console.error(line));
    rmSync(`${file}.compacting`, { force: true });
    const { entries, wholeBytes } = scanJournal(file);
    this.live = fold(entries);
    let compacted = true;
    try {
      // Compacted at start: the journal is then its live messages, without a torn tail.
      writeFileDurably(file, [...this.live.values()].map(putLine).join(''));
    } catch (err) {
      // A full disk must not keep the queues from starting: go on with the journal as it is, cut
      // after its last whole line (appending after a torn line would bury it mid-journal).
      compacted = false;
      this.retryAt = Date.now() + this.retryAfterMs;
      this.log(
        `queues: compacting ${file} at start failed (${(err as Error).message}); going on with it as it is`,
      );
      if (existsSync(file)) truncateSync(file, wholeBytes);
    }
    this.fd = openSync(file, 'a', 0o600);
    this.bytes = fstatSync(this.fd).size;
    this.compactedBytes = compacted ? this.bytes : 0;
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
    this.seq++;
  }

  /** Writes and syncs what was journaled so far; resolves when it is on disk. */
  flush(): Promise<void> {
    return this.exclusive(() => this.writePending());
  }

  /**
   * Rewrites the journal as its live messages, beside the request path: flushes go on meanwhile and
   * wait only for the swap. Resolves false when it failed: the journal stays as it was, appends go
   * on there, and the next try comes after `retryAfterMs`.
   */
  compact(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    this.compaction ??= this.rewrite()
      .then(
        () => {
          this.stats.compactions++;
          return true;
        },
        (err: unknown) => {
          this.stats.failedCompactions++;
          this.retryAt = Date.now() + this.retryAfterMs;
          this.log(
            `queues: compacting ${this.file} failed (${(err as Error).message}); it keeps growing until the next try in ${Math.round(this.retryAfterMs / 1000)} s`,
          );
          return false;
        },
      )
      .finally(() => {
        this.compaction = undefined;
        this.carried = undefined;
      });
    return this.compaction;
  }

  /** The compaction under way, if any. */
  get compacting(): Promise<boolean> | undefined {
    return this.compaction;
  }

  /** Waits for a compaction under way and for the last flush, then closes the file. */
  async close(): Promise<void> {
    this.closed = true;
    await this.compaction;
    try {
      await this.flush();
    } finally {
      closeSync(this.fd);
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  private async writePending(): Promise<void> {
    if (this.cutOwed) {
      await truncateAsync(this.fd, this.bytes);
      this.cutOwed = false;
    }
    if (this.dirSyncOwed) {
      await syncDirectoryAsync(dirname(this.file));
      this.dirSyncOwed = false;
    }
    if (!this.pending.length) return;
    const lines = this.pending;
    const last = this.seq;
    this.pending = [];
    const buf = Buffer.from(lines.join(''));
    try {
      await writeAll(this.fd, buf);
      await datasyncAsync(this.fd);
    } catch (err) {
      // Kept for the next flush (memory already has them), and what part reached the file is cut
      // off, so a full disk never leaves a torn line in the middle of the journal.
      this.pending = lines.concat(this.pending);
      this.cutOwed = true;
      await truncateAsync(this.fd, this.bytes).then(
        () => {
          this.cutOwed = false;
        },
        () => undefined,
      );
      throw err;
    }
    this.bytes += buf.length;
    const carried = this.carried;
    if (carried) carried.lines.push(...lines.slice(Math.max(0, carried.after - (last - lines.length))));
    this.maybeCompact();
  }

  private maybeCompact(): void {
    if (this.closed || this.compaction || Date.now() < this.retryAt) return;
    if (this.bytes >= Math.max(this.compactAtBytes, 2 * this.compactedBytes)) void this.compact();
  }

  /**
   * Writes the live messages as they are now to a new file in slices (the event loop is never held
   * for long), then the lines flushed to the journal since, then, between two flushes, the last of
   * those, and renames it over the journal. Every acknowledged entry is in the old file until the
   * rename and in the new one after it.
   */
  private async rewrite(): Promise<void> {
    const snapshot = [...this.live.values()];
    const carried = { after: this.seq, lines: [] as string[] };
    this.carried = carried;
    const tmp = `${this.file}.compacting`;
    const fd = await openAsync(tmp);
    let written = 0;
    const put = async (text: string) => {
      const buf = Buffer.from(text);
      await writeAll(fd, buf);
      written += buf.length;
    };
    const drain = async () => {
      while (carried.lines.length) await put(carried.lines.splice(0).join(''));
    };
    let swapped = false;
    try {
      for (let i = 0; i < snapshot.length; i += 1000)
        await put(
          snapshot
            .slice(i, i + 1000)
            .map(putLine)
            .join(''),
        );
      await drain();
      await fsyncAsync(fd);
      await this.exclusive(async () => {
        // Entries pending from before the snapshot go to the old journal only (the snapshot has
        // them); those after it are carried, or still pending and go to the new one.
        await this.writePending();
        await drain();
        await fsyncAsync(fd);
        await renameAsync(tmp, this.file);
        swapped = true;
        const old = this.fd;
        this.fd = fd;
        this.bytes = written;
        this.compactedBytes = written;
        this.carried = undefined;
        await closeQuietly(old);
        // The new name is durable once its directory is synced; until then no flush answers.
        this.dirSyncOwed = true;
        await syncDirectoryAsync(dirname(this.file)).then(
          () => {
            this.dirSyncOwed = false;
          },
          () => undefined,
        );
      });
    } catch (err) {
      if (!swapped) {
        await closeQuietly(fd);
        await new Promise<void>((ok) => unlink(tmp, () => ok()));
      }
      throw err;
    }
  }
}

// The journal's own file calls, asynchronous (its callers wait on the disk, the event loop does not).
const callback =
  <A extends unknown[], T = void>(
    fn: (...args: [...A, (err: NodeJS.ErrnoException | null, value?: T) => void]) => void,
  ) =>
  (...args: A): Promise<T> =>
    new Promise<T>((ok, fail) => fn(...args, (err, value) => (err ? fail(err) : ok(value as T))));

const datasyncAsync = callback<[number]>(fdatasync);
const fsyncAsync = callback<[number]>(fsync);
const truncateAsync = callback<[number, number]>(ftruncate);
const renameAsync = callback<[string, string]>(rename);
const closeQuietly = (fd: number) => new Promise<void>((ok) => close(fd, () => ok()));

/** A new file that is only ever appended to (so cutting a failed write off never leaves a hole). */
const openAsync = (file: string) =>
  new Promise<number>((ok, fail) =>
    open(
      file,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_APPEND,
      0o600,
      (err, fd) => (err ? fail(err) : ok(fd)),
    ),
  );

async function writeAll(fd: number, buf: Buffer): Promise<void> {
  for (let at = 0; at < buf.length; )
    at += await new Promise<number>((ok, fail) =>
      write(fd, buf, at, buf.length - at, null, (err, n) => (err ? fail(err) : ok(n))),
    );
}

/** fauxqs's SqsStore class (not exported by the package), whose createQueue this layer hooks. */
/** fauxqs's store as the journal wraps it (`createQueue(name, url, arn, attributes)`). */
export interface JournaledStore {
  createQueue(name: string, url: string, arn: string, attributes: object): FauxQueue;
}

export async function journaledStore(journal: QueueJournal): Promise<JournaledStore> {
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
