import type { ChannelRecord } from './accounts.ts';
import type { FieldError } from './errors.ts';
import { checkFormat, formatMediaLimits, formatOf } from './formats.ts';
import { isId } from './ids.ts';
import { type MediaAssetRecord, mediaIdFromUrl } from './media.ts';
import { fittedErrors } from './media-fit.ts';
import { checkMediaFacts } from './media-limits.ts';
import { CAPABILITIES, channelCapabilities, checkComment, checkVariant, type Platform } from './platforms.ts';
import { duplicateChannelErrors } from './posts.ts';
import type { CreatePostInput } from './requests.ts';

// The content checks of a post's variants, in one place: createPost runs them, and so do the
// operations that take the same variants (updatePost, validatePost). Pure: the caller reads the
// channels and media assets the input names (postInputIds) and hands them in.

/** What a post's variants carry: the channels, media assets and text the checks look at. */
export type PostContentInput = Pick<CreatePostInput, 'variants'> & {
  /** The post's title: a LinkedIn poll's question when given (core/formats.ts). */
  title?: string | null | undefined;
};

/** The channels and ready media assets the input names, as read by the caller. */
export interface PostInputContext {
  channels: ReadonlyMap<string, ChannelRecord>;
  media: ReadonlyMap<string, MediaAssetRecord>;
  /** The time of the request (a YouTube publish_at must be after it); absent: the clock's. */
  now?: Date | undefined;
}

/** The ids to read for validatePostInput: every variant's channel, and the media of roots and thread items. */
export function postInputIds(input: PostContentInput): { channelIds: string[]; mediaIds: string[] } {
  const channelIds = [
    ...new Set(input.variants.map((v) => v.channel_id).filter((id) => isId('channel', id))),
  ];
  const urls = input.variants.flatMap((v) => [
    ...(v.media ?? []),
    ...(v.thread ?? []).flatMap((item) => item.media ?? []),
    // A YouTube thumbnail is one of the organization's image assets too.
    ...(typeof v.options?.thumbnail_url === 'string' ? [{ url: v.options.thumbnail_url }] : []),
  ]);
  const mediaIds = [...new Set(urls.map((m) => mediaIdFromUrl(m.url)).filter((id) => id !== null))];
  return { channelIds, mediaIds };
}

type MediaItem = NonNullable<CreatePostInput['variants'][number]['media']>[number];

/**
 * Each item must be a ready asset of the organization, of the type it claims, that the platform
 * takes by its probed facts (size, duration, aspect ratio, format: core/media-limits.ts).
 */
function mediaAssetErrors(
  platform: Platform,
  items: readonly MediaItem[],
  ctx: PostInputContext,
  base: string,
  /** The variant's format (core/formats.ts), whose media limits replace the platform's. */
  format: string | null = null,
  /** The variant's `options.media_fit` is `auto`: what a rendition mends is not refused. */
  fit = false,
): FieldError[] {
  const errors: FieldError[] = [];
  items.forEach((m, j) => {
    const id = mediaIdFromUrl(m.url);
    const asset = id ? ctx.media.get(id) : undefined;
    if (asset?.status !== 'ready' || asset.url !== m.url) {
      errors.push({
        pointer: `${base}/${j}/url`,
        code: 'unknown_media',
        message: 'Use the url of a ready media asset of this organization.',
      });
    } else if (asset.kind !== m.type) {
      errors.push({
        pointer: `${base}/${j}/type`,
        code: 'media_type_mismatch',
        message: `The asset is ${asset.kind}.`,
      });
    } else {
      const pointer = `${base}/${j}`;
      const carousel = items.length > 1;
      const limits = formatMediaLimits(platform, format, asset.kind);
      const refused = checkMediaFacts(platform, asset, pointer, { carousel, limits });
      // A rendition is planned from the platform's limits: a format's own (a story, a Short) stand.
      errors.push(
        ...(fit && !limits ? fittedErrors(platform, asset, refused, { pointer, carousel }) : refused),
      );
    }
  });
  return errors;
}

