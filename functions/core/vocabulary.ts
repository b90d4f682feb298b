// The words the manifest (lib/operations.ts) and the functions share: scopes, plan features, queue
// names and their environment variables, the console's path. A leaf that imports nothing, so both
// sides can read it and the runtime never imports the stack's code (test/unit/architecture/).

/** What an API key may be granted; an operation needs one of them. */
export const SCOPES = [
  'posts:read',
  'posts:write',
  'channels:read',
  'channels:write',
  'inbox:read',
  'inbox:write',
  'analytics:read',
  'webhooks:read',
  'webhooks:write',
  'ai:generate',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Plan features an operation may need; core/plans.ts says which plans have them. */
export const FEATURES = ['webhooks', 'analytics', 'mcp', 'inbox', 'ai'] as const;
export type Feature = (typeof FEATURES)[number];

/** The environment variable that holds each queue's URL; the manifest creates the queues by these names. */
export const QUEUE_URL_ENV = {
  delivery: 'DELIVERY_QUEUE_URL',
  schedule: 'SCHEDULE_QUEUE_URL',
  events: 'EVENTS_QUEUE_URL',
  webhooks: 'WEBHOOKS_QUEUE_URL',
  channelSync: 'CHANNEL_SYNC_QUEUE_URL',
  engagementSync: 'ENGAGEMENT_SYNC_QUEUE_URL',
  unpublish: 'UNPUBLISH_QUEUE_URL',
  mediaImport: 'MEDIA_IMPORT_QUEUE_URL',
  inboxPoll: 'INBOX_POLL_QUEUE_URL',
  inboxReplies: 'INBOX_REPLIES_QUEUE_URL',
} as const;
export type QueueName = keyof typeof QUEUE_URL_ENV;

/** The console's pages live under this path, on the API's own origin (first-party cookies, no CORS). */
export const CONSOLE_PATH = '/console';

/** The API guide's markdown pages, one per file, in the repository (the local stack reads them there). */
export const API_GUIDE_SOURCE = 'docs/api';

/** The folder of the docs function's bundle the guide's pages are copied into. */
export const API_GUIDE_BUNDLE_DIR = 'api-guide';

/** The operator's guide (GET /docs/operator/{page}: the alarms' descriptions link to its pages). */
export const OPERATOR_GUIDE_SOURCE = 'docs/operator';

/** Where the docs function's bundle carries the operator's guide. */
export const OPERATOR_GUIDE_BUNDLE_DIR = 'operator-guide';

/** The variable naming the probe function (probeMedia) to its caller, completeMediaUpload. */
export const PROBE_FUNCTION_ENV = 'HERALD_PROBE_FUNCTION';

/** The variable naming the fit function (fitMedia) to its callers: the delivery worker, link cards. */
export const FIT_FUNCTION_ENV = 'HERALD_FIT_FUNCTION';
