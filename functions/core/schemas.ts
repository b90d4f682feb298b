import * as z from 'zod/mini';
import { CONNECTION_FAILURES, CONNECTION_STATUSES } from './connections.ts';
import {
  CHANNEL_STATUSES,
  DELIVERY_STAGES,
  DELIVERY_WARNING_CODES,
  ERROR_CATEGORIES,
  MEDIA_KINDS,
  PLATFORMS,
  POST_STATUSES,
} from './constants.ts';
import { INBOX_KINDS, INBOX_STATUSES, REPLY_STAGES } from './inbox.ts';
import { PLAN_NAMES } from './plans.ts';
import { dateTime as buildDateTime, meta } from './requests.ts';
import {
  DELIVERY_LOG_DAYS,
  DELIVERY_STATUSES,
  ENDPOINT_STATES,
  EVENT_TYPES,
  MAX_ENDPOINTS_PER_ORG,
} from './webhooks.ts';

// The resources the API answers, as zod schemas: the OpenAPI document (and the contract tests)
// are generated from these; no Lambda but getOpenApi imports them. Request schemas live in
// requests.ts, the vocabularies in constants.ts.

const dateTime = buildDateTime();
const CONNECTION_FAILURE_CODES = Object.keys(CONNECTION_FAILURES) as [keyof typeof CONNECTION_FAILURES];
const nullableDateTime = z.nullable(dateTime);

// ---- resources -------------------------------------------------------------------------------

export const PostMediaItem = meta(
  z.object({
    url: z.url(),
    type: z.enum(MEDIA_KINDS),
    alt: z.string(),
  }),
  { id: 'PostMediaItem', description: 'An attachment: the url of a ready media asset.' },
);

export const ThreadItem = meta(z.object({ body: z.string(), media: z.array(PostMediaItem) }), {
  id: 'ThreadItem',
  description: 'A follow-up item of a thread, published as a reply under the previous part.',
});

export const FirstComment = meta(z.object({ body: z.string() }), {
  id: 'FirstComment',
  description: "Text posted by the same account right after the post (under a thread's last item).",
});

const PART_STAGES = ['queued', 'published', 'failed', 'removed'] as const;
const partFields = {
  stage: z.enum(PART_STAGES),
  external_id: z.nullable(z.string()),
  url: z.nullable(z.string()),
  error: z.nullable(z.string()),
};

export const DeliveryPart = meta(z.object({ index: z.int(), ...partFields }), {
  id: 'DeliveryPart',
  description: "The outcome of one thread item (index: its place in the variant's thread).",
});

export const DeliveryComment = meta(z.object(partFields), {
  id: 'DeliveryComment',
  description: 'The outcome of the first comment.',
});

export const Variant = meta(
  z.object({
    id: z.string(),
    channel_id: z.string(),
    body: z.string(),
    media: z.array(PostMediaItem),
    options: z.record(z.string(), z.unknown()),
    thread: z.array(ThreadItem),
    first_comment: z.nullable(FirstComment),
  }),
  { id: 'Variant', description: 'What is published to one channel.' },
);

export const DeliveryWarning = meta(z.object({ code: z.enum(DELIVERY_WARNING_CODES), detail: z.string() }), {
  id: 'DeliveryWarning',
  description:
    'Something the delivery did not do as asked without failing: `link_card_unavailable` (the page gave no card; published without one), `media_fitted` (a rendition made by media_fit was published), `thumbnail_failed` / `playlist_failed` (YouTube: the video is published, its thumbnail could not be set or it could not be added to the playlist).',
});

export const Delivery = meta(
  z.object({
    channel_id: z.string(),
    stage: z.enum(DELIVERY_STAGES),
    external_id: z.nullable(z.string()),
    url: z.nullable(z.string()),
    error: z.nullable(z.string()),
    error_category: z.nullable(z.enum(ERROR_CATEGORIES)),
    attempts: z.int(),
    updated_at: dateTime,
    thread: z.array(DeliveryPart),
    first_comment: z.nullable(DeliveryComment),
    warnings: z.array(DeliveryWarning),
  }),
  {
    id: 'Delivery',
    description:
      "The latest outcome of delivering a post to one channel: external_id and url are the root's; thread and first_comment are the outcomes of the other parts.",
  },
);

