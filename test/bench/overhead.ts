import { Session } from 'node:inspector/promises';
import { relative } from 'node:path';
import {
  apiWorld,
  fixed,
  machine,
  mark,
  median,
  packageOf,
  ROOT,
  type Scenario,
  table,
  today,
} from './support.ts';

// Warm handler overhead: CPU time per invocation of each API operation's real handler (the whole
// middy pipeline: logger context, request id, problem+json, API-key auth from the per-container
// cache, the request gate's UpdateItem, scope/feature checks, zod validation, the use case, JSON
// out), its AWS clients mocked with aws-sdk-client-mock — against a bare handler returning constant
// JSON, in the same process and run.
//
// Two corrections, both measured in the same run:
// - the mocks' own work (sinon's call bookkeeping, the bench table's answers) is in the measured
//   CPU; a sampling profile of the same loop gives its share, which is taken out;
// - the mocks replace the clients' `send`, so the SDK's work per request (marshalling, middleware,
//   endpoint, SigV4, JSON both ways) is not in it; a real DynamoDBClient over a request handler
//   that answers canned bytes gives its CPU per request, added back as an estimate.

export const TARGET_US = 500;

export interface OverheadRow {
  op: string;
  variant: string;
  /** AWS requests per invocation, plus outbound HTTP requests (testWebhookEndpoint's POST). */
  calls: number;
  awsCalls: number;
  /** Median over the repetitions of CPU µs per invocation, mocked clients, as measured. */
  measuredUs: number;
  /** The repetitions' values (µs per invocation). */
  repsUs: number[];
  /** Share of the profile's samples in the mocks (sinon, aws-sdk-client-mock, the bench table). */
  mockShare: number;
  /** measuredUs without the mocks' share: the handler's own CPU per request. */
  handlerUs: number;
  /** handlerUs − the bare handler's. */
  overBareUs: number;
  /** handlerUs + awsCalls × the real SDK's CPU per request (estimate). */
  withSdkUs: number;
  pass: boolean;
  passWithSdk: boolean;
  /** Where the handler's own CPU goes (mocks left out). */
  profile: CpuProfile;
}

/** Self time of a warm loop by module and by function, in % of the samples outside the mocks. */
export interface CpuProfile {
  mockShare: number;
  modules: Array<{ name: string; percent: number }>;
  functions: Array<{ name: string; module: string; percent: number }>;
}

export interface OverheadResult {
  machine: string;
  date: string;
  iterations: number;
  reps: number;
  warmup: number;
  /** The bare handler: CPU µs per invocation. */
  bareUs: number;
  /** CPU µs of one request through the real SDK client (no network): GetItem and UpdateItem. */
  sdkCallUs: { getItem: number; updateItem: number; mean: number };
  rows: OverheadRow[];
  durationMs: number;
}

export async function benchOverhead(
  opts: { iterations?: number; reps?: number; warmup?: number } = {},
): Promise<OverheadResult> {
  const iterations = opts.iterations ?? 500;
  const reps = opts.reps ?? 5;
  const warmup = opts.warmup ?? 100;
  const started = performance.now();
  const world = await apiWorld();
  await world.setDelay(0);
  const sdkCallUs = await sdkCallCpu();

  /** CPU µs per invocation of `iterations` invocations, `reps` times; events built outside the clock. */
  const measure = async (sc: Scenario): Promise<number[]> => {
    for (let i = 0; i < warmup; i++) await world.run(sc, sc.event(), world.context(sc.op));
    world.resetHistory();
    const out: number[] = [];
    for (let r = 0; r < reps; r++) {
      const events = Array.from({ length: iterations }, () => sc.event());
      const context = world.context(sc.op);
      const cpu = process.cpuUsage();
      for (const event of events) await world.run(sc, event, context);
      const used = process.cpuUsage(cpu);
      out.push((used.user + used.system) / iterations);
      world.resetHistory();
    }
    return out;
  };
  const primary = world.scenarios.filter((s) => s.primary);
  const first = primary[0];
  if (!first) throw new Error('no scenarios');
  const bareScenario: Scenario = { ...first, op: 'bare', variant: '', handler: world.bare };

  const bare = await measure(bareScenario);
  const rows: OverheadRow[] = [];
  for (const sc of primary) {
    const repsUs = await measure(sc);
    const traced = await world.invoke(sc);
    const context = world.context(sc.op);
    const events = Array.from({ length: iterations }, () => sc.event());
    let next = 0;
    const p = await profile(
      () => world.run(sc, events[next++ % events.length] ?? sc.event(), context),
      iterations,
    );
    world.resetHistory();
    const measuredUs = median(repsUs);
    const handlerUs = measuredUs * (1 - p.mockShare);
    const awsCalls = traced.calls.filter((c) => c.service !== 'HTTP').length;
    const withSdkUs = handlerUs + awsCalls * sdkCallUs.mean;
    rows.push({
      op: sc.op,
      variant: sc.variant,
      calls: traced.calls.length,
      awsCalls,
      measuredUs,
      repsUs,
      mockShare: p.mockShare,
      handlerUs,
      overBareUs: 0,
      withSdkUs,
      pass: handlerUs <= TARGET_US,
      passWithSdk: withSdkUs <= TARGET_US,
      profile: p,
    });
  }
  bare.push(...(await measure(bareScenario)));
  const bareUs = median(bare);
  for (const r of rows) r.overBareUs = r.handlerUs - bareUs;
  return {
    machine: machine(),
    date: today(),
    iterations,
    reps,
    warmup,
    bareUs,
    sdkCallUs,
    rows,
    durationMs: performance.now() - started,
  };
}

