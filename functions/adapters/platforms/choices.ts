import type { Platform } from '#core/platforms';
import type { Connector } from './types.ts';

// The connectors' choices hooks alone (the same functions their `connector.choices` is), loaded on
// first use: getChannelOptions bundles the four platforms' list calls, not every connector's publish.

type Choices = NonNullable<Connector['choices']>;

const loaders: Partial<Record<Platform, () => Promise<{ choices: Choices }>>> = {
  pinterest: () => import('./pinterest/choices.ts'),
  youtube: () => import('./youtube/choices.ts'),
  tiktok: () => import('./tiktok/choices.ts'),
  linkedin: () => import('./linkedin/choices.ts'),
};

/** The platform's choices hook; undefined when its options have no live values. */
export async function choicesFor(platform: Platform): Promise<Choices | undefined> {
  return (await loaders[platform]?.())?.choices;
}