export const Post = meta(
  z.object({
    id: z.string(),
    status: z.enum(POST_STATUSES),
    type: z.enum(['single', 'thread']),
    title: z.nullable(z.string()),
    body: z.nullable(z.string()),
    scheduled_at: nullableDateTime,
    published_at: nullableDateTime,
    created_at: dateTime,
    updated_at: dateTime,
    variants: z.array(Variant),
    deliveries: z.array(Delivery),
  }),
  { id: 'Post', description: 'A post with one variant per target channel and its latest deliveries.' },
);

export const ChannelCapabilities = meta(
  z.object({
    thread: z.boolean(),
    first_comment: z.boolean(),
    unpublish: z.boolean(),
    edit_after_publish: z.boolean(),
    formats: z.array(z.string()),
    missing: z.object({ thread: z.optional(z.string()), first_comment: z.optional(z.string()) }),
    poll: z.boolean(),
    link_card: z.boolean(),
    // TikTok, in getChannelOptions: inbox only until the operator's app is audited.
    post_modes: z.optional(z.array(z.enum(['direct', 'inbox']))),
  }),
  {
    id: 'ChannelCapabilities',
    description:
      "What Herald does on the channel beyond one post: its platform's capabilities, less those the channel's grant lacks; `missing` names the grant each lacking one needs (connect the channel again to get it). `formats`: the values `options.format` takes; `poll`: `options.poll` is taken; `link_card`: a URL in the text gets a preview card; `post_modes` (TikTok, getChannelOptions only): the `options.post_mode` values the operator's app allows (`inbox` only until it is audited).",
  },
);

export const ChannelInbox = meta(
  z.object({
    available: z.boolean(),
    kinds: z.array(z.enum(INBOX_KINDS)),
    last_synced_at: nullableDateTime,
    error: z.nullable(z.string()),
  }),
  {
    id: 'ChannelInbox',
    description:
      "What the channel's inbox reads: `kinds` its platform and grant allow, when it last read them (`last_synced_at`), and what is wrong (`error`). `available: false` with an `error` that names the fix: a grant without the inbox's scopes (reconnect the channel), a platform that offers apps nothing to read (TikTok, Pinterest, LinkedIn member accounts), or a platform the operator turned off.",
  },
);

export const Channel = meta(
  z.object({
    id: z.string(),
    platform: z.enum(PLATFORMS),
    handle: z.string(),
    avatar_url: z.nullable(z.string()),
    followers: z.int(),
    status: z.enum(CHANNEL_STATUSES),
    last_sync_at: nullableDateTime,
    last_error: z.nullable(z.string()),
    created_at: dateTime,
    // listChannels and getChannel; absent where a channel is embedded (a session, an event).
    capabilities: z.optional(ChannelCapabilities),
    // listChannels and getChannel too.
    inbox: z.optional(ChannelInbox),
  }),
  { id: 'Channel', description: 'A connected social account.' },
);

export const ChannelList = meta(z.object({ data: z.array(Channel) }), {
  id: 'ChannelList',
  description: 'All connected channels (not paginated; the count is bounded by plan).',
});

export const ConnectionAccount = meta(
  z.object({
    id: z.string(),
    type: z.string(),
    handle: z.string(),
    name: z.nullable(z.string()),
    avatar_url: z.nullable(z.string()),
    followers: z.int(),
  }),
  {
    id: 'ConnectionAccount',
    description:
      'An account the grant covers, as the platform reports it: a user, a LinkedIn person or organization, a Facebook page, an Instagram business account, a Pinterest board, a YouTube channel.',
  },
);

