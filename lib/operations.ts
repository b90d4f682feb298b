// The one list of HTTP operations. The CDK stack, the local stack, the OpenAPI generator and the MCP
// server all read it; nothing else names a route.

// Its vocabulary (scopes, features, queue names, the console's path) lives in a leaf the functions
// read too: this file imports nothing else from functions/, and core never imports this file.
import {
  CONSOLE_PATH,
  type Feature,
  FIT_FUNCTION_ENV,
  PROBE_FUNCTION_ENV,
  QUEUE_URL_ENV,
  type QueueName,
  SCOPES,
  type Scope,
} from '../functions/core/vocabulary.ts';

export { CONSOLE_PATH, type Feature, type QueueName, SCOPES, type Scope };

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a function may touch; the stack turns it into least-privilege grants. */
export interface Access {
  table: 'none' | 'RO' | 'RW';
  /** Needs the cursor-signing secret (paginated lists). */
  cursor?: boolean;
  /**
   * The media bucket: `presign` signs uploads (PutObject, no reads), `RW` completes them (reads
   * and removes uploads, copies them into the media bucket), `probe` reads uploads and writes
   * posters only (`…/_poster.jpg`), `RO` reads asset bytes (GetObject), `import` is `RW` plus
   * writing uploads (the fetched bytes) and removing what a refused import left, `delete` removes
   * an asset's objects (DeleteObject only), `fit` reads media objects and writes renditions only
   * (`…/_fit-*`).
   */
  media?: 'presign' | 'RW' | 'probe' | 'RO' | 'import' | 'delete' | 'fit';
  /** Needs the ffmpeg/ffprobe layer (the probe function only; no other bundle carries it). */
  ffmpeg?: boolean;
  /**
   * Stores link cards' images the platform needs re-encoded, for the fit function to read (the
   * delivery worker): PutObject under `orgs/_cards/media/*` only, a prefix that expires in a day.
   */
  cardImages?: boolean;
  /** The webhook signing-secret key: `encrypt` seals new secrets, `decrypt` opens them to sign. */
  secrets?: Array<'encrypt' | 'decrypt'>;
  /**
   * The connection-secrets key (channel tokens, platform apps' client secrets, sessions' grants):
   * `seal` makes data keys (GenerateDataKey), `open` unwraps them (Decrypt).
   */
  connectionSecrets?: Array<'seal' | 'open'>;
  /** May start executions of these state machines. */
  starts?: StateMachineName[];
  /** Sends the webhook owner notification email (SES). */
  email?: boolean;
  /**
   * Queue messages sent by reference (over the queues' size limit; functions/shared/queue-bodies.ts):
   * `put` stores bodies, `get` reads them. Only where a message can carry a whole post.
   */
  queueBodies?: Array<'put' | 'get'>;
  /** Sends messages to these queues (SendMessage on them, their URLs in the environment). */
  sends?: QueueName[];
  /**
   * Calls the stage's generation engine (its `ai` setting): the HERALD_AI_* environment, and
   * bedrock:InvokeModel on exactly the configured model (its profile and destination regions), or
   * opening the OpenAI-compatible key. Without the setting: nothing (the rule-based engine).
   */
  ai?: true;
}

export interface Operation {
  id: string;
  method: HttpMethod;
  /** API Gateway style path, `{id}` for parameters. */
  path: string;
  /** null: served without an API key. */
  scope: Scope | null;
  /** The plan feature the operation needs, if any (403 feature_not_enabled otherwise). */
  feature?: Feature;
  /** Handler module, relative to the repository root; it exports `handler`. */
  entry: string;
  summary: string;
  tag: 'Channels' | 'Media' | 'Posts' | 'Usage' | 'Webhooks' | 'Meta' | 'Inbox' | 'AI';
  access: Access;
  /** @default DEFAULT_TIMEOUT_SECONDS */
  timeoutSeconds?: number;
  /** @default 1024 */
  memoryMb?: number;
  /**
   * The route's own throttle (requests per second, burst), under the stage's; API Gateway answers
   * 429 past it, and so does the local front door. For routes anyone can call without a key.
   */
  throttle?: { rateLimit: number; burstLimit: number };
  /** Its bundle carries the API guide's markdown (API_GUIDE_SOURCE), copied next to it. */
  bundlesGuide?: boolean;
}

/** A function's timeout unless its entry says otherwise (CDK and the local stack alike). */
export const DEFAULT_TIMEOUT_SECONDS = 10;

