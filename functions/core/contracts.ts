import type * as z from 'zod/mini';
import { type OperationDoc, operationDocs } from './operation-docs.ts';
import { type OperationId, type RequestOf, requestSchemas, requests } from './requests.ts';
import {
  Analytics,
  Channel,
  ChannelConnection,
  ChannelList,
  DeletePostResponse,
  MediaAsset,
  MediaList,
  Post,
  PostList,
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
  /** `html`: a page for people (text/html), not JSON. */
  success: { status: number; schema: z.ZodMiniType | null; description: string; html?: boolean };
}

const responses = {
  listChannels: { status: 200, schema: ChannelList, description: 'The channels.' },
  listMedia: { status: 200, schema: MediaList, description: 'A page of media assets.' },
  createMediaUpload: { status: 201, schema: UploadTicket, description: 'The upload ticket.' },
  completeMediaUpload: { status: 200, schema: MediaAsset, description: 'The ready asset.' },
  listPosts: { status: 200, schema: PostList, description: 'A page of posts.' },
  createPost: { status: 201, schema: Post, description: 'The created post.' },
  getPost: { status: 200, schema: Post, description: 'The post.' },
  reschedulePost: { status: 200, schema: Post, description: 'The rescheduled post.' },
  deletePost: { status: 200, schema: DeletePostResponse, description: 'The post was deleted.' },
  publishPost: {
    status: 202,
    schema: PublishPostResponse,
    description: 'Accepted; delivery runs in the background.',
  },
  getAnalytics: { status: 200, schema: Analytics, description: 'The analytics summary.' },
  getUsage: { status: 200, schema: Usage, description: 'The plan and its meters.' },
  listWebhookEndpoints: { status: 200, schema: WebhookEndpointList, description: 'The endpoints.' },
  createWebhookEndpoint: {
    status: 201,
    schema: WebhookEndpointCreated,
    description: 'The endpoint and its secret.',
  },
  updateWebhookEndpoint: { status: 200, schema: WebhookEndpoint, description: 'The updated endpoint.' },
  deleteWebhookEndpoint: {
    status: 200,
    schema: WebhookEndpointDeleted,
    description: 'The endpoint was deleted.',
  },
  testWebhookEndpoint: { status: 200, schema: WebhookTestResult, description: 'The delivery result.' },
  rotateWebhookSecret: { status: 200, schema: WebhookSecretRotated, description: 'The new secret.' },
  listWebhookDeliveries: { status: 200, schema: WebhookDeliveryList, description: 'The latest deliveries.' },
  getOpenApi: { status: 200, schema: null, description: 'The OpenAPI 3.1 document.' },
  getDocsIndex: { status: 200, schema: null, html: true, description: "The guide's contents." },
  getDocsPage: { status: 200, schema: null, html: true, description: 'The page.' },
  getProblemPage: { status: 200, schema: null, html: true, description: "The code's page." },
  createChannelConnection: {
    status: 201,
    schema: ChannelConnection,
    description: 'The session: awaiting_authorization with its authorize_url, or connected (Bluesky).',
  },
  getChannelConnection: { status: 200, schema: ChannelConnection, description: 'The session.' },
  selectChannelAccount: { status: 200, schema: ChannelConnection, description: 'The connected session.' },
  disconnectChannel: { status: 200, schema: Channel, description: 'The channel, disconnected.' },
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