export const ChannelConnection = meta(
  z.object({
    id: z.string(),
    platform: z.enum(PLATFORMS),
    status: z.enum(CONNECTION_STATUSES),
    redirect_uri: z.nullable(z.string()),
    authorize_url: z.nullable(z.string()),
    channel_id: z.nullable(z.string()),
    accounts: z.nullable(z.array(ConnectionAccount)),
    channel: z.nullable(Channel),
    error: z.nullable(z.object({ code: z.enum(CONNECTION_FAILURE_CODES), message: z.string() })),
    expires_at: dateTime,
    created_at: dateTime,
    updated_at: dateTime,
  }),
  {
    id: 'ChannelConnection',
    description:
      'A connection session: awaiting_authorization (send the person to authorize_url), selecting_account (pick one of accounts), connected (channel), failed (error) or expired (10 minutes passed). channel_id: the channel being reconnected, then the connected one.',
  },
);

/** The list envelope of every paginated list: a page, whether more follow, the cursor to them. */
const page = <T extends z.ZodMiniType>(item: T, m: { id: string; description: string }) =>
  meta(z.object({ data: z.array(item), has_more: z.boolean(), next_cursor: z.nullable(z.string()) }), m);

export const PostList = page(Post, { id: 'PostList', description: 'A page of posts, newest first.' });

export const PublishPostResponse = meta(z.object({ id: z.string(), status: z.enum(POST_STATUSES) }), {
  id: 'PublishPostResponse',
});

export const DeletePostResponse = meta(z.object({ id: z.string(), deleted: z.literal(true) }), {
  id: 'DeletePostResponse',
});

export const FieldErrorSchema = z.object({ pointer: z.string(), code: z.string(), message: z.string() });

export const ProblemSchema = meta(
  z.object({
    // A URI reference (RFC 9457): absolute as a deployment serves it, relative to the deployment
    // in the repository's copy of this document.
    type: meta(z.string(), {
      format: 'uri-reference',
      description: "The problem code's page: `{docsUrl}/api/problems/{code with hyphens}`.",
    }),
    title: z.string(),
    status: z.int(),
    code: z.string(),
    detail: z.string(),
    request_id: z.string(),
    errors: z.optional(z.array(FieldErrorSchema)),
  }),
  { id: 'Problem', description: 'RFC 9457 problem details.' },
);

export const UsageMeter = meta(
  z.object({
    key: z.enum(['api_requests', 'posts_per_month', 'channels', 'ai_credits']),
    used: z.int(),
    limit: z.int(),
    remaining: z.int(),
    period_starts_at: dateTime,
    period_ends_at: dateTime,
  }),
  { id: 'UsageMeter', description: 'One allowance of the plan and how much of it this period used.' },
);

export const Usage = meta(z.object({ plan: z.enum(PLAN_NAMES), meters: z.array(UsageMeter) }), {
  id: 'Usage',
  description: 'The effective plan and its meters for the current UTC calendar month.',
});

const HEALTH_STATUSES = ['pass', 'warn', 'fail'] as const;

export const HealthCheckSchema = meta(
  z.object({
    componentType: z.enum(['datastore', 'component']),
    status: z.enum(HEALTH_STATUSES),
    time: z.optional(dateTime),
    observedValue: z.optional(z.number()),
    observedUnit: z.optional(z.enum(['ms', 's'])),
    output: z.optional(z.string()),
  }),
  {
    id: 'HealthCheck',
    description: 'One check: its status, when it was observed, and what is wrong (warn, fail).',
  },
);

export const Health = meta(
  z.object({
    status: z.enum(HEALTH_STATUSES),
    version: z.string(),
    releaseId: z.string(),
    description: z.string(),
    checks: z.object({
      'dynamodb:table': z.array(HealthCheckSchema),
      'sweeper:lastRun': z.array(HealthCheckSchema),
    }),
  }),
  {
    id: 'Health',
    description:
      "The deployment's health (the IETF health check format): `status` is the worst of its checks, `version` the release, `releaseId` the git commit.",
  },
);

const count = z.int().check(z.minimum(0));

export const AnalyticsDay = meta(z.object({ date: z.iso.date(), published: count, failed: count }), {
  id: 'AnalyticsDay',
  description: 'Posts that reached published or failed on one UTC day.',
});