export const operations: readonly Operation[] = [
  {
    id: 'listChannels',
    method: 'GET',
    path: '/v1/channels',
    scope: 'channels:read',
    entry: 'functions/handlers/list-channels.ts',
    summary: 'List connected channels',
    tag: 'Channels',
    access: { table: 'RO' },
  },
  {
    id: 'listMedia',
    method: 'GET',
    path: '/v1/media',
    scope: 'posts:read',
    entry: 'functions/handlers/list-media.ts',
    summary: 'List media assets, newest first',
    tag: 'Media',
    access: { table: 'RO', cursor: true },
  },
  {
    id: 'createMediaUpload',
    method: 'POST',
    path: '/v1/media/uploads',
    scope: 'posts:write',
    entry: 'functions/handlers/create-media-upload.ts',
    summary: 'Start a media upload (presigned PUT)',
    tag: 'Media',
    access: { table: 'RW', media: 'presign' },
  },
  {
    id: 'completeMediaUpload',
    method: 'POST',
    path: '/v1/media/uploads/{id}/complete',
    scope: 'posts:write',
    entry: 'functions/handlers/complete-media-upload.ts',
    summary: 'Probe an uploaded file and make the asset ready',
    tag: 'Media',
    // Video and audio are probed by probeMedia (a worker below), which it invokes and waits for.
    access: { table: 'RW', media: 'RW' },
    // Waits for the probe of up to 1 GiB of video; API Gateway still answers after 30 s at most.
    timeoutSeconds: 29,
  },
  {
    id: 'importMedia',
    method: 'POST',
    path: '/v1/media/imports',
    scope: 'posts:write',
    entry: 'functions/handlers/import-media.ts',
    summary: 'Import a media file from a URL',
    tag: 'Media',
    // Fetches and probes for 10 s; what is not done by then the mediaImport worker finishes (a
    // delayed message sent before anything is stored, so a crash leaves no asset pending).
    access: { table: 'RW', media: 'import', sends: ['mediaImport'] },
    timeoutSeconds: 15,
  },
  {
    id: 'getMedia',
    method: 'GET',
    path: '/v1/media/{id}',
    scope: 'posts:read',
    entry: 'functions/handlers/get-media.ts',
    summary: 'Get a media asset',
    tag: 'Media',
    access: { table: 'RO' },
  },
  {
    id: 'deleteMedia',
    method: 'DELETE',
    path: '/v1/media/{id}',
    scope: 'posts:write',
    entry: 'functions/handlers/delete-media.ts',
    summary: 'Delete a media asset',
    tag: 'Media',
    access: { table: 'RW', media: 'delete' },
  },
  {
    id: 'listPosts',
    method: 'GET',
    path: '/v1/posts',
    scope: 'posts:read',
    entry: 'functions/handlers/list-posts.ts',
    summary: 'List posts, newest first',
    tag: 'Posts',
    access: { table: 'RO', cursor: true },
  },
  {
    id: 'createPost',
    method: 'POST',
    path: '/v1/posts',
    scope: 'posts:write',
    entry: 'functions/handlers/create-post.ts',
    summary: 'Create a draft, scheduled or immediately published post',
    tag: 'Posts',
    access: { table: 'RW' },
  },
  {
    id: 'getPost',
    method: 'GET',
    path: '/v1/posts/{id}',
    scope: 'posts:read',
    entry: 'functions/handlers/get-post.ts',
    summary: 'Get a post with its per-channel delivery outcomes',
    tag: 'Posts',
    access: { table: 'RO' },
  },
  {
    id: 'reschedulePost',
    method: 'PATCH',
    path: '/v1/posts/{id}',
    scope: 'posts:write',
    entry: 'functions/handlers/reschedule-post.ts',
    summary: 'Reschedule a post',
    tag: 'Posts',
    access: { table: 'RW' },
  },
  {
    id: 'deletePost',
    method: 'DELETE',
    path: '/v1/posts/{id}',
    scope: 'posts:write',
    entry: 'functions/handlers/delete-post.ts',
    summary: 'Delete a post',
    tag: 'Posts',
    access: { table: 'RW' },
  },
  {
    id: 'publishPost',
    method: 'POST',
    path: '/v1/posts/{id}/publish',
    scope: 'posts:write',
    entry: 'functions/handlers/publish-post.ts',
    summary: 'Publish a post now',
    tag: 'Posts',
    access: { table: 'RW' },
  },
  {
    id: 'updatePost',
    method: 'PUT',
    path: '/v1/posts/{id}',
    scope: 'posts:write',
    entry: 'functions/handlers/update-post.ts',
    summary: "Replace a post's content (title, body, variants)",
    tag: 'Posts',
    access: { table: 'RW' },
  },
  {
    // A literal path: API Gateway prefers it to /v1/posts/{id}, and no POST route has that shape.
    id: 'validatePost',
    method: 'POST',
    path: '/v1/posts/validate',
    scope: 'posts:write',
    entry: 'functions/handlers/validate-post.ts',
    summary: 'Check a createPost body without creating anything',
    tag: 'Posts',
    // Reads the org, the channels and the media; writes only the request's admission.
    access: { table: 'RO' },
  },
  {
    id: 'unpublishPost',
    method: 'POST',
    path: '/v1/posts/{id}/unpublish',
    scope: 'posts:write',
    entry: 'functions/handlers/unpublish-post.ts',
    summary: 'Take a published post down from its platforms',
    tag: 'Posts',
    // Reads the post's channels for their platforms; the removals are the unpublish worker's.
    access: { table: 'RW' },
  },
  {
    id: 'replyToInboxItem',
    method: 'POST',
    path: '/v1/inbox/{id}/replies',
    scope: 'inbox:write',
    feature: 'inbox',
    entry: 'functions/handlers/reply-to-inbox-item.ts',
    summary: 'Answer an inbox item on its platform',
    tag: 'Inbox',
    // Reads the org, the item and its channel; appends the reply. The inbox reply worker sends it.
    access: { table: 'RW' },
  },
  {
    id: 'createGeneration',
    method: 'POST',
    path: '/v1/ai/generations',
    scope: 'ai:generate',
    feature: 'ai',
    entry: 'functions/handlers/create-generation.ts',
    summary: 'Write post, thread, alt text or reply suggestions with a model',
    tag: 'AI',
    // Reads the org, channels, the asset or the inbox item; writes the credits and the reservation,
    // and the idempotency record. An image's bytes are read for a model that accepts images.
    access: { table: 'RW', media: 'RO', ai: true },
    // The model's timeout (20 s by default) twice: the answer and at most one re-ask.
    timeoutSeconds: 50,
  },
  {
    id: 'getAnalytics',
    method: 'GET',
    path: '/v1/analytics',
    scope: 'analytics:read',
    feature: 'analytics',
    entry: 'functions/handlers/get-analytics.ts',
    summary: 'Read the workspace analytics summary',
    tag: 'Usage',
    access: { table: 'RO' },
  },
  {
    id: 'getUsage',
    method: 'GET',
    path: '/v1/usage',
    scope: 'analytics:read',
    entry: 'functions/handlers/get-usage.ts',
    summary: 'Read the plan and its usage meters',
    tag: 'Usage',
    access: { table: 'RO' },
  },
  {
    id: 'listWebhookEndpoints',
    method: 'GET',
    path: '/v1/webhook-endpoints',
    scope: 'webhooks:read',
    feature: 'webhooks',
    entry: 'functions/handlers/list-webhook-endpoints.ts',
    summary: 'List webhook endpoints',
    tag: 'Webhooks',
    access: { table: 'RO', cursor: true },
  },
  {
    id: 'createWebhookEndpoint',
    method: 'POST',
    path: '/v1/webhook-endpoints',
    scope: 'webhooks:write',
    feature: 'webhooks',
    entry: 'functions/handlers/create-webhook-endpoint.ts',
    summary: 'Create a webhook endpoint (answers its signing secret once)',
    tag: 'Webhooks',
    access: { table: 'RW', secrets: ['encrypt'] },
  },
  {
    id: 'updateWebhookEndpoint',
    method: 'PATCH',
    path: '/v1/webhook-endpoints/{id}',
    scope: 'webhooks:write',
    feature: 'webhooks',
    entry: 'functions/handlers/update-webhook-endpoint.ts',
    summary: 'Update a webhook endpoint',
    tag: 'Webhooks',
    access: { table: 'RW' },
  },
  {
    id: 'deleteWebhookEndpoint',
    method: 'DELETE',
    path: '/v1/webhook-endpoints/{id}',
    scope: 'webhooks:write',
    feature: 'webhooks',
    entry: 'functions/handlers/delete-webhook-endpoint.ts',
    summary: 'Delete a webhook endpoint',
    tag: 'Webhooks',
    access: { table: 'RW' },
  },
  {
    id: 'testWebhookEndpoint',
    method: 'POST',
    path: '/v1/webhook-endpoints/{id}/test',
    scope: 'webhooks:write',
    feature: 'webhooks',
    entry: 'functions/handlers/test-webhook-endpoint.ts',
    summary: 'Send a signed test event now',
    tag: 'Webhooks',
    access: { table: 'RW', secrets: ['decrypt'] },
    // A receiver has 15 s to answer.
    timeoutSeconds: 20,
  },
  {
    id: 'rotateWebhookSecret',
    method: 'POST',
    path: '/v1/webhook-endpoints/{id}/rotate-secret',
    scope: 'webhooks:write',
    feature: 'webhooks',
    entry: 'functions/handlers/rotate-webhook-secret.ts',
    summary: 'Rotate the signing secret (24 h overlap)',
    tag: 'Webhooks',
    access: { table: 'RW', secrets: ['encrypt'] },
  },
  {
    id: 'listWebhookDeliveries',
    method: 'GET',
    path: '/v1/webhook-endpoints/{id}/deliveries',
    scope: 'webhooks:read',
    feature: 'webhooks',
    entry: 'functions/handlers/list-webhook-deliveries.ts',
    summary: "Read an endpoint's delivery log",
    tag: 'Webhooks',
    access: { table: 'RO', cursor: true },
  },
  {
    id: 'createChannelConnection',
    method: 'POST',
    path: '/v1/channel-connections',
    scope: 'channels:write',
    entry: 'functions/handlers/create-channel-connection.ts',
    summary: 'Start connecting a social account',
    tag: 'Channels',
    access: { table: 'RW', connectionSecrets: ['seal'] },
    // Bluesky is checked with its PDS and Mastodon instances register an app, within the request.
    timeoutSeconds: 20,
  },
  {
    id: 'getChannelConnection',
    method: 'GET',
    path: '/v1/channel-connections/{id}',
    scope: 'channels:write',
    entry: 'functions/handlers/get-channel-connection.ts',
    summary: 'Read a connection session',
    tag: 'Channels',
    access: { table: 'RO' },
  },
  {
    id: 'selectChannelAccount',
    method: 'POST',
    path: '/v1/channel-connections/{id}/select',
    scope: 'channels:write',
    entry: 'functions/handlers/select-channel-account.ts',
    summary: 'Pick the account a connection session connects',
    tag: 'Channels',
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
  },
  {
    id: 'disconnectChannel',
    method: 'DELETE',
    path: '/v1/channels/{id}',
    scope: 'channels:write',
    entry: 'functions/handlers/disconnect-channel.ts',
    summary: 'Disconnect a channel (revoke, erase tokens)',
    tag: 'Channels',
    access: { table: 'RW', connectionSecrets: ['open'] },
    timeoutSeconds: 20,
  },
  {
    id: 'getChannel',
    method: 'GET',
    path: '/v1/channels/{id}',
    scope: 'channels:read',
    entry: 'functions/handlers/get-channel.ts',
    summary: 'Read one channel',
    tag: 'Channels',
    access: { table: 'RO' },
  },
  {
    id: 'getChannelOptions',
    method: 'GET',
    path: '/v1/channels/{id}/options',
    scope: 'channels:read',
    entry: 'functions/handlers/get-channel-options.ts',
    summary: "A channel's capabilities, options and live choices",
    tag: 'Channels',
    // RW: the choices' cache, and renewed tokens (sealed: `seal`) when the platform asks for them.
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
    // The platform's lists: a few pages (Pinterest boards, LinkedIn organizations and their names).
    timeoutSeconds: 20,
  },
  {
    id: 'listInbox',
    method: 'GET',
    path: '/v1/inbox',
    scope: 'inbox:read',
    feature: 'inbox',
    entry: 'functions/handlers/list-inbox.ts',
    summary: 'List inbox items (comments, mentions, messages), newest first',
    tag: 'Inbox',
    access: { table: 'RO', cursor: true },
  },
  {
    id: 'getInboxItem',
    method: 'GET',
    path: '/v1/inbox/{id}',
    scope: 'inbox:read',
    feature: 'inbox',
    entry: 'functions/handlers/get-inbox-item.ts',
    summary: 'Get an inbox item with its replies',
    tag: 'Inbox',
    access: { table: 'RO' },
  },
  {
    id: 'updateInboxItem',
    method: 'PATCH',
    path: '/v1/inbox/{id}',
    scope: 'inbox:write',
    feature: 'inbox',
    entry: 'functions/handlers/update-inbox-item.ts',
    summary: 'Mark an inbox item unread, read or archived',
    tag: 'Inbox',
    access: { table: 'RW' },
  },
  {
    id: 'oauthCallback',
    method: 'GET',
    path: '/oauth/callback/{platform}',
    scope: null,
    entry: 'functions/handlers/oauth-callback.ts',
    summary: "The platforms' OAuth redirect (no API key)",
    tag: 'Channels',
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
    // The code exchange and the accounts' profiles are calls to the platform.
    timeoutSeconds: 25,
    // Public: people come back from consent pages one at a time; a flood of made-up states is cut here.
    throttle: { rateLimit: 10, burstLimit: 20 },
  },
  {
    id: 'getOpenApi',
    method: 'GET',
    path: '/v1/openapi.json',
    scope: null,
    entry: 'functions/handlers/get-openapi.ts',
    summary: 'The OpenAPI 3.1 description of this API',
    tag: 'Meta',
    access: { table: 'none' },
  },
  {
    id: 'getHealth',
    method: 'GET',
    path: '/health',
    scope: null,
    entry: 'functions/handlers/get-health.ts',
    summary: 'Whether this deployment works: the table answers, the scheduler runs (no API key)',
    tag: 'Meta',
    // One GetItem (the sweeper's cursor); RO also lets it read the data model mark.
    access: { table: 'RO' },
    // Public, and each call reads the table: monitors poll every few seconds; a flood is cut here.
    throttle: { rateLimit: 10, burstLimit: 20 },
  },
  // The API guide, served by the deployment itself: problem `type` URIs point here, so a client
  // that follows one always gets an answer. One handler for the four routes.
  {
    id: 'getDocsIndex',
    method: 'GET',
    path: '/docs',
    scope: null,
    entry: 'functions/handlers/get-docs.ts',
    summary: "The API guide's contents (HTML, no API key)",
    tag: 'Meta',
    access: { table: 'none' },
    bundlesGuide: true,
  },
  {
    id: 'getDocsPage',
    method: 'GET',
    path: '/docs/api/{page}',
    scope: null,
    entry: 'functions/handlers/get-docs.ts',
    summary: 'A page of the API guide (HTML, no API key)',
    tag: 'Meta',
    access: { table: 'none' },
    bundlesGuide: true,
  },
  {
    id: 'getProblemPage',
    method: 'GET',
    path: '/docs/api/problems/{code}',
    scope: null,
    entry: 'functions/handlers/get-docs.ts',
    summary: "A problem code's page, where its `type` URI points (HTML, no API key)",
    tag: 'Meta',
    access: { table: 'none' },
    bundlesGuide: true,
  },
  {
    // The operator's guide, served the same way: the alarms' descriptions link to its pages.
    id: 'getOperatorGuidePage',
    method: 'GET',
    path: '/docs/operator/{page}',
    scope: null,
    entry: 'functions/handlers/get-docs.ts',
    summary: "A page of the operator's guide (HTML, no API key)",
    tag: 'Meta',
    access: { table: 'none' },
    bundlesGuide: true,
  },
];

