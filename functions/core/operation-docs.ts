import type { ProblemCode } from './errors.ts';
import type { OperationId } from './requests.ts';

// What each operation does, in words, and the problems it may answer: the OpenAPI document and
// the MCP tools' descriptions. Kept apart from the response schemas (contracts.ts) so the MCP
// server can describe its tools without building every resource schema.

export interface OperationDoc {
  description: string;
  /**
   * Operation-specific problem codes. The OpenAPI generator adds what the pipeline may answer for
   * any API-key operation: 401, 429 and 500, validation_failed, insufficient_scope, and
   * feature_not_enabled when the manifest gates the operation behind a plan feature.
   */
  errors: ProblemCode[];
  /** Honours an Idempotency-Key header. */
  idempotent?: boolean;
  /** Answers the post's `ETag` (its version). */
  etag?: boolean;
  /** Honours `If-Match` (412 precondition_failed on a mismatch). */
  ifMatch?: boolean;
}

export const operationDocs = {
  listChannels: {
    description:
      'All connected channels with their connection health. Not paginated: the channel count is bounded by plan.',
    errors: [],
  },
  listMedia: {
    description:
      'Media assets newest first, pending ones included. Pass `next_cursor` as `after` for the next page.',
    errors: ['invalid_request'],
  },
  createMediaUpload: {
    description:
      'Starts an upload: creates a `pending` asset and answers a presigned `upload_url` valid for 15 minutes. PUT the raw bytes there with the same Content-Type, then call completeMediaUpload. The asset kind is inferred from content_type.',
    errors: ['invalid_request', 'payload_too_large'],
  },
  completeMediaUpload: {
    description:
      'Probes the uploaded bytes (type, image dimensions, video/audio duration, a poster frame for videos) and makes the asset `ready`. No body. Repeating the call on a ready asset is a no-op. Before the bytes arrived or after the ticket expired: 409. Bytes that are not what content_type says: 400 (`content_mismatch`), the asset stays pending.',
    errors: ['resource_not_found', 'resource_conflict'],
  },
  importMedia: {
    description:
      "Fetches a file from `url` and makes it a media asset, probed like an upload. Only public addresses are fetched: every address the host resolves to, and every redirect (at most 5), is checked; credentials in the URL are refused. The bytes decide the type (the server's Content-Type does not); an HTML page or another type is refused, as is a file over its type's limit (never read past it). 201 with the ready asset when the import finished within 10 s; else 202 with the asset `pending`: it finishes in the background (poll getMedia) as `ready`, or `failed` with `error`. A refusal found before answering is a 400 with a field code (`address_not_allowed`, `unsupported_media_type`, `media_too_large`, `fetch_failed`, `fetch_timeout`, `invalid_url`) and stores nothing.",
    errors: ['invalid_request', 'payload_too_large'],
  },
  getMedia: {
    description: 'One media asset: pending, ready, or failed (an import, with its error).',
    errors: ['resource_not_found'],
  },
  deleteMedia: {
    description:
      'Deletes a media asset: its file, its poster and its record (204; again 404). While a scheduled, publishing or needs_approval post uses it: 409 (delete or change those posts first). Posts already published keep what the platforms received.',
    errors: ['resource_not_found', 'resource_conflict'],
  },
  listPosts: {
    description:
      'Posts newest first, each with its variants and latest deliveries. Pass `next_cursor` as `after` for the next page; `status` filters.',
    errors: ['invalid_request'],
  },
  createPost: {
    description:
      'Creates a post with one variant per channel. Exactly one mode: `draft: true` (save only), `scheduled_at` (a future time) or `publish_now: true` (needs the Dangerous AI operations toggle). Each variant is checked against its platform (text length, media, options). With approval required in the workspace, scheduled and publish-now posts start as `needs_approval`.',
    errors: [
      'invalid_request',
      'dangerous_ops_disabled',
      'idempotency_in_progress',
      'payload_too_large',
      'idempotency_key_reused',
    ],
    idempotent: true,
  },
  getPost: {
    description:
      'A post with its variants and latest per-channel delivery outcomes; poll it to track delivery. The `ETag` header names this version of the post: send it as `If-Match` to updatePost, reschedulePost, publishPost or deletePost to act only on the post as you read it.',
    errors: ['resource_not_found'],
    etag: true,
  },
  reschedulePost: {
    description:
      'Moves a draft (with variants), scheduled or failed post to a new future `scheduled_at`. Published, publishing and needs_approval posts answer 409. Honours `If-Match` (412 when the post changed since).',
    errors: [
      'invalid_request',
      'resource_not_found',
      'resource_conflict',
      'precondition_failed',
      'payload_too_large',
    ],
    etag: true,
    ifMatch: true,
  },
  deletePost: {
    description:
      'Removes a post (needs the Dangerous AI operations toggle). A publishing post, or one whose removals from the platforms are under way (unpublishPost), answers 409. Content already published on a platform is not retracted: unpublishPost takes it down. Honours `If-Match` (412 when the post changed since).',
    errors: [
      'invalid_request',
      'dangerous_ops_disabled',
      'resource_not_found',
      'resource_conflict',
      'precondition_failed',
    ],
    ifMatch: true,
  },
  publishPost: {
    description:
      'Publishes a draft, scheduled or failed post now (needs the Dangerous AI operations toggle); delivery continues in the background, read it with getPost. A publishing post is accepted as-is; a published one answers 409. Republishing a failed post re-sends only the channels that did not publish. Honours `If-Match` (412 when the post changed since).',
    errors: [
      'invalid_request',
      'dangerous_ops_disabled',
      'resource_not_found',
      'resource_conflict',
      'precondition_failed',
    ],
    etag: true,
    ifMatch: true,
  },
  updatePost: {
    description:
      "Replaces the title, body and variants of a draft, scheduled, failed or needs_approval post (absent title/body become null; `variants` is required and checked as createPost checks it); the schedule is untouched. Publishing and published posts answer 409; so does a failed post's variant for a channel that already published (it must be given unchanged). With approval required, changing a scheduled or needs_approval post sends it (back) to needs_approval. The same content again changes nothing. Send `If-Match` with getPost's ETag to refuse (412) a post changed since you read it.",
    errors: [
      'invalid_request',
      'resource_not_found',
      'resource_conflict',
      'precondition_failed',
      'payload_too_large',
    ],
    etag: true,
    ifMatch: true,
  },
  validatePost: {
    description:
      'Checks a createPost body as createPost would (modes, schedule, channels, media assets and their probed size, duration and aspect ratio against each platform, text and options) and answers `valid`, the `errors` createPost would refuse it for, and `warnings` (e.g. a time less than a minute away, a channel that needs reconnecting, approval required). Creates nothing and counts no post; a body that breaks the schema is refused with 400 as createPost refuses it.',
    errors: ['invalid_request', 'payload_too_large'],
  },
  unpublishPost: {
    description:
      'Takes a published post down from its platforms (needs the Dangerous AI operations toggle): `channel_ids` names the channels (default: every channel it is published on; the body may be left out). Each such delivery goes `removing`, then `removed` once the platform removed it and its thread items and first comment (a post the platform no longer has counts as removed); a removal that fails goes back to `published` with its `error`. Channels whose platform cannot remove posts (Instagram, TikTok) stay `published` with `error: "unpublish_unsupported"`. The post keeps its status. A channel not in the post or not published answers 400 (pointer `/channel_ids/<i>`); a publishing post, or nothing published to remove, 409. Repeating the request while removals run changes nothing. The `post.unpublished` event follows once the removals are over.',
    errors: [
      'invalid_request',
      'dangerous_ops_disabled',
      'resource_not_found',
      'resource_conflict',
      'payload_too_large',
    ],
  },
  createGeneration: {
    description:
      'Writes suggestions with the deployment\'s model (Amazon Bedrock or an OpenAI-compatible endpoint; without one, the rule-based engine, `model: "rules"`). `task`: `variants` (a post per channel from a prompt), `rewrite` (a text fitted to each channel), `thread` (a text split into a thread), `alt_text` (a ready image\'s alternative text), `reply` (answers to an inbox item). Every suggestion passes the checks createPost (or replyToInboxItem) applies for its channel; nothing is published or kept. Credits (`ai_credits`, one per 1,000 tokens) are reserved before the model runs, settled to what it used, refunded on failure: 429 `quota_exhausted` when the task may need more than remain. 503 `model_unavailable` (throttled, timed out, access not enabled), 502 `generation_failed` (an answer Herald cannot use). Honours `Idempotency-Key`.',
    errors: [
      'invalid_request',
      'resource_not_found',
      'idempotency_in_progress',
      'idempotency_key_reused',
      'model_unavailable',
      'generation_failed',
      'payload_too_large',
    ],
    idempotent: true,
  },
  replyToInboxItem: {
    description:
      "Answers an inbox item on its platform (needs the Dangerous AI operations toggle: it publishes at once): a comment or mention gets a reply comment, a message a message in its conversation. Answers 202 with the reply `queued`; Herald sends it once, with a post delivery's retries and error categories, and it shows in the item's `replies` as `sent` (with `external_id` and `url`) or `failed` (with `error`). A platform that cannot answer the item's kind (TikTok, Pinterest; a YouTube or LinkedIn message) answers 409 `reply_unsupported`; a text that is empty or over the platform's limit 400 (pointer `/body`); a disconnected channel, or one that needs reconnecting, 409. Honours `Idempotency-Key`.",
    errors: [
      'invalid_request',
      'dangerous_ops_disabled',
      'resource_not_found',
      'resource_conflict',
      'reply_unsupported',
      'idempotency_in_progress',
      'idempotency_key_reused',
      'payload_too_large',
    ],
    idempotent: true,
  },
  getAnalytics: {
    description:
      'A summary of the workspace: posts per status, delivery outcomes per (post, channel) and their success rate, posts published and failed per UTC day over the last 14 days (today last), and engagement summed across the platforms synced so far (refreshed hourly for posts published in the last 7 days).',
    errors: [],
  },
  getUsage: {
    description:
      'The effective plan and its meters for the current UTC calendar month: `api_requests` (every authenticated /v1 call not refused with 429, this one included), `posts_per_month` (posts first scheduled or published this month) `channels` (connected channels) and `ai_credits` (AI generation credits used this month).',
    errors: [],
  },
  listWebhookEndpoints: {
    description:
      'The webhook endpoints of the workspace with their subscription and failure-ladder state, newest first (at most 20 in all). Pass `next_cursor` as `after` for the next page. Secrets are never listed.',
    errors: ['invalid_request'],
  },
  createWebhookEndpoint: {
    description:
      'Registers a delivery URL for the listed event types. The answer carries the signing secret (`whsec_…`), shown only this once. Every delivery is signed with Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature), body `{type, timestamp, data}`; failed deliveries are retried at +5 s, +5 min, +30 min, +2 h, +5 h, +10 h and +14 h (≈31.7 h). The URL is checked against private and cloud-metadata address space now and at every delivery (field code forbidden_address). At most 20 endpoints per workspace (409 beyond).',
    errors: ['invalid_request', 'resource_conflict', 'payload_too_large'],
  },
  updateWebhookEndpoint: {
    description:
      'Partially updates an endpoint (url, event_types, description, enabled; at least one). A new url is re-checked like at creation. `enabled: true` on an auto-disabled or disabled endpoint clears its failure state and resumes deliveries. A concurrent change answers 409; read and retry.',
    errors: ['invalid_request', 'resource_not_found', 'resource_conflict', 'payload_too_large'],
  },
  deleteWebhookEndpoint: {
    description: 'Removes an endpoint; its pending retries are dropped.',
    errors: ['resource_not_found'],
  },
  testWebhookEndpoint: {
    description:
      'Sends one signed `webhook.test` event to the endpoint now, whatever its subscription or state, and answers with the result. Not retried and not counted by the failure ladder; it appears in the delivery log.',
    errors: ['resource_not_found'],
  },
  rotateWebhookSecret: {
    description:
      'Replaces the signing secret. The new one is answered once; the previous one keeps signing alongside it for 24 h (two `v1,` signatures in webhook-signature), then stops. Rotating again within the 24 h drops the older secret at once.',
    errors: ['resource_not_found'],
  },
  listWebhookDeliveries: {
    description:
      "The delivery log: the endpoint's events of the last 30 days, the most recently attempted first, each with every attempt (status code, duration, error) and the next retry time. Pass `next_cursor` as `after` for the next page; an event attempted again while you page moves to the top.",
    errors: ['invalid_request', 'resource_not_found'],
  },
  getOpenApi: {
    description: 'This document. Served without an API key.',
    errors: [],
  },
  getHealth: {
    description:
      'Whether this deployment works, for a load balancer or an uptime monitor: the table answers (one read) and the schedule sweeper, which starts every scheduled post, ran within three of its periods. 200 with `pass` or `warn`, 503 with `fail`; `checks` says which check and why. Names the running release (`version`) and git commit (`releaseId`); never organization data. Served without an API key.',
    errors: [],
  },
  getDocsIndex: {
    description:
      "The API guide's contents, as an HTML page for people: its pages in reading order and every problem code. Served without an API key.",
    errors: [],
  },
  getDocsPage: {
    description:
      'A page of the API guide (`posts`, `errors`, …; the contents list them) as HTML. Served without an API key; an unknown page is 404.',
    errors: ['resource_not_found'],
  },
  getProblemPage: {
    description:
      "A problem code's page (`validation-failed`): its title, status and what it means, with a link to the guide. Every problem's `type` URI points here unless the operator set docsUrl elsewhere. Served without an API key; an unknown code is 404.",
    errors: ['resource_not_found'],
  },
  getOperatorGuidePage: {
    description:
      "A page of the operator's guide (`deploy`, `alarms`, `runbooks`, …; the contents at /docs list them) as HTML, for whoever runs the deployment: the alarms' descriptions link here. Served without an API key; an unknown page is 404.",
    errors: ['resource_not_found'],
  },
  createChannelConnection: {
    description:
      "Starts connecting a social account. OAuth platforms (X, LinkedIn, Threads, Instagram, Facebook, TikTok, YouTube, Pinterest) and Mastodon answer `awaiting_authorization` with an `authorize_url`: send the person there; the platform sends them back to Herald, which sends them on to `redirect_uri` with `connection_id` and `status`. Poll getChannelConnection (or wait for `channel.connected`). When the grant covers several accounts (pages, organizations, boards, channels) the session waits in `selecting_account`: call selectChannelAccount. Bluesky connects with an app password and answers `connected` at once. With `channel_id` the session reconnects that channel in place (same id; its posts keep pointing at it); connecting an account that is already a channel reconnects that channel. The profile (handle, avatar, followers) always comes from the platform. `redirect_uri` must be on this machine (localhost, 127.0.0.0/8, [::1]) or on an origin the organization allows (the operator sets them: `herald settings set --landing-origins`); any other origin is 400 `origin_not_allowed`. 409 `platform_not_configured` when the operator has not registered the platform's app; 400 `credentials_rejected` when Bluesky refuses the app password; sessions expire after 10 minutes.",
    errors: [
      'invalid_request',
      'platform_not_configured',
      'resource_conflict',
      'platform_unavailable',
      'payload_too_large',
    ],
  },
  getChannelConnection: {
    description:
      'A connection session: `awaiting_authorization`, `selecting_account` (with `accounts`), `connected` (with `channel`), `failed` (with `error`: consent_denied, token_exchange_failed, missing_scopes, no_accounts, account_mismatch, channel_limit, …) or `expired`.',
    errors: ['resource_not_found'],
  },
  selectChannelAccount: {
    description:
      "Picks the account a `selecting_account` session connects (`account_id`, one of its `accounts`). Answers the session, connected. 400 `unknown_account` for an account the grant does not cover, `account_mismatch` when reconnecting a channel with another account; 409 when the session is not selecting (any more) or the plan's channel bound is reached.",
    errors: ['invalid_request', 'resource_not_found', 'resource_conflict', 'payload_too_large'],
  },
  disconnectChannel: {
    description:
      "Disconnects a channel: the grant is revoked at the platform where it offers that (X, LinkedIn, TikTok, YouTube, Mastodon; Bluesky's session ends), the tokens are erased, and the channel stays listed as `disconnected` (it no longer counts against the plan). Scheduled posts keep their schedule; deliveries to a disconnected channel fail (`auth_expired`), and createPost refuses it (`channel_disconnected`). Connecting the same account again revives the channel with the same id. Repeating the call is a no-op.",
    errors: ['resource_not_found'],
  },
  getChannel: {
    description:
      'One channel as listChannels shows it, with its `capabilities`: what Herald does on it (threads, first comments, unpublishing, formats) given its platform and the grant it was connected with; `capabilities.missing` names the grant a capability lacks (connect the channel again to get it).',
    errors: ['resource_not_found'],
  },
  getChannelOptions: {
    description:
      "What a variant for this channel may carry: its `capabilities`, each `options` entry (type, values, required, description, from the same rules createPost checks) and `choices`, the live values of the options whose values are the account's own (Pinterest boards, YouTube categories, TikTok's privacy levels with its `limits`, the LinkedIn organizations the member administers), read from the platform and reused for 5 minutes (`choices_read_at`). When the platform fails or refuses the token, the choices are empty and `notes` say why and what to do; the answer is still 200.",
    errors: ['resource_not_found'],
  },
  listInbox: {
    description:
      "The comments, mentions and direct messages that came back to the organization's channels, newest first (by when they were written on the platform). Filters: `status` (`unread`, `read`, `archived`), `kind` (`comment`, `mention`, `message`), `channel_id`, `post_id` (the Herald post a comment answers); without `status` every status is listed. Pass `next_cursor` as `after` for the next page; a filtered page may hold fewer than `limit` items while `has_more` is true. Items are kept 90 days unless the deployment says otherwise.",
    errors: ['invalid_request'],
  },
  getInboxItem: {
    description:
      'One inbox item: its text, author, the Herald post it answers (`post_id`), its conversation and the replies sent from Herald. The `ETag` header names this version of the item: send it as `If-Match` to updateInboxItem to act only on the item as you read it.',
    errors: ['resource_not_found'],
    etag: true,
  },
  updateInboxItem: {
    description:
      'Marks an item `unread`, `read` or `archived`. The same status again changes nothing (and answers the item as it is). Honours `If-Match` (412 when the item changed since, a reply included).',
    errors: [
      'invalid_request',
      'resource_not_found',
      'resource_conflict',
      'precondition_failed',
      'payload_too_large',
    ],
    etag: true,
    ifMatch: true,
  },
  oauthCallback: {
    description:
      "Where platforms send the person back after the consent page (register `{public URL}/oauth/callback/{platform}` as the redirect URI of the platform app). Served without an API key: the one-time `state` identifies the session. Exchanges the code, reads the accounts the grant covers and connects the channel (or waits for the account choice), then redirects to the session's `redirect_uri`. A session whose state arrived always ends: any failure (including Herald's own) fails it with an `error` code and gives back tokens no channel keeps. The answers are for a person's browser: a missing, unknown, expired or already used `state` is a 400 HTML page (not problem+json) that says to start again; the route is throttled (10 requests/s, bursts of 20).",
    errors: [],
  },
} as const satisfies Record<OperationId, OperationDoc>;