export const Analytics = meta(
  z.object({
    posts: z.object({
      total: count,
      draft: count,
      scheduled: count,
      publishing: count,
      published: count,
      failed: count,
      needs_approval: count,
    }),
    deliveries: z.object({
      total: count,
      published: count,
      failed: count,
      success_rate: z.nullable(z.number().check(z.minimum(0), z.maximum(1))),
    }),
    timeline: z.array(AnalyticsDay),
    engagement: z.object({
      impressions: count,
      likes: count,
      comments: count,
      shares: count,
      clicks: count,
    }),
    synced_platforms: z.array(z.enum(PLATFORMS)),
    generated_at: dateTime,
  }),
  {
    id: 'Analytics',
    description:
      'Workspace summary: posts per status, delivery outcomes counted per (post, channel) with success_rate = published / (published + failed) (null before any), a 14-day UTC publish timeline (oldest first, today last) and engagement summed across the platforms that synced it.',
  },
);

// ---- inbox -----------------------------------------------------------------------------------

export const InboxAuthor = meta(
  z.object({
    handle: z.string(),
    name: z.nullable(z.string()),
    avatar_url: z.nullable(z.string()),
    platform_id: z.string(),
  }),
  { id: 'InboxAuthor', description: 'Who wrote the item, as the platform names them.' },
);

const textPart = z.object({ body: z.string() });

export const Generation = meta(
  z.object({
    id: z.string(),
    task: z.enum(['variants', 'rewrite', 'thread', 'alt_text', 'reply']),
    suggestions: z.array(
      z.union([
        z.object({ channel_id: z.string(), body: z.string(), thread: z.optional(z.array(textPart)) }),
        z.object({ alt: z.string() }),
        textPart,
      ]),
    ),
    model: z.string(),
    usage: z.object({ credits: z.int(), input_tokens: z.int(), output_tokens: z.int() }),
  }),
  {
    id: 'Generation',
    description:
      'Suggestions (`gen_…`), nothing published or stored: `{channel_id, body}` per channel (variants, rewrite), `{channel_id, body, thread}` (thread), `{alt}` (alt_text) or `{body}` (reply), each within the limits createPost or replyToInboxItem applies. `model` is the model that wrote them, or `rules` for the rule-based engine; `usage.credits` is what the generation took from `ai_credits`.',
  },
);

export const InboxReply = meta(
  z.object({
    id: z.string(),
    text: z.string(),
    stage: z.enum(REPLY_STAGES),
    external_id: z.nullable(z.string()),
    url: z.nullable(z.string()),
    error: z.nullable(z.object({ code: z.string(), message: z.string() })),
    created_at: dateTime,
  }),
  {
    id: 'InboxReply',
    description:
      'A reply sent from Herald (`rpl_…`): `queued`, `sending`, then `sent` (with its `external_id` and `url` on the platform) or `failed` (with `error`, in the delivery error categories).',
  },
);

export const InboxItem = meta(
  z.object({
    id: z.string(),
    channel_id: z.string(),
    platform: z.enum(PLATFORMS),
    kind: z.enum(INBOX_KINDS),
    status: z.enum(INBOX_STATUSES),
    text: z.string(),
    url: z.nullable(z.string()),
    author: InboxAuthor,
    post_id: z.nullable(z.string()),
    in_reply_to: z.nullable(z.string()),
    conversation_id: z.nullable(z.string()),
    platform_id: z.string(),
    created_at: dateTime,
    received_at: dateTime,
    replies: z.array(InboxReply),
  }),
  {
    id: 'InboxItem',
    description:
      "A comment, mention or direct message that came back to a channel (`inb_…`), one per (channel, platform id). `created_at`: when it was written on the platform; `received_at`: when Herald read it. `post_id`: the Herald post it answers, or null; `in_reply_to`: the platform id of what it answers; `conversation_id`: a message's conversation, a comment's root post.",
  },
);

export const InboxItemList = page(InboxItem, {
  id: 'InboxItemList',
  description: 'A page of inbox items, newest first (by created_at).',
});

// ---- media -----------------------------------------------------------------------------------