export interface ConsoleRoute {
  method: 'GET' | 'POST';
  /** API Gateway style path under CONSOLE_PATH. */
  path: string;
  /** The route's own throttle, as for operations (sign-in and enrollment attempts). */
  throttle?: { rateLimit: number; burstLimit: number };
}

/**
 * A console page: one function serving the page and the acts of its forms. Not API operations
 * (no API key, no OpenAPI entry, no MCP tool): a person's session cookie authenticates them, and
 * their acts run the same use cases as the API and the CLI.
 */
export interface ConsolePage {
  id: string;
  entry: string;
  routes: readonly ConsoleRoute[];
  access: Access;
  timeoutSeconds?: number;
  memoryMb?: number;
  /** Its bundle carries the console's static files (CONSOLE_ASSET_FILES), copied next to it. */
  bundlesAssets?: boolean;
}

/**
 * A ceiling for the ceremony routes of all clients together. It is not what limits a client: the
 * use case counts attempts per source address (ATTEMPTS_PER_MINUTE), so one client flooding is
 * refused on its own; a shared limit low enough to matter would let that one client lock every
 * person out.
 */
const CEREMONY_THROTTLE = { rateLimit: 100, burstLimit: 200 };

export const consolePages: readonly ConsolePage[] = [
  {
    id: 'consoleHome',
    entry: 'functions/handlers/console-home.ts',
    routes: [{ method: 'GET', path: '/console' }],
    // The overview reads the API's lists (their cursor secret) and usage.
    access: { table: 'RW', cursor: true },
  },
  {
    id: 'consoleAssets',
    entry: 'functions/handlers/console-assets.ts',
    routes: [{ method: 'GET', path: '/console/assets/{file}' }],
    access: { table: 'none' },
    bundlesAssets: true,
  },
  {
    id: 'consoleSignIn',
    entry: 'functions/handlers/console-sign-in.ts',
    routes: [
      { method: 'GET', path: '/console/sign-in' },
      { method: 'POST', path: '/console/sign-in/options', throttle: CEREMONY_THROTTLE },
      { method: 'POST', path: '/console/sign-in', throttle: CEREMONY_THROTTLE },
    ],
    access: { table: 'RW' },
  },
  {
    id: 'consoleEnroll',
    entry: 'functions/handlers/console-enroll.ts',
    routes: [
      { method: 'GET', path: '/console/enroll' },
      { method: 'POST', path: '/console/enroll/options', throttle: CEREMONY_THROTTLE },
      { method: 'POST', path: '/console/enroll', throttle: CEREMONY_THROTTLE },
    ],
    access: { table: 'RW' },
  },
  {
    id: 'consoleSignOut',
    entry: 'functions/handlers/console-sign-out.ts',
    routes: [{ method: 'POST', path: '/console/sign-out' }],
    access: { table: 'RW' },
  },
  {
    id: 'consolePasskeys',
    entry: 'functions/handlers/console-passkeys.ts',
    routes: [
      { method: 'GET', path: '/console/passkeys' },
      { method: 'POST', path: '/console/passkeys/options' },
      { method: 'POST', path: '/console/passkeys' },
      { method: 'POST', path: '/console/passkeys/{id}/remove' },
      { method: 'POST', path: '/console/passkeys/sign-out-everywhere' },
    ],
    access: { table: 'RW' },
  },
  {
    id: 'consoleKeys',
    entry: 'functions/handlers/console-keys.ts',
    routes: [
      { method: 'GET', path: '/console/keys' },
      { method: 'POST', path: '/console/keys' },
      { method: 'POST', path: '/console/keys/{id}/revoke' },
    ],
    access: { table: 'RW' },
  },
  {
    id: 'consoleChannels',
    entry: 'functions/handlers/console-channels.ts',
    routes: [
      { method: 'GET', path: '/console/channels' },
      { method: 'POST', path: '/console/channels' },
      { method: 'GET', path: '/console/channels/connections/{id}' },
      { method: 'POST', path: '/console/channels/connections/{id}' },
      { method: 'POST', path: '/console/channels/{id}/{act}' },
    ],
    // The API's channel use cases: sessions' grants sealed and opened, tokens opened to revoke.
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
    // Bluesky is checked with its PDS, Mastodon registers an app, a disconnect revokes: calls out.
    timeoutSeconds: 25,
  },
  {
    id: 'consoleMembers',
    entry: 'functions/handlers/console-members.ts',
    routes: [
      { method: 'GET', path: '/console/members' },
      { method: 'POST', path: '/console/members' },
      { method: 'POST', path: '/console/members/{id}/role' },
      { method: 'POST', path: '/console/members/{id}/remove' },
    ],
    // Invitations are e-mailed (SES) when the operator configured a sender.
    access: { table: 'RW', email: true },
  },
  {
    id: 'consoleSettings',
    entry: 'functions/handlers/console-settings.ts',
    routes: [
      { method: 'GET', path: '/console/settings' },
      { method: 'POST', path: '/console/settings' },
    ],
    access: { table: 'RW' },
  },
  {
    id: 'consolePosts',
    entry: 'functions/handlers/console-posts.ts',
    routes: [
      { method: 'GET', path: '/console/posts' },
      { method: 'GET', path: '/console/posts/{id}' },
      { method: 'POST', path: '/console/posts/{id}/{act}' },
      { method: 'GET', path: '/console/approvals' },
    ],
    // The API's post use cases (their cursor secret for the list's pages).
    access: { table: 'RW', cursor: true },
  },
  {
    id: 'consoleInbox',
    entry: 'functions/handlers/console-inbox.ts',
    routes: [
      { method: 'GET', path: '/console/inbox' },
      { method: 'GET', path: '/console/inbox/{id}' },
      { method: 'POST', path: '/console/inbox/{id}/{act}' },
    ],
    // The API's inbox use cases (their cursor secret for the list's pages).
    access: { table: 'RW', cursor: true },
  },
  {
    id: 'consoleMedia',
    entry: 'functions/handlers/console-media.ts',
    routes: [
      { method: 'GET', path: '/console/media' },
      { method: 'GET', path: '/console/media/{id}' },
    ],
    // The API's listMedia and getMedia (their cursor secret for the list's pages); RW: every
    // console request may refresh its session's last-seen time.
    access: { table: 'RW', cursor: true },
  },
  {
    id: 'consoleSuggest',
    entry: 'functions/handlers/console-suggest.ts',
    routes: [
      { method: 'POST', path: '/console/inbox/{id}/suggest/reply' },
      { method: 'POST', path: '/console/media/{id}/suggest/alt-text' },
    ],
    // createGeneration's `reply` and `alt_text` tasks (the generation engine; an image's bytes
    // read for a model that accepts images), then the item's or the asset's page (the inbox's
    // cursor secret for the conversation's pages). Its own function, so the inbox's and the media
    // library's pages do not carry the engines.
    access: { table: 'RW', cursor: true, media: 'RO', ai: true },
    // As createGeneration's: the model's timeout twice (the answer and at most one re-ask).
    timeoutSeconds: 50,
  },
  {
    id: 'consoleWebhooks',
    entry: 'functions/handlers/console-webhooks.ts',
    routes: [
      { method: 'GET', path: '/console/webhooks' },
      { method: 'POST', path: '/console/webhooks' },
      { method: 'GET', path: '/console/webhooks/{id}' },
      { method: 'POST', path: '/console/webhooks/{id}/{act}' },
    ],
    // The API's webhook use cases: create and rotate seal a secret, a test event opens it to sign;
    // a receiver has 15 s to answer a test.
    access: { table: 'RW', cursor: true, secrets: ['encrypt', 'decrypt'] },
    timeoutSeconds: 20,
  },
  {
    id: 'consoleAudit',
    entry: 'functions/handlers/console-audit.ts',
    routes: [{ method: 'GET', path: '/console/audit' }],
    // RW: every console request may refresh its session's last-seen time.
    access: { table: 'RW', cursor: true },
  },
];

