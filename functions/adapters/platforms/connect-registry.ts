import type { Platform } from '#core/platforms';
import type { PlatformConnect } from './connect.ts';

// Which platform connects how: each platform's connect module, loaded on first use (a container
// initializes only the platforms it meets).

export type { OAuthConnect, PasswordConnect, PlatformAccount, PlatformConnect } from './connect.ts';

const loaders: Record<Platform, () => Promise<{ connect: PlatformConnect }>> = {
  x: () => import('./x/connect.ts'),
  linkedin: () => import('./linkedin/connect.ts'),
  bluesky: () => import('./bluesky/connect.ts'),
  mastodon: () => import('./mastodon/connect.ts'),
  threads: () => import('./threads/connect.ts'),
  instagram: () => import('./instagram/connect.ts'),
  facebook: () => import('./facebook/connect.ts'),
  tiktok: () => import('./tiktok/connect.ts'),
  youtube: () => import('./youtube/connect.ts'),
  pinterest: () => import('./pinterest/connect.ts'),
};

export async function connectFor(platform: Platform): Promise<PlatformConnect> {
  return (await loaders[platform]()).connect;
}