const reconnect = (scope: string, what: string) =>
  `This channel was connected without the ${scope} permission ${what} needs: reconnect it (createChannelConnection with its channel_id) to grant it.`;

/**
 * Field errors of a post's variants against their channels (docs/api/posts.md, "Validation"): one
 * variant per channel, a connected channel, ready media of the right type, the platform's text and
 * media rules for the root and each thread item, and a thread or first comment only where the
 * platform — and the channel's grant — allows it. Empty: the content may be published.
 */
export function validatePostInput(input: PostContentInput, ctx: PostInputContext): FieldError[] {
  const errors: FieldError[] = [...duplicateChannelErrors(input as CreatePostInput)];
  input.variants.forEach((v, i) => {
    const base = `/variants/${i}`;
    const channel = ctx.channels.get(v.channel_id);
    if (!channel) {
      errors.push({
        pointer: `${base}/channel_id`,
        code: 'unknown_channel',
        message: 'No connected channel with this id.',
      });
      return;
    }
    if (channel.status === 'disconnected') {
      errors.push({
        pointer: `${base}/channel_id`,
        code: 'channel_disconnected',
        message: 'This channel was disconnected; connect its account again to post to it.',
      });
      return;
    }
    const platform = channel.platform;
    // The format's rules first: where they and the platform's say the same (pointer and code),
    // the format's sentence is the clearer one.
    const own = checkFormat(platform, v, base, {
      media: ctx.media,
      title: input.title,
      now: ctx.now ?? new Date(),
    });
    errors.push(...own);
    const format = formatOf(platform, v.options);
    const fit = (v.options as { media_fit?: string } | undefined)?.media_fit === 'auto';
    errors.push(
      ...[
        ...mediaAssetErrors(platform, v.media ?? [], ctx, `${base}/media`, format, fit),
        ...checkVariant(platform, v, base),
      ].filter((e) => !own.some((o) => o.pointer === e.pointer && o.code === e.code)),
    );

    const caps = channelCapabilities(platform, channel.granted_scopes);
    if (v.thread) {
      if (!CAPABILITIES[platform].thread) {
        errors.push({
          pointer: `${base}/thread`,
          code: 'thread_unsupported',
          message: `${platform} has no threads; threads publish on x, bluesky, threads and mastodon.`,
        });
      } else if (!caps.thread) {
        errors.push({
          pointer: `${base}/thread`,
          code: 'thread_unsupported',
          message: reconnect(caps.missing.thread ?? 'reply', 'threads'),
        });
      } else {
        v.thread.forEach((item, j) => {
          const at = `${base}/thread/${j}`;
          if (item.body.trim() === '' && !item.media?.length) {
            errors.push({
              pointer: `${at}/body`,
              code: 'too_short',
              message: 'A thread item needs text or media.',
            });
          }
          errors.push(...mediaAssetErrors(platform, item.media ?? [], ctx, `${at}/media`, null, fit));
          errors.push(...checkVariant(platform, { body: item.body, media: item.media }, at));
        });
      }
    }
    if (v.first_comment) {
      if (!CAPABILITIES[platform].first_comment) {
        errors.push({
          pointer: `${base}/first_comment`,
          code: 'first_comment_unsupported',
          message: `Herald posts no first comment on ${platform}.`,
        });
      } else if (!caps.first_comment) {
        errors.push({
          pointer: `${base}/first_comment`,
          code: 'first_comment_unsupported',
          message: reconnect(caps.missing.first_comment ?? 'comment', 'a first comment'),
        });
      } else {
        errors.push(...checkComment(platform, v.first_comment.body, `${base}/first_comment/body`));
      }
    }
  });
  return errors;
}

/** `thread` when any variant carries a thread (the post's `type`). */
export function postType(input: PostContentInput): 'single' | 'thread' {
  return input.variants.some((v) => v.thread?.length) ? 'thread' : 'single';
}