/**
 * The console's static files, served by consoleAssets as `/console/assets/{file}`: each file's
 * place in the repository (where the local stack reads it) and its type. The stack copies them
 * into the assets function's bundle, under CONSOLE_ASSETS_BUNDLE_DIR next to the handler.
 */
export const CONSOLE_ASSET_FILES: Readonly<Record<string, { source: string; contentType: string }>> = {
  'console.css': {
    source: 'functions/handlers/console-assets/console.css',
    contentType: 'text/css; charset=utf-8',
  },
  'console.js': {
    source: 'functions/handlers/console-assets/console.js',
    contentType: 'text/javascript; charset=utf-8',
  },
  // htmx (pinned), served as published: the live regions of the signed-in pages (views/layout live()).
  'htmx.js': {
    source: 'node_modules/htmx.org/dist/htmx.min.js',
    contentType: 'text/javascript; charset=utf-8',
  },
  // The WebAuthn browser library, served as published (global SimpleWebAuthnBrowser).
  'webauthn.js': {
    source: 'node_modules/@simplewebauthn/browser/dist/bundle/index.umd.min.js',
    contentType: 'text/javascript; charset=utf-8',
  },
};

/** The folder of the assets function's bundle the console's static files are copied into. */
export const CONSOLE_ASSETS_BUNDLE_DIR = 'assets';

