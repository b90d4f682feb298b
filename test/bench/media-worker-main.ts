import { readObject, readRange, streamObject } from '#adapters/media-store';
import { connectorFor } from '#adapters/platforms/index';
import { type MediaInput, PlatformError, type PublishContext } from '#adapters/platforms/types';
import type { Platform } from '#core/platforms';

// One run of the media bench in a process of its own, so its peak RSS is the worker's alone:
// `count` deliveries at once (a batch's records run in parallel) of a generated video of `size` bytes
// to `platform`'s fake. `ranged` reads the media object as the delivery worker does (ranged GETs, a
// stream); `whole` reads it whole first, as every connector did before (91db867). Attempts the upload
// budget ends are followed by the next one with the saved checkpoint, as the worker's retry would.

interface Case {
  platform: Platform;
  size: number;
  count: number;
  mode: 'ranged' | 'whole';
}

const c = JSON.parse(process.env.BENCH_MEDIA_CASE ?? '{}') as Case;
const MAX_ATTEMPTS = 5;

function media(key: string): MediaInput {
  let whole: Promise<Uint8Array> | undefined;
  const all = () => {
    whole ??= readObject('media', key);
    return whole;
  };
  const base = {
    type: 'video' as const,
    alt: '',
    contentType: 'video/mp4',
    filename: 'bench.mp4',
    sizeBytes: c.size,
    url: `https://cdn.example/${key}`,
  };
  if (c.mode === 'whole')
    return {
      ...base,
      read: all,
      readRange: async (s, e) => (await all()).subarray(s, e),
      stream: () =>
        new ReadableStream({
          async start(ctl) {
            ctl.enqueue(await all());
            ctl.close();
          },
        }),
    };
  return {
    ...base,
    read: () => Promise.reject(new Error('videos are not read whole')),
    readRange: (s, e) => readRange('media', key, s, e),
    stream: () => streamObject('media', key),
  };
}

async function deliver(i: number): Promise<{ attempts: number; externalId: string }> {
  const connector = await connectorFor(c.platform);
  const ctx: PublishContext = {
    channel: { id: `ch_${i}`, handle: 'bench', platform: c.platform },
    credentials: { access_token: 'token', refresh_token: 'refresh', account_id: 'UCherald' },
    text: `Bench video ${i}`,
    title: null,
    options: {},
    media: [media(`gen/${c.size}/${i + 1}/bench.mp4`)],
    idempotencyKey: `post_${i}.ch_${i}`,
    checkpoint: null,
    attemptStartedAt: new Date(),
    async saveCheckpoint(cp) {
      ctx.checkpoint = cp;
    },
    tokens: {
      credentials: { access_token: 'token' },
      accessToken: async () => 'token',
      refreshAfter401: async () => false,
    },
  };
  if (c.platform === 'x') ctx.credentials = { access_token: 'token', account_id: '1500000000000000001' };
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await connector.publish(ctx);
      return { attempts: attempt, externalId: res.externalId };
    } catch (err) {
      if (!(err instanceof PlatformError) || !err.retryable || attempt >= MAX_ATTEMPTS) throw err;
    }
  }
}

// Warm: the connector and the SDK loaded, one small GET made, before the baseline is read.
await connectorFor(c.platform);
await readRange('media', `gen/1024/1/warm.mp4`, 0, 1024);
const baselineMb = process.memoryUsage.rss() / 2 ** 20;
let sampledPeak = 0;
const sampler = setInterval(() => {
  sampledPeak = Math.max(sampledPeak, process.memoryUsage.rss());
}, 10);
const started = performance.now();
const results = await Promise.all(Array.from({ length: c.count }, (_, i) => deliver(i)));
const ms = performance.now() - started;
clearInterval(sampler);
process.stdout.write(
  `${JSON.stringify({
    baselineMb,
    // getrusage's maximum resident set: the kernel's own peak, no sampling gaps.
    peakMb: process.resourceUsage().maxRSS / 1024,
    sampledPeakMb: sampledPeak / 2 ** 20,
    ms,
    attempts: results.map((r) => r.attempts),
    ids: results.map((r) => r.externalId),
  })}\n`,
);
