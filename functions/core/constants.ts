// The API's vocabularies and limits, without zod: runtime code imports these without building
// any schema.

export const POST_STATUSES = [
  'draft',
  'scheduled',
  'publishing',
  'published',
  'failed',
  'needs_approval',
] as const;
export type PostStatus = (typeof POST_STATUSES)[number];
export const CHANNEL_STATUSES = ['live', 'reauth_required', 'error', 'disconnected'] as const;
export const DELIVERY_STAGES = [
  'queued',
  'sending',
  'retrying',
  'published',
  'failed',
  'removing',
  'removed',
] as const;
export const ERROR_CATEGORIES = [
  'auth_expired',
  'user_content',
  'media_error',
  'rate_limited',
  'platform_rejected',
  'system',
] as const;
export const PLATFORMS = [
  'x',
  'linkedin',
  'bluesky',
  'mastodon',
  'threads',
  'instagram',
  'facebook',
  'tiktok',
  'youtube',
  'pinterest',
] as const;
export type Platform = (typeof PLATFORMS)[number];

export const MEDIA_KINDS = ['image', 'video', 'audio', 'document'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

export const LIMITS = {
  variants: 50,
  mediaPerVariant: 35,
  variantBody: 63206,
  postBody: 63206,
  title: 200,
  alt: 1500,
  /** Follow-up items of a variant's thread (core/posts.ts MAX_THREAD_ITEMS). */
  threadItems: 24,
  /** How far ahead a post may be scheduled. */
  scheduleHorizonDays: 730,
} as const;

/**
 * What a published delivery did not do as asked without failing (Delivery `warnings`): a link card
 * the page did not give, a rendition made by `media_fit` published in place of the asset.
 */
export const DELIVERY_WARNING_CODES = [
  'link_card_unavailable',
  'media_fitted',
  // YouTube: the video is up, but its thumbnail or playlist step failed for good.
  'thumbnail_failed',
  'playlist_failed',
] as const;
export type DeliveryWarningCode = (typeof DELIVERY_WARNING_CODES)[number];