/** Step Functions state machines, defined in ASL files; their Task states invoke workers. */
export type StateMachineName = 'webhookLadder';

export interface StateMachineSpec {
  name: StateMachineName;
  /** ASL (JSONPath) relative to the repository root; `${<Worker id>FunctionArn}` names a worker. */
  definition: string;
  env: string;
}

export const stateMachines: readonly StateMachineSpec[] = [
  {
    name: 'webhookLadder',
    definition: 'lib/state-machines/webhook-ladder.asl.json',
    env: 'WEBHOOK_LADDER_ARN',
  },
];

/**
 * The table stream's event source mapping, in AWS and in the local stack's poller alike: records
 * whose new image's `entity` is not listed never reach the function (deletes have no new image);
 * a failing batch is bisected and retried `retryAttempts` times, then its records go to the
 * on-failure destination, as do records older than `maxRecordAgeSeconds`. With a tumbling window
 * of `windowSeconds`, every batch names its shard (`shardId`), batches do not span windows, the
 * function must answer a `state` (else the invocation failed) and each window ends with a final
 * invocation.
 */
export interface StreamSource {
  entities: readonly string[];
  batchSize: number;
  retryAttempts: number;
  maxRecordAgeSeconds: number;
  windowSeconds?: number;
}

/**
 * A queue's event source mapping, in AWS and in the local stack's poller alike: batches of at most
 * `batchSize` messages (1–10: no batching window), reported failures retried after the queue's
 * visibility timeout, at most `concurrency` batches at once. SQS's maximum concurrency is 2–1000,
 * so no consumer can ask for 1 (CDK refuses it); consumers are written for concurrent batches.
 */
export interface QueueSource {
  queue: QueueName;
  /** Consume the queue's dead-letter queue instead of the queue. */
  dlq?: boolean;
  batchSize: number;
  /** Concurrent batches: Lambda's maximum concurrency, the local poller's receive loops (2–1000). */
  concurrency: number;
}

