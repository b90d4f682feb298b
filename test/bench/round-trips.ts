import {
  apiWorld,
  fixed,
  type Invocation,
  machine,
  mark,
  median,
  type Scenario,
  type TracedCall,
  table,
  today,
} from './support.ts';

// AWS requests per API operation on a warm path (the API key and its org cached, the code run
// once), through the real handlers with mocked clients, and how many of them are sequential on the
// critical path. Every mocked call (and the receiver of testWebhookEndpoint's POST) answers after
// a real delay; a call's generation is 1 + the highest generation completed before it started, and
// the depth is the highest generation (1: everything ran concurrently) — the method of
// test/unit/usecases/round-trips.test.ts. Wall time ÷ delay cross-checks it.

/** Sequential round trips allowed on the warm path (the issue's targets); unlisted: no target. */
export const DEPTH_TARGETS: Readonly<Record<string, number>> = {
  getPost: 1,
  listPosts: 1,
  listChannels: 1,
  listMedia: 1,
  getUsage: 1,
  createPost: 2,
  publishPost: 2,
};

export interface RoundTripRow {
  op: string;
  variant: string;
  /** The operation's main path, warm (Scenario.primary). */
  primary: boolean;
  status: number | undefined;
  dynamo: number;
  sqs: number;
  /** KMS, S3, outbound HTTP…: `service label`. */
  other: string[];
  /** The calls of each generation, sorted: [0] ran first and concurrently, and so on. */
  generations: string[][];
  depth: number;
  /** Median wall time of the measured invocations, ms. */
  wallMs: number;
  /** floor(wall ÷ delay): agrees with depth unless the machine is slow or busy. */
  wallDepth: number;
  target: number | null;
  pass: boolean | null;
}

export interface RoundTripsResult {
  machine: string;
  date: string;
  delayMs: number;
  samples: number;
  rows: RoundTripRow[];
  durationMs: number;
}

const LIMITER = /^UpdateItem \(gate\)$/;

const labelOf = (c: TracedCall) => (c.service === 'DynamoDB' ? c.label : `${c.service} ${c.label}`);

function generationsOf(calls: TracedCall[], depth: number): string[][] {
  return Array.from({ length: depth }, (_, g) =>
    calls
      .filter((c) => c.generation === g + 1)
      .map(labelOf)
      .sort(),
  );
}

export async function benchRoundTrips(
  opts: { delayMs?: number; samples?: number } = {},
): Promise<RoundTripsResult> {
  const delayMs = opts.delayMs ?? 5;
  const samples = opts.samples ?? 3;
  const started = performance.now();
  const world = await apiWorld();
  await world.setDelay(delayMs);
  const rows: RoundTripRow[] = [];

  const measure = async (sc: Scenario, variant: string, cold: boolean): Promise<RoundTripRow> => {
    await world.invoke(sc); // warm: code run once, key cached
    const runs: Invocation[] = [];
    for (let i = 0; i < samples; i++) {
      if (cold) world.clearAuthCache();
      runs.push(await world.invoke(sc));
    }
    const shapes = new Set(runs.map((r) => JSON.stringify(generationsOf(r.calls, r.depth))));
    if (shapes.size !== 1) throw new Error(`${sc.op} (${variant}): the calls differ between invocations`);
    const run = runs[0] as Invocation;
    const wallMs = median(runs.map((r) => r.wallMs));
    const target = cold ? null : (DEPTH_TARGETS[sc.op] ?? null);
    world.resetHistory();
    return {
      op: sc.op,
      variant,
      primary: sc.primary && !cold,
      status: run.status,
      dynamo: run.calls.filter((c) => c.service === 'DynamoDB').length,
      sqs: run.calls.filter((c) => c.service === 'SQS').length,
      other: run.calls.filter((c) => c.service !== 'DynamoDB' && c.service !== 'SQS').map(labelOf),
      generations: generationsOf(run.calls, run.depth),
      depth: run.depth,
      wallMs,
      wallDepth: Math.floor(wallMs / delayMs),
      target,
      pass: target === null ? null : run.depth <= target,
    };
  };

  try {
    for (const sc of world.scenarios) rows.push(await measure(sc, sc.variant, false));
    const getPost = world.scenarios.find((s) => s.op === 'getPost');
    if (getPost) rows.push(await measure(getPost, 'cold key: not in the auth cache', true));
  } finally {
    await world.setDelay(0);
  }
  return {
    machine: machine(),
    date: today(),
    delayMs,
    samples,
    rows,
    durationMs: performance.now() - started,
  };
}