/** Modules that are the bench's mocks, not the handler's work. */
const MOCK_MODULES = /^(sinon|nise|@sinonjs\/.*|aws-sdk-client-mock|test\/.*)$/;

/** Where `fn`'s CPU goes over `n` calls: the V8 sampling profiler, self time grouped. */
async function profile(fn: () => Promise<void>, n: number): Promise<CpuProfile> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    for (let i = 0; i < n; i++) await fn();
    const { profile: p } = await session.post('Profiler.stop');
    const byModule = new Map<string, number>();
    const byFunction = new Map<string, { name: string; module: string; hits: number }>();
    let total = 0;
    let mocks = 0;
    for (const node of p.nodes) {
      const hits = node.hitCount ?? 0;
      if (!hits || node.callFrame.functionName === '(idle)') continue;
      total += hits;
      const module = moduleOf(node.callFrame.url, node.callFrame.functionName);
      if (MOCK_MODULES.test(module)) {
        mocks += hits;
        continue;
      }
      byModule.set(module, (byModule.get(module) ?? 0) + hits);
      const name = node.callFrame.functionName || '(anonymous)';
      const key = `${name} ${module}:${node.callFrame.lineNumber}`;
      const f = byFunction.get(key) ?? { name, module, hits: 0 };
      f.hits += hits;
      byFunction.set(key, f);
    }
    const own = Math.max(1, total - mocks);
    const pct = (hits: number) => (100 * hits) / own;
    return {
      mockShare: total ? mocks / total : 0,
      modules: [...byModule]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([name, hits]) => ({ name, percent: pct(hits) })),
      functions: [...byFunction.values()]
        .sort((a, b) => b.hits - a.hits)
        .slice(0, 5)
        .map((f) => ({ name: f.name, module: f.module, percent: pct(f.hits) })),
    };
  } finally {
    await session.post('Profiler.disable').catch(() => undefined);
    session.disconnect();
  }
}

/** A package (`@smithy/core`), a file of ours (`functions/usecases/openapi.ts`), `node:…` or V8's own. */
function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : 'native (V8 builtins, Node C++)';
  if (url.startsWith('node:')) return url;
  const path = url.replace(/^file:\/\//, '');
  return path.includes('node_modules/') ? packageOf(path) : relative(ROOT, path);
}

/**
 * CPU µs of one DynamoDB request through a real, unmocked DynamoDBClient whose request handler
 * answers canned bytes at once: marshalling (as the document client does), middleware, endpoint,
 * SigV4 signing, JSON serialization and parsing — everything but the network.
 */