export type Trigger =
  | ({ kind: 'stream' } & StreamSource)
  | ({ kind: 'queue' } & QueueSource)
  /** Every `everySeconds` in AWS; the local stack runs the same handler every `localEverySeconds`. */
  | { kind: 'schedule'; everySeconds: number; localEverySeconds: number }
  /** Invoked by Task states of a state machine. */
  | { kind: 'task'; stateMachine: StateMachineName }
  /**
   * Invoked by these functions, which wait for the answer (RequestResponse); each may invoke this
   * function only, and finds its name in the environment variable `env`.
   */
  | { kind: 'invoke'; by: readonly string[]; env: string };

/** Handlers that are not HTTP operations (stream, queue, schedule, state machine and invoked functions). */
export interface Worker {
  id: string;
  entry: string;
  access: Access & { sends?: QueueName[] };
  trigger: Trigger;
  timeoutSeconds: number;
  /** @default 1024 */
  memoryMb?: number;
}

export const workers: readonly Worker[] = [
  {
    id: 'streamRelay',
    entry: 'functions/handlers/stream-relay.ts',
    // RW: it maintains the analytics counters (deliveries, timeline) from the same changes.
    // `schedule`: a post (re)scheduled inside the window the sweeper already swept is dispatched
    // here. `post.*` events carry the whole post: one can be over the queue's size limit.
    access: {
      table: 'RW',
      sends: ['delivery', 'events', 'schedule', 'unpublish', 'inboxReplies'],
      starts: ['webhookLadder'],
      queueBodies: ['put'],
    },
    // Posts and channels make deliveries and events, endpoints start failure ladders, a new inbox
    // item its inbox.received (channels keep their inbox poll state, posts their refs); nothing
    // else wakes the function.
    trigger: {
      kind: 'stream',
      entities: ['post', 'channel', 'webhook_endpoint', 'inbox_item'],
      batchSize: 100,
      retryAttempts: 10,
      maxRecordAgeSeconds: 86_400,
      // Not for aggregating (the relay keeps no window state): a windowed batch names its shard,
      // and the analytics counters count each record once by a mark per shard (usecases/support/stats.ts).
      windowSeconds: 300,
    },
    timeoutSeconds: 30,
  },
  {
    id: 'scheduleSweeper',
    entry: 'functions/handlers/schedule-sweeper.ts',
    access: { table: 'RW', sends: ['schedule', 'delivery'] },
    trigger: { kind: 'schedule', everySeconds: 60, localEverySeconds: 1 },
    timeoutSeconds: 50,
  },
  {
    id: 'scheduleDispatcher',
    entry: 'functions/handlers/schedule-dispatcher.ts',
    access: { table: 'RW', sends: ['schedule'] },
    trigger: { kind: 'queue', queue: 'schedule', batchSize: 10, concurrency: 4 },
    timeoutSeconds: 30,
  },
  {
    id: 'deliveryWorker',
    entry: 'functions/handlers/delivery-worker.ts',
    access: {
      table: 'RW',
      sends: ['delivery'],
      media: 'RO',
      connectionSecrets: ['seal', 'open'],
      cardImages: true,
    },
    trigger: { kind: 'queue', queue: 'delivery', batchSize: 10, concurrency: 8 },
    timeoutSeconds: 60,
  },
  {
    id: 'engagementSync',
    entry: 'functions/handlers/engagement-sync.ts',
    // The finder: reads the keys of the posts published in the last 7 days (the due-work index) and
    // sends them in batches to the workers; it reads no post, asks no platform, writes nothing.
    access: { table: 'RO', sends: ['engagementSync'] },
    trigger: { kind: 'schedule', everySeconds: 3600, localEverySeconds: 60 },
    timeoutSeconds: 300,
  },
  {
    id: 'engagementSyncWorker',
    entry: 'functions/handlers/engagement-sync-worker.ts',
    // Reads a batch of posts, asks their channels' platforms for the metrics (renewing tokens if
    // due) and stores them on the posts.
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
    // 2 batches of 5 messages, each asking 4 channels at once: at most 40 metrics requests in flight.
    trigger: { kind: 'queue', queue: 'engagementSync', batchSize: 5, concurrency: 2 },
    // 100 posts: some platforms answer one post per request (Mastodon, Facebook), then the writes.
    timeoutSeconds: 180,
  },
  {
    id: 'channelSync',
    entry: 'functions/handlers/channel-sync.ts',
    // The finder: sends the due channels of the sync index to the workers (moves its cursor and
    // entries whose message was lost; reports the platform-app refusals the workers counted).
    access: { table: 'RW', sends: ['channelSync'] },
    trigger: { kind: 'schedule', everySeconds: 300, localEverySeconds: 2 },
    timeoutSeconds: 60,
  },
  {
    id: 'channelSyncWorker',
    entry: 'functions/handlers/channel-sync-worker.ts',
    // Renews tokens ahead of expiry and reads profiles; marks refused grants reauth_required; ends
    // expired account choices (revokes and erases their grants).
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
    // 8 batches of 10 at once: the platforms see at most 80 renewals in flight from one deployment.
    trigger: { kind: 'queue', queue: 'channelSync', batchSize: 10, concurrency: 8 },
    // A renewal may wait out another's lease (10 s) and the OAuth client's 15 s, then read the profile.
    timeoutSeconds: 60,
  },
  {
    id: 'inboxPoll',
    entry: 'functions/handlers/inbox-poll.ts',
    // The finder: reads one slot of the poll index (keys only) and sends its channels, one message
    // each, spread over the minute; it reads no channel, asks no platform, writes nothing. Every 2 s
    // in the local stack: the same slots, rotating faster (each channel polled every 10 s).
    access: { table: 'RO', sends: ['inboxPoll'] },
    trigger: { kind: 'schedule', everySeconds: 60, localEverySeconds: 2 },
    timeoutSeconds: 60,
  },
  {
    id: 'inboxPollWorker',
    entry: 'functions/handlers/inbox-poll-worker.ts',
    // Polls one channel's comments, mentions and messages (renewing its token if due), writes the
    // new items and the cursor; a refused grant marks the channel reauth_required.
    access: { table: 'RW', connectionSecrets: ['seal', 'open'] },
    // 10,000 channels every 5 minutes is 2,000 a minute, ≈ 34 polls a second, spread by the finder's
    // delays. A poll holds its message for its platform requests (two for Mastodon, ≈ 150 ms each)
    // and ≈ 4 DynamoDB round trips; a batch of 10 (in parallel) lasts as long as its slowest:
    // ≈ 0.5 s in AWS, 1–2.8 s measured in the loaded local stack (test/bench/inbox.ts). 16 batches
    // at once poll 160 channels per batch time: ≈ 57 a second at the slowest measured, so 10,000 in
    // ≈ 175 s, inside the 300 s interval with room for a slow platform; ≈ 8 more per 10,000 channels.
    trigger: { kind: 'queue', queue: 'inboxPoll', batchSize: 10, concurrency: 16 },
    // At most 5 pages, each a platform request (15 s timeout at worst) and its writes.
    timeoutSeconds: 60,
  },
  {
    id: 'deliveryDeadLetters',
    entry: 'functions/handlers/delivery-dead-letters.ts',
    access: { table: 'RW' },
    // 2, SQS's least: two batches marking the same post both go through its versioned write
    // (mutatePost retries on a conflict), and a delivery already failed or published is left as it is.
    trigger: { kind: 'queue', queue: 'delivery', dlq: true, batchSize: 10, concurrency: 2 },
    timeoutSeconds: 30,
  },
  {
    id: 'webhookFanout',
    entry: 'functions/handlers/webhook-fanout.ts',
    // Events and webhook jobs carry a whole post: either can go by reference.
    access: { table: 'RO', sends: ['webhooks'], queueBodies: ['get', 'put'] },
    trigger: { kind: 'queue', queue: 'events', batchSize: 10, concurrency: 2 },
    timeoutSeconds: 30,
  },
  {
    id: 'webhookDelivery',
    entry: 'functions/handlers/webhook-delivery.ts',
    // Reads a job sent by reference, and sends it on (deferred, or its next attempt) the same way.
    access: { table: 'RW', sends: ['webhooks'], secrets: ['decrypt'], queueBodies: ['get', 'put'] },
    // Ten receivers at 15 s each, in parallel, within the timeout (the queue's visibility is 6 × it).
    trigger: { kind: 'queue', queue: 'webhooks', batchSize: 10, concurrency: 8 },
    timeoutSeconds: 60,
  },
  {
    id: 'unpublishWorker',
    entry: 'functions/handlers/unpublish-worker.ts',
    // Removes one delivery from its platform (renewing its token if due) and records the outcome;
    // sends its own retries. Reads no media, posts nothing.
    access: { table: 'RW', sends: ['unpublish'], connectionSecrets: ['seal', 'open'] },
    // Removals are rare and each is a few platform calls: 2 batches of 5 at once is plenty.
    trigger: { kind: 'queue', queue: 'unpublish', batchSize: 5, concurrency: 2 },
    timeoutSeconds: 60,
  },
  {
    id: 'mediaImportWorker',
    entry: 'functions/handlers/media-import-worker.ts',
    // Before probeMedia, which it invokes (a caller's function exists before its grant).
    // Finishes the imports importMedia did not finish within its 10 s: fetches again, probes,
    // stores. A message for an asset no longer pending is a no-op (duplicates, the API finished it).
    access: { table: 'RW', media: 'import' },
    trigger: { kind: 'queue', queue: 'mediaImport', batchSize: 1, concurrency: 4 },
    // Up to 1 GiB fetched within 4 minutes, then the probe (27 s) and the copy.
    timeoutSeconds: 300,
  },
  {
    id: 'mediaImportDeadLetters',
    entry: 'functions/handlers/media-import-dead-letters.ts',
    // An import whose worker crashed or timed out on every attempt ends `failed`, not pending forever.
    access: { table: 'RW', media: 'delete' },
    trigger: { kind: 'queue', queue: 'mediaImport', dlq: true, batchSize: 10, concurrency: 2 },
    timeoutSeconds: 30,
  },
  {
    id: 'inboxReplyWorker',
    entry: 'functions/handlers/inbox-reply-worker.ts',
    // Sends one reply to an inbox item (renewing the channel's token if due) and records it; sends
    // its own retries. Reads no media.
    access: { table: 'RW', sends: ['inboxReplies'], connectionSecrets: ['seal', 'open'] },
    // Replies are people's answers, a few platform calls each: 2 batches of 5 at once to start.
    trigger: { kind: 'queue', queue: 'inboxReplies', batchSize: 5, concurrency: 2 },
    timeoutSeconds: 60,
  },
  {
    id: 'inboxReplyDeadLetters',
    entry: 'functions/handlers/inbox-reply-dead-letters.ts',
    // A reply whose worker crashed on every attempt ends `failed`, not queued forever.
    access: { table: 'RW' },
    trigger: { kind: 'queue', queue: 'inboxReplies', dlq: true, batchSize: 10, concurrency: 2 },
    timeoutSeconds: 30,
  },
  {
    // ffprobe and ffmpeg on untrusted uploads, in a function that can read one upload and write its
    // poster, and nothing else: no table, no keys (the buckets are S3-managed).
    id: 'probeMedia',
    entry: 'functions/handlers/probe-media.ts',
    access: { table: 'none', media: 'probe', ffmpeg: true },
    trigger: {
      kind: 'invoke',
      by: ['completeMediaUpload', 'importMedia', 'mediaImportWorker'],
      env: PROBE_FUNCTION_ENV,
    },
    // Inside its caller's 29 s; each tool run is bounded too (adapters/media-tools.ts).
    timeoutSeconds: 27,
    // The download of up to 1 GiB streams to /tmp; memory is for the tools (and CPU with it).
    memoryMb: 3008,
  },
  {
    // ffmpeg on media (already probed), in a function that reads media objects and writes the
    // renditions beside them (`…/_fit-*`), and nothing else: no table, no keys.
    id: 'fitMedia',
    entry: 'functions/handlers/fit-media.ts',
    access: { table: 'none', media: 'fit', ffmpeg: true },
    trigger: { kind: 'invoke', by: ['deliveryWorker'], env: FIT_FUNCTION_ENV },
    // A 200 MB video re-encoded within the budget (BENCHMARKS.md, media fitting); callers that
    // cannot wait that long stop waiting and find the rendition made on their next attempt.
    timeoutSeconds: 900,
    memoryMb: 3008,
  },
  {
    id: 'webhookLadderStep',
    entry: 'functions/handlers/webhook-ladder-step.ts',
    access: { table: 'RW', email: true },
    trigger: { kind: 'task', stateMachine: 'webhookLadder' },
    timeoutSeconds: 30,
  },
];

