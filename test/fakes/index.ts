import type { Platform } from '#core/platforms';
import { createFake as bluesky } from './bluesky.ts';
import { createFake as facebook } from './facebook.ts';
import { createFake as instagram } from './instagram.ts';
import { createFake as linkedin } from './linkedin.ts';
import { createFake as mastodon } from './mastodon.ts';
import { createFake as pinterest } from './pinterest.ts';
import { FakePlatforms } from './server.ts';
import { createFake as threads } from './threads.ts';
import { createFake as tiktok } from './tiktok.ts';
import { createFake as x } from './x.ts';
import { createFake as youtube } from './youtube.ts';

const factories = {
  x,
  linkedin,
  bluesky,
  mastodon,
  threads,
  instagram,
  facebook,
  tiktok,
  youtube,
  pinterest,
} satisfies Record<Platform, unknown>;

/** Every platform's contract fake on one loopback server. */
export function allFakes(): FakePlatforms {
  return new FakePlatforms(Object.values(factories).map((f) => f()));
}
