import type { Platform } from '#core/platforms';
import type { Connector } from './types.ts';

// Connectors load on first use, so a worker's cold start pays only for the platforms it serves.
const loaders: Record<Platform, () => Promise<{ connector: Connector }>> = {
  x: () => import('./x/index.ts'),
  linkedin: () => import('./linkedin/index.ts'),
  bluesky: () => import('./bluesky/index.ts'),
  mastodon: () => import('./mastodon/index.ts'),
  threads: () => import('./threads/index.ts'),
  instagram: () => import('./instagram/index.ts'),
  facebook: () => import('./facebook/index.ts'),
  tiktok: () => import('./tiktok/index.ts'),
  youtube: () => import('./youtube/index.ts'),
  pinterest: () => import('./pinterest/index.ts'),
};

export async function connectorFor(platform: Platform): Promise<Connector> {
  return (await loaders[platform]()).connector;
}