export const MediaAsset = meta(
  z.object({
    id: z.string(),
    filename: z.string(),
    content_type: z.string(),
    kind: z.enum(MEDIA_KINDS),
    status: z.enum(['pending', 'ready', 'failed']),
    url: z.string(),
    size_bytes: z.int(),
    width: z.nullable(z.int()),
    height: z.nullable(z.int()),
    duration_sec: z.nullable(z.number()),
    poster_url: z.nullable(z.string()),
    page_count: z.nullable(z.int()),
    created_at: dateTime,
    source_url: z.nullable(z.string()),
    error: z.nullable(z.string()),
  }),
  {
    id: 'MediaAsset',
    description:
      'An uploaded file. `url` is stable: use it as media[].url in posts once the asset is ready. size_bytes is the claimed size while pending (0 when none was given), the real one once ready; width/height for images and videos, duration_sec for videos and audio, poster_url for videos (a JPEG frame) and documents (the first page as a JPEG), page_count for documents (PDF); null otherwise or while pending. source_url: the URL an imported asset was fetched from (null for uploads). status `failed` (imports only): error says which check refused it; otherwise error is null.',
  },
);

export const MediaList = page(MediaAsset, {
  id: 'MediaList',
  description: 'A page of media assets (pending ones included), newest first.',
});

export const UploadTicket = meta(
  z.object({
    asset_id: z.string(),
    upload_url: z.string(),
    method: z.literal('PUT'),
    expires_at: dateTime,
  }),
  {
    id: 'CreateUploadResponse',
    description:
      'PUT the raw bytes to upload_url with the same Content-Type (and Content-Length, when size_bytes was given) before expires_at, then call completeMediaUpload.',
  },
);

// ---- webhooks --------------------------------------------------------------------------------

export const WebhookEndpoint = meta(
  z.object({
    id: z.string(),
    url: z.string(),
    description: z.nullable(z.string()),
    event_types: z.array(z.enum(EVENT_TYPES)),
    enabled: z.boolean(),
    state: z.enum(ENDPOINT_STATES),
    failure: z.object({
      consecutive_failures: z.int(),
      failing_since: nullableDateTime,
      last_failure_at: nullableDateTime,
      last_status_code: z.nullable(z.int()),
      last_error: z.nullable(z.string()),
      warned_at: nullableDateTime,
      disabled_at: nullableDateTime,
    }),
    created_at: dateTime,
    updated_at: dateTime,
  }),
  {
    id: 'WebhookEndpoint',
    description:
      'A delivery URL with its event subscription and failure-ladder state. `state`: active; warning (failing continuously for 24 h, the owner was notified); auto_disabled (failing for 72 h, or answered 410 Gone; `enabled` became false); disabled (`enabled: false` by you). The signing secret is never part of it.',
  },
);

export const WebhookEndpointList = page(WebhookEndpoint, {
  id: 'WebhookEndpointList',
  description: `A page of the workspace's endpoints (at most ${MAX_ENDPOINTS_PER_ORG} in all), newest first.`,
});

export const WebhookEndpointDeleted = meta(z.object({ id: z.string(), deleted: z.literal(true) }), {
  id: 'WebhookEndpointDeleted',
});

export const WebhookEndpointCreated = meta(z.object({ ...WebhookEndpoint.def.shape, secret: z.string() }), {
  id: 'WebhookEndpointWithSecret',
  description:
    'The new endpoint and its signing secret (`whsec_…`). This is the only time the secret is shown: store it now.',
});

export const WebhookTestResult = meta(
  z.object({
    event_id: z.string(),
    delivered: z.boolean(),
    status_code: z.nullable(z.int()),
    duration_ms: z.int(),
    error: z.nullable(z.string()),
  }),
  {
    id: 'WebhookTestResult',
    description:
      'The outcome of one signed `webhook.test` delivery: delivered is true on a 2xx within 15 s. Not retried, not counted by the failure ladder.',
  },
);