async function sdkCallCpu(samples = 1000): Promise<OverheadResult['sdkCallUs']> {
  const { DynamoDBClient, GetItemCommand, UpdateItemCommand } = await import('@aws-sdk/client-dynamodb');
  const { marshall, unmarshall } = await import('@aws-sdk/util-dynamodb');
  const { postItem, post, variant, fixedId } = await import('../unit/support/fixtures.ts');
  const item = postItem(
    post({ variants: [variant(fixedId('channel', 1), 1), variant(fixedId('channel', 2), 2)] }),
  );
  const answers: Record<string, string> = {
    GetItem: JSON.stringify({ Item: marshall(item, { removeUndefinedValues: true }) }),
    UpdateItem: JSON.stringify({
      Attributes: { api_requests: { N: '1235' }, key_1: { M: { n: { N: '1' } } } },
    }),
  };
  const client = new DynamoDBClient({
    region: 'us-east-1',
    maxAttempts: 3,
    credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' },
    requestHandler: {
      handle: async (request: { headers: Record<string, string> }) => {
        const op = String(request.headers['x-amz-target']).split('.')[1] ?? '';
        return {
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'bench' },
            body: Buffer.from(answers[op] ?? '{}'),
          },
        };
      },
      updateHttpClientConfig: () => undefined,
      httpHandlerConfigs: () => ({}),
      destroy: () => undefined,
    } as never,
  });
  const key = { pk: item.pk, sk: item.sk };
  const get = async () => {
    const res = await client.send(
      new GetItemCommand({ TableName: 'herald-test', Key: marshall(key), ConsistentRead: true }),
    );
    if (!res.Item) throw new Error('SDK calibration: no item');
    unmarshall(res.Item);
  };
  const update = async () => {
    const res = await client.send(
      new UpdateItemCommand({
        TableName: 'herald-test',
        Key: marshall({ pk: 'ORG#org_1', sk: 'USAGE#2030-06' }),
        UpdateExpression: 'ADD api_requests :one, #k.n :one',
        ConditionExpression:
          '#k.w = :w AND #k.n < :burst AND attribute_not_exists(#k.r) AND (attribute_not_exists(api_requests) OR api_requests < :month)',
        ExpressionAttributeNames: { '#k': 'key_1' },
        ExpressionAttributeValues: marshall({ ':one': 1, ':w': 1, ':burst': 120, ':month': 50_000 }),
        ReturnValues: 'UPDATED_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    unmarshall(res.Attributes ?? {});
  };
  const cpuPerCall = async (fn: () => Promise<void>) => {
    for (let i = 0; i < 300; i++) await fn();
    const values: number[] = [];
    for (let r = 0; r < 3; r++) {
      const cpu = process.cpuUsage();
      for (let i = 0; i < samples; i++) await fn();
      const used = process.cpuUsage(cpu);
      values.push((used.user + used.system) / samples);
    }
    return median(values);
  };
  const getItem = await cpuPerCall(get);
  const updateItem = await cpuPerCall(update);
  client.destroy();
  return { getItem, updateItem, mean: (getItem + updateItem) / 2 };
}

const us = (n: number) => fixed(n, 0);

/** What a profile's top entries mean, for the hot spots this API has. */
function hint(p: CpuProfile): string {
  const share = (test: (name: string) => boolean) =>
    p.modules.filter((m) => test(m.name)).reduce((sum, m) => sum + m.percent, 0);
  const fn = (names: RegExp) =>
    p.functions.filter((f) => names.test(f.name)).reduce((s, f) => s + f.percent, 0);
  if (fn(/^(jsonResponse|rawJsonResponse)$/) > 50)
    return 'Serializing the response body dominates: a body that is the same on every request can be serialized once per container.';
  if (share((n) => n.startsWith('@smithy/') || n.startsWith('@aws-sdk/')) > 30)
    return 'The AWS SDK works in-process on the request path (building and SigV4-signing a request: presigning is local SDK work); to meet it, fewer such SDK steps per request.';
  if (
    fn(/^(connect|writev|writeBuffer|writeUtf8String)$/) > 10 ||
    share((n) => /^node:(net|_http)/.test(n)) > 5
  )
    return 'An outbound HTTP request on a new TCP connection (no keep-alive) dominates; it is the operation itself, so only fewer or reused connections would lower it.';
  return 'To meet it, that work has to shrink or leave the request path (done once per container, or not at all).';
}

export function overheadSection(r: OverheadResult): string {
  const name = (row: OverheadRow) => (row.variant ? `${row.op} (${row.variant})` : row.op);
  const pc = (n: number) => `${n.toFixed(0)} %`;
  const rows = r.rows.map((row) => [
    name(row),
    String(row.calls),
    us(row.measuredUs),
    pc(100 * row.mockShare),
    `**${us(row.handlerUs)}**`,
    us(row.overBareUs),
    us(row.withSdkUs),
    `≤ ${TARGET_US}`,
    mark(row.pass),
    mark(row.passWithSdk),
  ]);
  const misses = r.rows.filter((row) => !row.pass);
  const sdkMisses = r.rows.filter((row) => row.pass && !row.passWithSdk);
  const worst = [...r.rows].sort((a, b) => b.handlerUs - a.handlerUs).slice(0, 3);
  const where = (p: CpuProfile) =>
    `by module ${p.modules
      .slice(0, 3)
      .map((x) => `${x.name} ${pc(x.percent)}`)
      .join(', ')}; hottest functions ${p.functions
      .slice(0, 3)
      .map((f) => `\`${f.name}\` (${f.module}) ${pc(f.percent)}`)
      .join(', ')}`;
  const missNotes = misses.length
    ? `**Misses, and where their CPU goes** (V8 sampling profile of the same warm loop, self time, mocks left out):

${misses
  .map(
    (m) =>
      `- ${name(m)}: ${us(m.handlerUs)} µs, ${us(m.handlerUs - TARGET_US)} µs over — ${where(m.profile)}. ` +
      hint(m.profile),
  )
  .join('\n')}`
    : `Every operation meets ≤ ${TARGET_US} µs of handler CPU.`;
  const sdkNote = sdkMisses.length
    ? `With the real SDK's CPU per AWS request added (estimate), ${sdkMisses.length} more operation(s) exceed ` +
      `${TARGET_US} µs (${sdkMisses.map(name).join(', ')}): the SDK itself costs ≈ ${us(r.sdkCallUs.mean)} µs of CPU ` +
      'per request, so the number of AWS requests per invocation, not handler code, decides those.'
    : `With the SDK's CPU per AWS request added (≈ ${us(r.sdkCallUs.mean)} µs each, estimate), no further ` +
      `operation exceeds ${TARGET_US} µs.`;
  return `### Warm handler overhead (CPU per request)

Measured ${r.date} on ${r.machine} by \`test/bench/overhead.ts\`. Method: each API operation's real
handler (the full middy pipeline, warm: API key and org in the per-container auth cache, so no key
lookup) in one process, every AWS client mocked with aws-sdk-client-mock answering a fixed table (an
API key and its team-plan org, 5 channels, 25 posts, 26 media assets, 3 webhook endpoints with 20
logged deliveries, usage and stats items; the request gate's UpdateItem answers at once).
\`process.cpuUsage()\` over ${r.iterations} invocations after ${r.warmup} warm-up ones, median of ${r.reps}
repetitions (events built outside the measurement). The mocks' own CPU (sinon, the bench table) is
taken out by its share of a sampling profile of the same loop; "Handler" is what remains. Bare
handler (constant JSON, no middleware), same run: **${fixed(r.bareUs, 1)} µs**. The SDK's own CPU per
request is not in these numbers (the mocks replace \`send\`): a real DynamoDBClient over a request
handler answering canned bytes (no network) costs ${us(r.sdkCallUs.getItem)} µs per GetItem and
${us(r.sdkCallUs.updateItem)} µs per UpdateItem (marshalling, middleware, endpoint, SigV4, JSON both
ways); "+ SDK" adds their mean for every AWS request (an estimate). Calls: AWS requests per
invocation (+ testWebhookEndpoint's real POST to a loopback receiver in another process).

${table(
  [
    'Operation',
    'Calls',
    'Measured µs',
    'Mocks',
    'Handler µs',
    '− bare',
    '+ SDK µs (est.)',
    'Target µs',
    'Verdict',
    'Verdict + SDK',
  ],
  ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'r', 'c', 'c'],
  rows,
)}

Costliest handlers: ${worst.map((w) => `${name(w)} ${us(w.handlerUs)} µs`).join(', ')}. ${sdkNote}

${missNotes}
`;
}