/** A scheduled worker's period: in AWS (`everySeconds`) or in the local stack (`localEverySeconds`). */
export function scheduleEverySeconds(workerId: string, where: 'aws' | 'local'): number {
  const trigger = workers.find((w) => w.id === workerId)?.trigger;
  if (trigger?.kind !== 'schedule') throw new Error(`${workerId} is not a scheduled worker`);
  return where === 'aws' ? trigger.everySeconds : trigger.localEverySeconds;
}

/** The queues (each with a DLQ). Handlers find them through the named environment variable. */
export interface QueueSpec {
  name: QueueName;
  /** The variable the functions read the URL from: core/vocabulary.ts names it once. */
  env: (typeof QUEUE_URL_ENV)[QueueName];
  /**
   * VISIBILITY_FACTOR × its consumer's timeout (computed below, not typed), which also outlasts a
   * delivery's lease (90 s): a batch still running, or throttled and retried by Lambda, is not
   * handed to a second consumer meanwhile.
   */
  visibilityTimeoutSeconds: number;
  /** The DLQ's, the same way, when a worker consumes the DLQ; else SQS's default (30 s). */
  dlqVisibilityTimeoutSeconds?: number;
  maxReceiveCount: number;
}

/** AWS advises a queue's visibility timeout of at least 6 × its Lambda consumer's timeout. */
export const VISIBILITY_FACTOR = 6;