export const WebhookSecretRotated = meta(
  z.object({ id: z.string(), secret: z.string(), previous_secret_expires_at: dateTime }),
  {
    id: 'WebhookSecretRotated',
    description:
      'The new signing secret (shown this once). Until previous_secret_expires_at (24 h) every delivery carries two signatures, one per secret, so receivers can switch without dropping a message.',
  },
);

export const WebhookDelivery = meta(
  z.object({
    event_id: z.string(),
    event_type: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.array(
      z.object({
        attempt: z.int(),
        attempted_at: dateTime,
        status_code: z.nullable(z.int()),
        duration_ms: z.int(),
        error: z.nullable(z.string()),
      }),
    ),
    next_attempt_at: nullableDateTime,
    updated_at: dateTime,
  }),
  {
    id: 'WebhookDelivery',
    description:
      'One event sent to one endpoint, with every attempt (the same webhook-id each time). status: pending (retries are scheduled at next_attempt_at), delivered, failed (all attempts failed, or 410 Gone), skipped (the endpoint was disabled before an attempt).',
  },
);

export const WebhookDeliveryList = page(WebhookDelivery, {
  id: 'WebhookDeliveryList',
  description: `A page of the endpoint's delivery log, the most recently attempted first (kept ${DELIVERY_LOG_DAYS} days; an event attempted again while you page moves to the top).`,
});

/** One finding of validatePost: where, what (a stable code), and why. */
export const PostCheck = meta(z.object({ pointer: z.string(), code: z.string(), detail: z.string() }), {
  id: 'PostCheck',
});

export const PostValidation = meta(
  z.object({ valid: z.boolean(), errors: z.array(PostCheck), warnings: z.array(PostCheck) }),
  {
    id: 'PostValidation',
    description:
      '`valid`: createPost would accept this body now (no errors). `errors` are what it would refuse (the codes of validation_failed); `warnings` do not stop it but are worth knowing before scheduling.',
  },
);

const OptionValueShape = {
  type: z.enum(['string', 'boolean', 'integer', 'number', 'array', 'object']),
  values: z.optional(z.array(z.string())),
  max_length: z.optional(z.int()),
  pattern: z.optional(z.string()),
  format: z.optional(z.string()),
  max_items: z.optional(z.int()),
};

export const ChannelOption = meta(
  z.object({
    ...OptionValueShape,
    required: z.boolean(),
    description: z.string(),
    items: z.optional(z.object(OptionValueShape)),
    // An object option's fields (options.poll).
    properties: z.optional(
      z.record(
        z.string(),
        z.object({
          ...OptionValueShape,
          required: z.boolean(),
          items: z.optional(z.object(OptionValueShape)),
        }),
      ),
    ),
  }),
  {
    id: 'ChannelOption',
    description:
      "One option a variant for the channel may carry in `options`, described from the rule createPost checks it with: `values` when only those are accepted; `items` for an array's items; `properties` for an object's fields (`poll`).",
  },
);

export const ChannelOptionsNote = meta(
  z.object({
    code: z.enum([
      'missing_grant',
      'channel_not_live',
      'choices_unavailable',
      'reauth_required',
      'scope_not_granted',
      'list_truncated',
    ]),
    message: z.string(),
    option: z.optional(z.string()),
    capability: z.optional(z.enum(['thread', 'first_comment'])),
    scope: z.optional(z.string()),
  }),
  {
    id: 'ChannelOptionsNote',
    description:
      'Why a capability is off or a choice list is empty or short, and what to do (docs/api/channels.md, "Options").',
  },
);

export const ChannelOptions = meta(
  z.object({
    platform: z.enum(PLATFORMS),
    capabilities: ChannelCapabilities,
    options: z.record(z.string(), ChannelOption),
    choices: z.record(z.string(), z.array(z.object({ value: z.string(), label: z.string() }))),
    limits: z.record(z.string(), z.union([z.number(), z.boolean(), z.string()])),
    notes: z.array(ChannelOptionsNote),
    choices_read_at: nullableDateTime,
  }),
  {
    id: 'ChannelOptions',
    description:
      "What a variant for the channel may carry: capabilities, options, and the live choices of options whose values are the account's own (read from the platform, reused for 5 minutes).",
  },
);
