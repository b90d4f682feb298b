import { listEdge, pageGraph } from '../meta/client.ts';
import type { ContainerPlatform } from '../meta/publish.ts';
import { found, metaFormat, parseGraphTime, singleItem } from '../meta/publish.ts';
import { outcomeUnknown } from '../support.ts';
import { PlatformError, type PublishContext } from '../types.ts';

// Instagram API with Facebook Login (graph.facebook.com), content publishing for professional
// accounts through media containers (meta/publish.ts), by `options.format`:
// - `feed` (default): POST /{ig-user-id}/media with image_url; a single video goes as
//   media_type=REELS (Instagram has no feed VIDEO since 2023-11-09: "all single feed videos published
//   through the Content Publishing API will be shared as reels"); CAROUSEL over item containers
//   (VIDEO items).
// - `reel`: one video, media_type=REELS with video_url, caption and share_to_feed=true (shown in the
//   feed and the Reels tab).
// - `story`: one image or video, media_type=STORIES with image_url or video_url. The IG User media
//   reference lists no caption (nor alt_text) for story containers, so none is sent.
// Then GET /{container-id}?fields=status_code,status until FINISHED, and
// POST /{ig-user-id}/media_publish. Meta cURLs media from public URLs.
// (developers.facebook.com/docs/instagram-platform/instagram-graph-api/reference/ig-user/media,
// .../content-publishing; stories: .../reference/ig-user/stories.)

const PLATFORM = 'instagram';

const refuse = (message: string) =>
  new PlatformError('user_content', `${PLATFORM}: ${message}`, { retryable: false });

export function instagramContainers(ctx: PublishContext): ContainerPlatform {
  const { client, accountId } = pageGraph(PLATFORM, ctx.credentials);
  const format = metaFormat(ctx);
  const base: ContainerPlatform = {
    platform: PLATFORM,
    client,
    accountId,
    createEdge: 'media',
    publishEdge: 'media_publish',
    postsEdge: 'media',
    textField: 'caption',
    // On ERROR, `status` carries the reason (an error subcode and message).
    statusFields: ['status_code', 'status'],
    noun: 'media',
    common: (c) => ({ caption: c.text || undefined }),
    textOnly() {
      throw refuse('posts need an image or a video');
    },
    item(m, carousel) {
      if (m.type === 'image') {
        // alt_text is accepted for image posts (not reels or stories).
        return { image_url: m.url, alt_text: m.alt || undefined, is_carousel_item: carousel || undefined };
      }
      if (m.type === 'video') {
        // Carousel items are VIDEO; a single video is published as a reel.
        return carousel
          ? { media_type: 'VIDEO', video_url: m.url, is_carousel_item: true }
          : { media_type: 'REELS', video_url: m.url };
      }
      throw refuse(`${m.type} attachments are not supported`);
    },
  };
  if (format === 'reel') {
    return {
      ...base,
      item(m) {
        singleItem(PLATFORM, ctx, 'reel');
        return { media_type: 'REELS', video_url: m.url, share_to_feed: true };
      },
    };
  }
  if (format === 'story') {
    return {
      ...base,
      postsEdge: 'stories',
      noun: 'story',
      common: () => ({}),
      item(m) {
        singleItem(PLATFORM, ctx, 'story');
        return m.type === 'image'
          ? { media_type: 'STORIES', image_url: m.url }
          : { media_type: 'STORIES', video_url: m.url };
      },
      // A story has no caption to match: the account's one story made since the attempt
      // (GET /{ig-user-id}/stories lists the last 24 hours'). Two or more: it cannot be told which.
      async findPublished(_ctx, cp, since) {
        const items = await listEdge<{ id: string; timestamp?: string; permalink?: string }>(
          client,
          `/${accountId}/stories`,
          { fields: 'id,timestamp,permalink', limit: 50 },
        );
        const made = items.filter((m) => !(parseGraphTime(m.timestamp) < since * 1000));
        const [only, ...more] = made;
        if (!only || more.length)
          throw outcomeUnknown(
            PLATFORM,
            `container ${cp.container_id} is PUBLISHED and ${made.length} stories were made since the attempt`,
          );
        return found(only.id, only.permalink);
      },
    };
  }
  return base;
}
