import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Lease } from '#adapters/channel-credentials';
import {
  type Credentials,
  type MediaInput,
  type MetricsContext,
  PlatformError,
  type PublishContext,
  type TokenSource,
} from '#adapters/platforms/types';
import type { Platform } from '#core/platforms';
import { type CredentialStore, channelTokens } from '#usecases/support/channel-tokens';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import type { FakePlatform } from '../../../fakes/server.ts';

// Fixtures the connector tests share: a PublishContext that records what the connector saves, media
// inputs, a CDN fake for the platforms that fetch media by URL, and the PlatformError a call fails with.

export type Checkpoint = Record<string, unknown>;

export interface Recorded {
  ctx: PublishContext;
  /** Every checkpoint saved, as it was when saved. */
  checkpoints: Checkpoint[];
  /** Every set of credentials saved (token refreshes). */
  saved: Credentials[];
}

export type ContextOverrides = Partial<Omit<PublishContext, 'tokens'>> &
  Pick<PublishContext, 'channel' | 'credentials'>;

/**
 * The channel's token source as the worker builds it (usecases/support/channel-tokens.ts: renewals go through
 * the one OAuth client to the platform's fake, with the fake's registered app), over an in-memory
 * credentials store instead of the table. Saved credentials are recorded in `saved`.
 */
export function memoryTokens(
  platform: Platform,
  credentials: Credentials,
  saved: Credentials[],
  /** The operator's platform app (null: not configured). */
  app: { clientId: string; clientSecret: string } | null = FAKE_APPS[platform],
): TokenSource {
  let stored = { credentials, version: 1 };
  let lease: Lease | null = null;
  const store: CredentialStore = {
    async lease(version, ms) {
      if (version !== stored.version || (lease && lease.until > Date.now())) return null;
      lease = { token: randomUUID(), until: Date.now() + ms };
      return lease;
    },
    read: async () => stored,
    async save(version, c) {
      if (version !== stored.version) return false;
      stored = { credentials: c, version: stored.version + 1 };
      lease = null;
      saved.push(c);
      return true;
    },
    async release(l) {
      if (lease?.token === l.token) lease = null;
    },
  };
  return channelTokens({
    orgId: 'org_unit',
    channelId: 'ch_unit',
    platform,
    credentials,
    version: 1,
    store,
    app: async () => (app ? { ...app, redirectUri: 'https://api.example.com/oauth/callback' } : null),
  });
}

/**
 * A PublishContext for one attempt. Saved checkpoints and credentials are recorded; with
 * `keepCheckpoint` a saved checkpoint also becomes ctx.checkpoint, as the next attempt would see it.
 * `ctx.tokens` follows `ctx.credentials` (a test may replace them before publishing).
 */
export function publishContext(
  overrides: ContextOverrides,
  opts: { keepCheckpoint?: boolean; app?: { clientId: string; clientSecret: string } | null } = {},
): Recorded {
  const checkpoints: Checkpoint[] = [];
  const saved: Credentials[] = [];
  let source: { for: Credentials; tokens: TokenSource } | undefined;
  const ctx = {
    text: 'Hello from Herald',
    title: null,
    options: {},
    media: [],
    idempotencyKey: `post_1:${overrides.channel.id}`,
    checkpoint: null,
    attemptStartedAt: new Date(),
    async saveCheckpoint(cp: Checkpoint) {
      checkpoints.push(structuredClone(cp));
      if (opts.keepCheckpoint) ctx.checkpoint = cp;
    },
    ...overrides,
    get tokens(): TokenSource {
      if (source?.for !== ctx.credentials)
        source = {
          for: ctx.credentials,
          tokens: memoryTokens(ctx.channel.platform, ctx.credentials, saved, opts.app),
        };
      return source.tokens;
    },
  } as PublishContext;
  return { ctx, checkpoints, saved };
}

/** A MetricsContext for the channel of `ctx`, with its token source. */
export function metricsContext(
  ctx: Pick<PublishContext, 'channel' | 'credentials' | 'tokens'>,
  externalIds: string[],
): MetricsContext {
  return { channel: ctx.channel, credentials: ctx.credentials, externalIds, tokens: ctx.tokens };
}

/** The context itself carrying its recordings (for tests that pass one object around). */
export type Fixture = PublishContext & Omit<Recorded, 'ctx'>;

export function publishFixture(overrides: ContextOverrides): Fixture {
  const { ctx, checkpoints, saved } = publishContext(overrides, { keepCheckpoint: true });
  return Object.assign(ctx, { checkpoints, saved });
}

/** A media input over the given bytes; the filename follows the content type unless given. */
export function mediaInput(
  bytes: Uint8Array,
  type: MediaInput['type'],
  contentType: string,
  extra: Partial<MediaInput> = {},
): MediaInput {
  return {
    type,
    alt: '',
    contentType,
    filename: `file.${contentType.split('/')[1]}`,
    sizeBytes: bytes.byteLength,
    url: 'https://media.example/asset',
    read: async () => bytes,
    readRange: async (start, end) => bytes.slice(start, end),
    stream: () => streamOf(bytes),
    ...extra,
  };
}

function streamOf(bytes: Uint8Array, piece = 64 * 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.byteLength) return c.close();
      c.enqueue(bytes.slice(at, at + piece));
      at += piece;
    },
  });
}

/** What a connector read of a media input: ranges [start, end), whole streams, whole reads. */
export interface MediaReads {
  ranges: Array<[number, number]>;
  streams: number;
  whole: number;
  /** Most ranged reads in flight at once. */
  maxInFlight: number;
}

/**
 * A media input that records how it is read. A whole read (`read()`) fails: connectors must send
 * videos by ranges or as a stream, holding a chunk at a time rather than the file.
 */
export function streamedMedia(
  bytes: Uint8Array,
  type: MediaInput['type'],
  contentType: string,
  extra: Partial<MediaInput> = {},
): { input: MediaInput; reads: MediaReads } {
  const reads: MediaReads = { ranges: [], streams: 0, whole: 0, maxInFlight: 0 };
  let inFlight = 0;
  const input = mediaInput(bytes, type, contentType, {
    read: async () => {
      reads.whole++;
      throw new Error('the whole file was read into memory');
    },
    readRange: async (start, end) => {
      reads.ranges.push([start, end]);
      inFlight++;
      reads.maxInFlight = Math.max(reads.maxInFlight, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      return bytes.slice(start, end);
    },
    stream: () => {
      reads.streams++;
      return streamOf(bytes);
    },
    ...extra,
  });
  return { input, reads };
}

/** n bytes of a repeatable pattern (distinct per seed and step). */
export function patternBytes(n: number, seed: number, step: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * step + seed) & 0xff;
  return b;
}

export type CdnFake = FakePlatform & { files: Map<string, { bytes: Buffer; type: string }> };

/** A fake CDN serving the files put into it, for platforms that fetch media from our public URLs. */
export function cdn(): CdnFake {
  const files = new Map<string, { bytes: Buffer; type: string }>();
  return {
    name: 'cdn',
    files,
    reset: () => files.clear(),
    handle(req) {
      const f = files.get(req.path.slice(1));
      return f
        ? { status: 200, headers: { 'content-type': f.type }, body: f.bytes }
        : { status: 404, body: 'not found' };
    },
  };
}

/** The PlatformError a call fails with (it must fail with one). */
export async function failure(p: Promise<unknown>): Promise<PlatformError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PlatformError);
  return err as PlatformError;
}
