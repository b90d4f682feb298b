import { pageGraph } from '../meta/client.ts';
import type { ContainerPlatform } from '../meta/publish.ts';
import { PlatformError, type PublishContext } from '../types.ts';

// Instagram API with Facebook Login (graph.facebook.com), content publishing for professional
// accounts through media containers (meta/publish.ts): POST /{ig-user-id}/media (image_url;
// media_type=REELS with video_url, since single feed videos are published as reels; CAROUSEL over
// item containers), GET /{container-id}?fields=status_code,status until FINISHED, then
// POST /{ig-user-id}/media_publish. Meta cURLs media from public URLs.

const PLATFORM = 'instagram';

export function instagramContainers(ctx: PublishContext): ContainerPlatform {
  const { client, accountId } = pageGraph(PLATFORM, ctx.credentials);
  return {
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
      throw new PlatformError('user_content', `${PLATFORM}: posts need an image or a video`, {
        retryable: false,
      });
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
      throw new PlatformError('user_content', `${PLATFORM}: ${m.type} attachments are not supported`, {
        retryable: false,
      });
    },
  };
}
