// The operator's views of the table (docs/operator/cli.md): `post get`, `posts stuck`, `channels
// failing`. Each command's options are checked here before the CLI connects; the reads are the use
// cases' (usecases/cli/inspect.ts). With --json the result is printed as it is; otherwise as
// compact aligned lines.

export const INSPECT_COMMANDS = ['post get', 'posts stuck', 'channels failing'] as const;
export type InspectCommand = (typeof INSPECT_COMMANDS)[number];

type Inspect = typeof import('#usecases/cli/inspect');

interface InspectValues {
  org?: string | undefined;
  id?: string | undefined;
  by?: string | undefined;
  'older-than'?: string | undefined;
  lookback?: string | undefined;
}

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30m`, `2h`, `1d`, `45s`, `0m`: a whole number and a unit. */
export function parseDuration(value: string, flag: string, usage: (m: string) => Error): number {
  const m = /^([0-9]{1,6})([smhd])$/.exec(value.trim());
  if (!m) throw usage(`--${flag} is a duration like 30m, 2h or 1d (a whole number and s, m, h or d)`);
  return Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}

/** How far back `posts stuck` reads the due-work index at most (1,440 small queries a day). */
const MAX_LOOKBACK_MS = 90 * 86_400_000;

/** A result that prints as lines for a person and as its data with --json. */
export class View {
  private constructor(
    readonly data: unknown,
    private readonly text: string,
  ) {}
  static of<T>(data: T, lines: (data: T) => string): View {
    return new View(data, lines(data));
  }
  toJSON(): unknown {
    return this.data;
  }
  render(): string {
    return this.text;
  }
}

/**
 * The command's job, its options checked now: run after the CLI has connected to the target.
 * `usage` makes the CLI's usage error (exit 2, with the usage text).
 */
export function inspectJob(
  command: InspectCommand,
  values: InspectValues,
  usage: (m: string) => Error,
): (uc: Inspect) => Promise<View> {
  if (values.by !== undefined) throw usage(`${command} is the operator's view: it takes no --by`);
  switch (command) {
    case 'post get': {
      const orgId = values.org?.trim();
      const postId = values.id?.trim();
      if (!orgId) throw usage('--org is required (post ids are found only within their organization)');
      if (!postId) throw usage('--id is required');
      return async (uc) => View.of(await uc.inspectPost(orgId, postId), postLines);
    }
    case 'posts stuck': {
      const olderThanMs = parseDuration(values['older-than'] ?? '30m', 'older-than', usage);
      const lookbackMs = parseDuration(values.lookback ?? '14d', 'lookback', usage);
      if (lookbackMs > MAX_LOOKBACK_MS) throw usage('--lookback is at most 90d');
      if (lookbackMs <= olderThanMs) throw usage('--lookback must be longer than --older-than');
      return async (uc) =>
        View.of(await uc.stuckPosts({ now: new Date(), olderThanMs, lookbackMs }), stuckLines);
    }
    default:
      return async (uc) => View.of(await uc.failingChannels({ now: new Date() }), failingLines);
  }
}

/** Rows as columns padded to their widest cell; `-` for an empty one. */
export function aligned(rows: Array<Array<string | number | null | undefined>>): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))));
  const widths = cells.reduce<number[]>((w, r) => r.map((c, i) => Math.max(w[i] ?? 0, c.length)), []);
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

type Post = Awaited<ReturnType<Inspect['inspectPost']>>;
type Stuck = Awaited<ReturnType<Inspect['stuckPosts']>>;
type Failing = Awaited<ReturnType<Inspect['failingChannels']>>;

const oneLine = (s: string | null) => (s ? s.replace(/\s+/g, ' ').slice(0, 160) : null);

function postLines(p: Post): string {
  const head = aligned([
    ['org', p.org_id],
    ['post', p.post.id],
    ['status', p.post.status],
    ['scheduled_at', p.post.scheduled_at],
    ['published_at', p.post.published_at],
    ['round', p.round],
    ['watch_at', p.watch_at],
  ]);
  const variants = p.post.variants.map((v) => `  ${v.channel_id}  ${oneLine(v.body) ?? ''}`);
  const deliveries = aligned([
    [
      'CHANNEL',
      'PLATFORM',
      'STAGE',
      'ATTEMPTS',
      'NEXT_ATTEMPT',
      'LEASE_UNTIL',
      'CLAIM',
      'PLATFORM_POST',
      'ERROR',
    ],
    ...p.deliveries.map((d) => [
      d.channel_id,
      d.platform,
      d.stage,
      d.attempts,
      d.next_attempt_at,
      d.claim ? `${d.claim.lease_until ?? '-'}${d.claim.expired ? ' (expired)' : ''}` : null,
      d.claim?.id,
      d.url ?? d.external_id,
      d.error_category ? `${d.error_category}: ${oneLine(d.error)}` : null,
    ]),
  ]);
  return [head, '', 'content:', ...variants, '', 'deliveries:', deliveries].join('\n');
}

function stuckLines(s: Stuck): string {
  const summary = `${s.stuck.length} stuck (older than ${s.older_than_seconds} s; ${s.posts_read} posts read from ${s.buckets_read} minute buckets)`;
  if (!s.stuck.length) return summary;
  return `${aligned([
    ['ORG', 'POST', 'STATUS', 'CHANNEL', 'STAGE', 'WHY', 'SINCE', 'ATTEMPTS', 'ERROR'],
    ...s.stuck.map((f) => [
      f.org_id,
      f.post_id,
      f.status,
      f.channel_id,
      f.stage,
      f.why,
      f.since,
      f.attempts,
      f.error_category ? `${f.error_category}: ${oneLine(f.error)}` : null,
    ]),
  ])}\n\n${summary}`;
}

function failingLines(f: Failing): string {
  const summary = `${f.channels.length} failing (${f.channels_read} channels read)`;
  if (!f.channels.length) return summary;
  return `${aligned([
    ['ORG', 'CHANNEL', 'PLATFORM', 'STATUS', 'WHY', 'FAILURES', 'LAST_SYNC', 'NEXT_SYNC', 'LAST_ERROR'],
    ...f.channels.map((c) => [
      c.org_id,
      c.channel_id,
      c.platform,
      c.status,
      c.why,
      c.sync_failures,
      c.last_sync_at,
      c.next_sync_at,
      oneLine(c.last_error),
    ]),
  ])}\n\n${summary}`;
}
