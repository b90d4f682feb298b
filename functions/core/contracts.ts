import type * as z from 'zod/mini';
import type { ProblemCode } from './errors.ts';
import {
  Analytics,
  ChannelList,
  CreateMediaUploadBody,
  CreatePostBody,
  DeletePostResponse,
  ListMediaQuery,
  ListPostsQuery,
  MediaAsset,
  MediaList,
  NoQuery,
  Post,
  PostList,
  PublishPostResponse,
  ReschedulePostBody,
  UploadTicket,
  Usage,
} from './schemas.ts';

// What each operation takes and answers: the request pipeline validates with these, the OpenAPI
// document and the MCP tools are generated from them. Routes and scopes live in the manifest.

export interface Contract {
  description: string;
  body?: z.ZodMiniType;
  query?: z.ZodMiniType;
  success: { status: number; schema: z.ZodMiniType | null; description: string };
  /** Operation-specific problem codes; 401, 429 and 500 apply to every API-key operation. */
  errors: ProblemCode[];
  /** Extra request headers the operation reads. */
  idempotent?: boolean;
}

export const contracts = {
  listChannels: {
    description:
      'All connected channels with their connection health. Not paginated: the channel count is bounded by plan.',
    query: NoQuery,
    success: { status: 200, schema: ChannelList, description: 'The channels.' },
    errors: ['insufficient_scope', 'feature_not_enabled'],
  },
  listMedia: {
    description:
      'Media assets newest first, pending ones included. Pass `next_cursor` as `after` for the next page.',
    query: ListMediaQuery,
    success: { status: 200, schema: MediaList, description: 'A page of media assets.' },
    errors: ['invalid_request', 'validation_failed', 'insufficient_scope', 'feature_not_enabled'],
  },
  createMediaUpload: {
    description:
      'Starts an upload: creates a `pending` asset and answers a presigned `upload_url` valid for 15 minutes. PUT the raw bytes there with the same Content-Type, then call completeMediaUpload. The asset kind is inferred from content_type.',
    body: CreateMediaUploadBody,
    success: { status: 201, schema: UploadTicket, description: 'The upload ticket.' },
    errors: [
      'invalid_request',
      'validation_failed',
      'insufficient_scope',
      'feature_not_enabled',
      'payload_too_large',
    ],
  },
  completeMediaUpload: {
    description:
      'Probes the uploaded bytes (type, image dimensions, video/audio duration, a poster frame for videos) and makes the asset `ready`. No body. Repeating the call on a ready asset is a no-op. Before the bytes arrived or after the ticket expired: 409. Bytes that are not what content_type says: 400 (`content_mismatch`), the asset stays pending.',
    query: NoQuery,
    success: { status: 200, schema: MediaAsset, description: 'The ready asset.' },
    errors: [
      'validation_failed',
      'insufficient_scope',
      'feature_not_enabled',
      'resource_not_found',
      'resource_conflict',
    ],
  },
  listPosts: {
    description:
      'Posts newest first, each with its variants and latest deliveries. Pass `next_cursor` as `after` for the next page; `status` filters.',
    query: ListPostsQuery,
    success: { status: 200, schema: PostList, description: 'A page of posts.' },
    errors: ['invalid_request', 'validation_failed', 'insufficient_scope', 'feature_not_enabled'],
  },
  createPost: {
    description:
      'Creates a post with one variant per channel. Exactly one mode: `draft: true` (save only), `scheduled_at` (a future time) or `publish_now: true` (needs the Dangerous AI operations toggle). Each variant is checked against its platform (text length, media, options). With approval required in the workspace, scheduled and publish-now posts start as `needs_approval`.',
    body: CreatePostBody,
    success: { status: 201, schema: Post, description: 'The created post.' },
    errors: [
      'invalid_request',
      'validation_failed',
      'insufficient_scope',
      'feature_not_enabled',
      'dangerous_ops_disabled',
      'idempotency_in_progress',
      'payload_too_large',
      'idempotency_key_reused',
    ],
    idempotent: true,
  },
  getPost: {
    description:
      'A post with its variants and latest per-channel delivery outcomes; poll it to track delivery.',
    query: NoQuery,
    success: { status: 200, schema: Post, description: 'The post.' },
    errors: ['validation_failed', 'insufficient_scope', 'feature_not_enabled', 'resource_not_found'],
  },
  reschedulePost: {
    description:
      'Moves a draft (with variants), scheduled or failed post to a new future `scheduled_at`. Published, publishing and needs_approval posts answer 409.',
    body: ReschedulePostBody,
    success: { status: 200, schema: Post, description: 'The rescheduled post.' },
    errors: [
      'invalid_request',
      'validation_failed',
      'insufficient_scope',
      'feature_not_enabled',
      'resource_not_found',
      'resource_conflict',
      'payload_too_large',
    ],
  },
  deletePost: {
    description:
      'Removes a post (needs the Dangerous AI operations toggle). A publishing post answers 409. Content already published on a platform is not retracted.',
    query: NoQuery,
    success: { status: 200, schema: DeletePostResponse, description: 'The post was deleted.' },
    errors: [
      'validation_failed',
      'insufficient_scope',
      'feature_not_enabled',
      'dangerous_ops_disabled',
      'resource_not_found',
      'resource_conflict',
    ],
  },
  publishPost: {
    description:
      'Publishes a draft, scheduled or failed post now (needs the Dangerous AI operations toggle); delivery continues in the background, read it with getPost. A publishing post is accepted as-is; a published one answers 409. Republishing a failed post re-sends only the channels that did not publish.',
    query: NoQuery,
    success: {
      status: 202,
      schema: PublishPostResponse,
      description: 'Accepted; delivery runs in the background.',
    },
    errors: [
      'validation_failed',
      'insufficient_scope',
      'feature_not_enabled',
      'dangerous_ops_disabled',
      'resource_not_found',
      'resource_conflict',
    ],
  },
  getAnalytics: {
    description:
      'A summary of the workspace: posts per status, delivery outcomes per (post, channel) and their success rate, posts published and failed per UTC day over the last 14 days (today last), and engagement summed across the platforms synced so far (refreshed hourly for posts published in the last 7 days).',
    query: NoQuery,
    success: { status: 200, schema: Analytics, description: 'The analytics summary.' },
    errors: ['validation_failed', 'insufficient_scope', 'feature_not_enabled'],
  },
  getUsage: {
    description:
      'The effective plan and its meters for the current UTC calendar month: `api_requests` (every authenticated /v1 call not refused with 429, this one included), `posts_per_month` (posts first scheduled or published this month) and `channels` (connected channels).',
    query: NoQuery,
    success: { status: 200, schema: Usage, description: 'The plan and its meters.' },
    errors: ['validation_failed', 'insufficient_scope', 'feature_not_enabled'],
  },
  getOpenApi: {
    description: 'This document. Served without an API key.',
    success: { status: 200, schema: null, description: 'The OpenAPI 3.1 document.' },
    errors: [],
  },
} as const satisfies Record<string, Contract>;

export type OperationId = keyof typeof contracts;
