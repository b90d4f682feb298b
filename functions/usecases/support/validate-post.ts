import type { ChannelRecord } from '#core/accounts';
import type { FieldError } from '#core/errors';
import { isId } from '#core/ids';
import { type MediaAssetRecord, mediaIdFromUrl } from '#core/media';
import { checkMediaFacts } from '#core/media-limits';
import { checkVariant } from '#core/platforms';
import { duplicateChannelErrors } from '#core/posts';
import type { CreatePostInput } from '#core/requests';

// The checks of a post's content against what it names (its channels, its media assets) and their
// platforms: one function, so createPost, updatePost and validatePost refuse exactly the same.

/** What the checks read: the post's channels and media assets, by id. */
export interface PostContent {
  channels: Map<string, ChannelRecord>;
  media: Map<string, MediaAssetRecord>;
}

/** The channel and media ids a post's variants name (what to load before validatePostInput). */
export function contentIds(input: Pick<CreatePostInput, 'variants'>): {
  channelIds: string[];
  mediaIds: string[];
} {
  const channelIds = [
    ...new Set(input.variants.map((v) => v.channel_id).filter((id) => isId('channel', id))),
  ];
  const mediaIds = [
    ...new Set(
      input.variants.flatMap((v) =>
        [...(v.media ?? []), ...threadOf(v).flatMap((t) => t.media ?? [])]
          .map((m) => mediaIdFromUrl(m.url))
          .filter((id) => id !== null),
      ),
    ),
  ];
  return { channelIds, mediaIds };
}

/** Every field error of the variants: duplicates, unknown or disconnected channels, media, platform rules. */
export function validatePostInput(input: Pick<CreatePostInput, 'variants'>, ctx: PostContent): FieldError[] {
  const errors: FieldError[] = [...duplicateChannelErrors(input)];
  input.variants.forEach((v, i) => {
    const channel = ctx.channels.get(v.channel_id);
    if (!channel) {
      errors.push({
        pointer: `/variants/${i}/channel_id`,
        code: 'unknown_channel',
        message: 'No connected channel with this id.',
      });
      return;
    }
    if (channel.status === 'disconnected') {
      errors.push({
        pointer: `/variants/${i}/channel_id`,
        code: 'channel_disconnected',
        message: 'This channel was disconnected; connect its account again to post to it.',
      });
      return;
    }
    checkMedia(v.media ?? [], `/variants/${i}`, channel, ctx, errors);
    for (const [j, item] of threadOf(v).entries())
      checkMedia(item.media ?? [], `/variants/${i}/thread/${j}`, channel, ctx, errors);
    errors.push(...checkVariant(channel.platform, v, `/variants/${i}`));
  });
  return errors;
}

interface MediaItem {
  url: string;
  type: string;
}

/** A variant's thread items (absent until variants take threads); their media are checked as the root's. */
const threadOf = (v: object): ReadonlyArray<{ media?: readonly MediaItem[] | undefined }> =>
  (v as { thread?: ReadonlyArray<{ media?: readonly MediaItem[] }> }).thread ?? [];

/** The media items under `base`: ready assets of this org, of the kind given, that the platform takes. */
function checkMedia(
  items: readonly MediaItem[],
  base: string,
  channel: ChannelRecord,
  ctx: PostContent,
  errors: FieldError[],
): void {
  items.forEach((m, j) => {
    const id = mediaIdFromUrl(m.url);
    const asset = id ? ctx.media.get(id) : undefined;
    if (asset?.status !== 'ready' || asset.url !== m.url) {
      errors.push({
        pointer: `${base}/media/${j}/url`,
        code: 'unknown_media',
        message: 'Use the url of a ready media asset of this organization.',
      });
    } else if (asset.kind !== m.type) {
      errors.push({
        pointer: `${base}/media/${j}/type`,
        code: 'media_type_mismatch',
        message: `The asset is ${asset.kind}.`,
      });
    } else {
      // What the platform takes, from the probed facts (core/media-limits.ts).
      errors.push(
        ...checkMediaFacts(channel.platform, asset, `${base}/media/${j}`, { carousel: items.length > 1 }),
      );
    }
  });
}
