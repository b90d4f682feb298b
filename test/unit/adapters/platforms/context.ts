import { expect } from 'vitest';
import {
  type Credentials,
  type MediaInput,
  type MetricsContext,
  PlatformError,
  type PublishContext,
} from '#adapters/platforms/types';
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

export type ContextOverrides = Partial<PublishContext> & Pick<PublishContext, 'channel' | 'credentials'>;

/**
 * A PublishContext for one attempt. Saved checkpoints and credentials are recorded; with
 * `keepCheckpoint` a saved checkpoint also becomes ctx.checkpoint, as the next attempt would see it.
 */
export function publishContext(
  overrides: ContextOverrides,
  opts: { keepCheckpoint?: boolean } = {},
): Recorded {
  const checkpoints: Checkpoint[] = [];
  const saved: Credentials[] = [];
  const ctx: PublishContext = {
    text: 'Hello from Herald',
    title: null,
    options: {},
    media: [],
    idempotencyKey: `post_1:${overrides.channel.id}`,
    checkpoint: null,
    attemptStartedAt: new Date(),
    async saveCheckpoint(cp) {
      checkpoints.push(structuredClone(cp));
      if (opts.keepCheckpoint) ctx.checkpoint = cp;
    },
    async saveCredentials(c) {
      saved.push(c);
    },
    ...overrides,
  };
  return { ctx, checkpoints, saved };
}

/** A MetricsContext for the channel of `ctx`; saving refreshed credentials does nothing unless given. */
export function metricsContext(
  ctx: Pick<PublishContext, 'channel' | 'credentials'>,
  externalIds: string[],
  saveCredentials: MetricsContext['saveCredentials'] = async () => {},
): MetricsContext {
  return { channel: ctx.channel, credentials: ctx.credentials, externalIds, saveCredentials };
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
    ...extra,
  };
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