/** `A ∥ 2× B → C`: concurrent calls joined by ∥, generations by →. */
export function criticalPath(generations: string[][]): string {
  if (!generations.length) return '(none)';
  return generations
    .map((g) => {
      const counts = new Map<string, number>();
      for (const c of g) counts.set(c, (counts.get(c) ?? 0) + 1);
      return [...counts].map(([c, n]) => (n > 1 ? `${n}× ${c}` : c)).join(' ∥ ');
    })
    .join(' → ');
}

/** Why a path is as deep as it is, from its shape. */
function causes(row: RoundTripRow): string[] {
  if (row.variant.startsWith('cold key'))
    return [
      'authentication reads the key (GetItem), then its organization (GetItem), before the operation starts',
    ];
  // DynamoDB writes after round trip 1 wait for the admission by design (a refused request changes
  // nothing); every other call that starts late is named, with what it waited for.
  const WRITE = /^(PutItem|UpdateItem|DeleteItem|TransactWriteItems\[\d+\])$/;
  const out: string[] = [];
  const s3 = row.generations.filter((g) => g.some((c) => c.startsWith('S3 '))).length;
  for (let g = 1; g < row.generations.length; g++) {
    const late = (row.generations[g] ?? []).filter((c) => !WRITE.test(c) && !(s3 > 2 && c.startsWith('S3 ')));
    if (!late.length) continue;
    const before = row.generations[g - 1] ?? [];
    const waitedFor = before.every((c) => LIMITER.test(c))
      ? "the request gate's admission"
      : criticalPath([before]);
    out.push(`${late.join(', ')} starts only after ${waitedFor} (round trip ${g})`);
  }
  if (s3 > 2) out.push(`${s3} S3 requests one after another`);
  return out;
}

const name = (r: RoundTripRow) => (r.variant ? `${r.op} (${r.variant})` : r.op);

export function roundTripsSection(r: RoundTripsResult): string {
  const rows = r.rows.map((row) => [
    name(row),
    String(row.dynamo),
    String(row.sqs),
    row.other.length ? row.other.join(', ') : '–',
    criticalPath(row.generations),
    `**${row.depth}**`,
    `${fixed(row.wallMs)} (≈ ${row.wallDepth})`,
    row.target === null ? '–' : `≤ ${row.target}`,
    mark(row.pass),
  ]);
  const misses = r.rows.filter((row) => row.pass === false);
  const missNotes = misses.length
    ? misses
        .map((m) => {
          const why = causes(m);
          return (
            `- **${name(m)}: ${m.depth} sequential round trips, target ≤ ${m.target}.** Path: ${criticalPath(m.generations)}. ` +
            (why.length ? `Why: ${why.join('; ')}. ` : '') +
            `To meet it, the calls after round trip ${m.target} would have to start together with the earlier ones.`
          );
        })
        .join('\n')
    : `Every operation with a target meets it.`;
  const deep = r.rows.filter((row) => row.target === null && row.depth >= 3);
  const deepNotes = deep.length
    ? `\n\nWithout a target but 3 or more deep: ${deep
        .map((d) => {
          const why = causes(d);
          return `${name(d)} (${d.depth}${why.length ? `: ${why.join('; ')}` : ''})`;
        })
        .join('; ')}.`
    : '';
  const disagree = r.rows.filter((row) => row.wallDepth !== row.depth);
  const wallNote = disagree.length
    ? ` Wall time ÷ ${r.delayMs} ms disagrees with the traced depth for ${disagree.length} row(s) (${disagree
        .map(name)
        .join(', ')}): timers and CPU stretch on a busy machine; the traced depth is exact.`
    : ` Wall time ÷ ${r.delayMs} ms agrees with the traced depth for every row.`;
  return `### AWS round trips per request (warm container)

Measured ${r.date} on ${r.machine} by \`test/bench/round-trips.ts\`. Method: the real handlers with
every AWS client mocked (aws-sdk-client-mock), each call answering after ${r.delayMs} ms; a call's
generation is 1 + the highest generation completed before it started, the depth (sequential round
trips on the critical path) the highest generation, as in \`test/unit/usecases/round-trips.test.ts\`.
Warm: the code has run once and the API key with its org is in the per-container cache (30 s).
testWebhookEndpoint's POST goes to a real loopback receiver that answers after ${r.delayMs} ms, traced
like the mocked calls. Wall: median of ${r.samples} invocations, ms (≈ wall ÷ ${r.delayMs} ms).
∥ = concurrent, → = next round trip; UpdateItem (gate) = the request gate's one conditional write
(the key's burst window, the month's api_requests and the key's revocation on one item);
TransactWriteItems[n] = n items.

${table(
  ['Operation', 'DynamoDB', 'SQS', 'Other', 'Critical path', 'Depth', 'Wall ms', 'Target', 'Verdict'],
  ['l', 'r', 'r', 'l', 'l', 'r', 'r', 'r', 'c'],
  rows,
)}

${missNotes}${deepNotes}${wallNote}
`;
}
