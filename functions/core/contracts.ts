import type * as z from 'zod/mini';
import { type OperationDoc, operationDocs } from './operation-docs.ts';
import { type OperationId, type RequestOf, requestSchemas, requests } from './requests.ts';
import {
  Analytics,
  Channel,
  ChannelConnection,
  ChannelList,
  ChannelOptions,
  DeletePostResponse,
  Generation,
  Health,
  InboxItem,
  InboxItemList,
  InboxReply,
  MediaAsset,
  MediaList,
  Post,
  PostList,
  PostValidation,
  PublishPostResponse,
  UploadTicket,
  Usage,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointCreated,
  WebhookEndpointDeleted,
  WebhookEndpointList,
  WebhookSecretRotated,
  WebhookTestResult,
} from './schemas.ts';

// What each operation takes and answers, whole: the OpenAPI document is generated from these.
// The parts live where the Lambdas can take them alone: request schemas in requests.ts (every API
// function), descriptions and problems in operation-docs.ts (the MCP server); routes and scopes
// in the manifest.

export interface Contract extends OperationDoc {
  body?: z.ZodMiniType;
  query?: z.ZodMiniType;
  /** The body may be left out (requests.ts). */
  optionalBody?: boolean;
  /**
   * `html`: a page for people (text/html), not JSON. `mediaType`: a JSON type other than
   * application/json. `unhealthy`: a second status answered with the same body (GET /health's 503).
   */
  success: {
    status: number;
    schema: z.ZodMiniType | null;
    description: string;
    html?: boolean;
    mediaType?: string;
    unhealthy?: { status: number; description: string };
    /** A second success status answered with the same body (importMedia's 202). */
    alternate?: { status: number; description: string };
  };
}

/** The answer of an operation that reads or changes something (200), and of one that creates it (201). */
const ok = <S extends z.ZodMiniType | null>(schema: S, description: string) =>
  ({ status: 200, schema, description }) as const;
const created = <S extends z.ZodMiniType>(schema: S, description: string) =>
  ({ status: 201, schema, description }) as const;

const responses = {
  listChannels: ok(ChannelList, 'The channels.'),
  listMedia: ok(MediaList, 'A page of media assets.'),
  createMediaUpload: created(UploadTicket, 'The upload ticket.'),
  completeMediaUpload: ok(MediaAsset, 'The ready asset.'),
  importMedia: {
    ...created(MediaAsset, 'The ready asset: the import finished within 10 s.'),
    alternate: {
      status: 202,
      description: 'The asset, `pending`: the import continues in the background (poll getMedia).',
    },
  },
  getMedia: ok(MediaAsset, 'The asset.'),
  deleteMedia: { status: 204, schema: null, description: 'The asset and its files were deleted.' },
  listPosts: ok(PostList, 'A page of posts.'),
  createPost: created(Post, 'The created post.'),
  getPost: ok(Post, 'The post.'),
  reschedulePost: ok(Post, 'The rescheduled post.'),
  deletePost: ok(DeletePostResponse, 'The post was deleted.'),
  publishPost: {
    status: 202,
    schema: PublishPostResponse,
    description: 'Accepted; delivery runs in the background.',
  },
  updatePost: ok(Post, 'The post with its new content (its ETag in the `ETag` header).'),
  validatePost: ok(PostValidation, 'What createPost would refuse, and warnings.'),
  unpublishPost: {
    status: 202,
    schema: Post,
    description:
      'Accepted; the removals run in the background (deliveries `removing`, then `removed`). A channel whose platform cannot remove posts keeps `published` with `error: unpublish_unsupported`.',
  },
  replyToInboxItem: {
    status: 202,
    schema: InboxReply,
    description:
      "Accepted: the reply, `queued`; it is sent in the background and shows in the item's `replies`.",
  },
  createGeneration: ok(Generation, 'The suggestions and the credits they used.'),
  getAnalytics: ok(Analytics, 'The analytics summary.'),
  getUsage: ok(Usage, 'The plan and its meters.'),
  listWebhookEndpoints: ok(WebhookEndpointList, 'The endpoints.'),
  createWebhookEndpoint: created(WebhookEndpointCreated, 'The endpoint and its secret.'),
  updateWebhookEndpoint: ok(WebhookEndpoint, 'The updated endpoint.'),
  deleteWebhookEndpoint: ok(WebhookEndpointDeleted, 'The endpoint was deleted.'),
  testWebhookEndpoint: ok(WebhookTestResult, 'The delivery result.'),
  rotateWebhookSecret: ok(WebhookSecretRotated, 'The new secret.'),
  listWebhookDeliveries: ok(WebhookDeliveryList, 'The latest deliveries.'),
  getOpenApi: ok(null, 'The OpenAPI 3.1 document.'),
  getHealth: {
    ...ok(Health, '`pass`, or `warn` (up, with a concern: the sweeper has not run yet).'),
    mediaType: 'application/health+json',
    unhealthy: { status: 503, description: '`fail`: the table does not answer, or the sweeper stopped.' },
  },
  getDocsIndex: { ...ok(null, "The guide's contents."), html: true },
  getDocsPage: { ...ok(null, 'The page.'), html: true },
  getProblemPage: { ...ok(null, "The code's page."), html: true },
  getOperatorGuidePage: { ...ok(null, 'The page.'), html: true },
  createChannelConnection: created(
    ChannelConnection,
    'The session: awaiting_authorization with its authorize_url, or connected (Bluesky).',
  ),
  getChannelConnection: ok(ChannelConnection, 'The session.'),
  selectChannelAccount: ok(ChannelConnection, 'The connected session.'),
  disconnectChannel: ok(Channel, 'The channel, disconnected.'),
  getChannel: ok(Channel, 'The channel.'),
  getChannelOptions: ok(ChannelOptions, "The channel's capabilities, options and live choices."),
  listInbox: ok(InboxItemList, 'A page of inbox items.'),
  getInboxItem: ok(InboxItem, 'The item (its ETag in the `ETag` header).'),
  updateInboxItem: ok(InboxItem, 'The item with its new status (its ETag in the `ETag` header).'),
  oauthCallback: {
    status: 303,
    schema: null,
    description:
      "Sends the browser on to the session's redirect_uri with `connection_id`, `status` and, when it failed, `error` (without a redirect_uri: a short HTML page saying the outcome).",
  },
} as const satisfies Record<OperationId, Contract['success']>;

export type { OperationId };

/** Every operation's contract: its description, problems and answer, and its request schemas (built). */
export const contracts = Object.fromEntries(
  (Object.keys(requests) as OperationId[]).map((id) => [
    id,
    { ...operationDocs[id], success: responses[id], ...requestSchemas(id) },
  ]),
) as unknown as {
  [K in OperationId]: (typeof operationDocs)[K] & { success: (typeof responses)[K] } & RequestOf<K>;
};