const QUEUE_LIST: ReadonlyArray<Pick<QueueSpec, 'name' | 'maxReceiveCount'>> = [
  { name: 'delivery', maxReceiveCount: 5 },
  { name: 'schedule', maxReceiveCount: 5 },
  { name: 'events', maxReceiveCount: 5 },
  // One message per (event, endpoint, attempt); waits longer than SQS's 15-minute delay are chained.
  { name: 'webhooks', maxReceiveCount: 5 },
  // One message per due entry of the channel-sync index. A dead-lettered one needs no consumer: its
  // entry stays in the index and the finder sends it again (usecases/channel-sync.ts).
  { name: 'channelSync', maxReceiveCount: 5 },
  // One message per batch of recently published posts, sent by the hourly finder. A dead-lettered
  // one needs no consumer either: the next hour's run sends those posts again.
  { name: 'engagementSync', maxReceiveCount: 5 },
  // One message per delivery to take down (unpublishPost), and the worker's own retries. A
  // dead-lettered one leaves its delivery `removing`: redrive it (the worker acts only on that stage).
  { name: 'unpublish', maxReceiveCount: 5 },
  // One message per import not finished by importMedia (and its crash-safety net); a dead-lettered
  // one marks the asset failed (mediaImportDeadLetters).
  { name: 'mediaImport', maxReceiveCount: 3 },
  // One message per reply to an inbox item (replyToInboxItem), and the worker's own retries; a
  // dead-lettered one marks the reply failed (inboxReplyDeadLetters).
  { name: 'inboxReplies', maxReceiveCount: 5 },
  // One message per channel to poll for its inbox, sent every minute for that minute's slot. A
  // dead-lettered one needs no consumer: the channel's next turn (5 minutes on) polls it again
  // from its kept cursor.
  { name: 'inboxPoll', maxReceiveCount: 3 },
];

/** VISIBILITY_FACTOR × the longest timeout of the workers consuming the queue (or its DLQ). */
function visibilityFor(name: QueueName, dlq: boolean): number | undefined {
  const timeouts = workers.flatMap((w) =>
    w.trigger.kind === 'queue' && w.trigger.queue === name && (w.trigger.dlq ?? false) === dlq
      ? [w.timeoutSeconds]
      : [],
  );
  return timeouts.length ? VISIBILITY_FACTOR * Math.max(...timeouts) : undefined;
}

export const queues: readonly QueueSpec[] = QUEUE_LIST.map(({ name, maxReceiveCount }) => {
  const visibility = visibilityFor(name, false);
  if (visibility === undefined) throw new Error(`queue ${name} has no consumer in the manifest`);
  const dlqVisibility = visibilityFor(name, true);
  return {
    name,
    env: QUEUE_URL_ENV[name],
    visibilityTimeoutSeconds: visibility,
    ...(dlqVisibility !== undefined ? { dlqVisibilityTimeoutSeconds: dlqVisibility } : {}),
    maxReceiveCount,
  };
});

/** Operations that are part of the public API (served with an API key). */
export const apiOperations = operations.filter((op) => op.scope !== null);

export function findOperation(id: string): Operation {
  const op = operations.find((o) => o.id === id);
  if (!op) throw new Error(`unknown operation ${id}`);
  return op;
}

/**
 * Serves API Gateway's `$default` route: unmatched paths (404) and methods (405) as problem+json,
 * and the console's 404 page, which reads the session (never writes it) to keep a person's frame.
 */
export const fallback: { id: string; entry: string; access: Access } = {
  id: 'routeNotFound',
  entry: 'functions/handlers/route-not-found.ts',
  access: { table: 'RO' },
};

/**
 * The MCP server (docs/api/mcp.md): every method of `/api/mcp` (it answers non-POST with 405). It
 * reads API keys and invokes the operations' own functions, one per tool.
 */
export const mcp: {
  id: string;
  path: string;
  entry: string;
  access: Access;
  /** The plan feature every MCP request needs (403 feature_not_enabled otherwise). */
  feature: Feature;
  timeoutSeconds: number;
  /** esbuild aliases of its bundle: package → the module bundled instead (relative to the repository root). */
  bundleAliases: Record<string, string>;
} = {
  id: 'mcpServer',
  path: '/api/mcp',
  entry: 'functions/handlers/mcp.ts',
  access: { table: 'RO' },
  feature: 'mcp',
  // Covers the slowest operation it may invoke (completeMediaUpload, 29 s) within API Gateway's 30 s.
  timeoutSeconds: 30,
  // The SDK's server imports ajv for elicitation only, which Herald never requests (it passes its
  // own validator, usecases/mcp.ts): ≈ 130 KiB and ≈ 20 ms of every cold start.
  bundleAliases: {
    ajv: './functions/shared/not-bundled.ts',
    'ajv-formats': './functions/shared/not-bundled.ts',
  },
};

/** A path template's matcher, compiled once: the path parameters of a concrete path, or null. */
export function pathMatcher(template: string): (path: string) => Record<string, string> | null {
  const names: string[] = [];
  const source = template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  const re = new RegExp(`^${source}$`);
  return (path) => {
    const m = re.exec(path);
    if (!m) return null;
    return Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1] ?? '')]));
  };
}

/** Whether an operation's path template matches a concrete path. */
export function matchPath(template: string, path: string): Record<string, string> | null {
  return pathMatcher(template)(path);
}
