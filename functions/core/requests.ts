import * as z from 'zod/mini';
import { hiddenCharacterIn } from '#core/text';
import { LIMITS, MEDIA_KINDS, PLATFORMS, POST_STATUSES } from './constants.ts';
import { PAGE_SIZE } from './cursor.ts';
import { ID_PREFIXES } from './ids.ts';
import { INBOX_KINDS, INBOX_STATUSES } from './inbox.ts';
import { once } from './once.ts';
import { EVENT_TYPES } from './webhooks.ts';

// What each operation accepts (body or query). Every schema is built on first use, once: an
// operation's Lambda builds only its own at load (shared/http.ts), instead of every schema of the
// API (building them all cost ≈ 8 ms of each cold start). The OpenAPI document (through
// contracts.ts) and the MCP tools (requestSchemas) take the very same instances.

/** Registers the schema for the OpenAPI document (components, descriptions, examples). */
export const meta = <T extends z.ZodMiniType>(
  schema: T,
  m: { id?: string; description?: string; example?: unknown; format?: string },
): T => {
  z.globalRegistry.add(schema, m);
  return schema;
};

export const dateTime = /* @__PURE__ */ once(() => z.iso.datetime({ offset: true }));

const PostMediaInput = /* @__PURE__ */ once(() =>
  z.strictObject({
    url: z.url({ protocol: /^https?$/ }).check(z.maxLength(2048)),
    type: z.enum(MEDIA_KINDS),
    alt: z.optional(z.string().check(z.maxLength(LIMITS.alt))),
  }),
);

/** A follow-up item of a thread: published as a reply under the previous part. */
const ThreadItemInput = /* @__PURE__ */ once(() =>
  z.strictObject({
    body: z.string().check(z.maxLength(LIMITS.variantBody)),
    media: z.optional(z.array(PostMediaInput()).check(z.maxLength(LIMITS.mediaPerVariant))),
  }),
);

/** Text posted by the same account right after the post (text only). */
const FirstCommentInput = /* @__PURE__ */ once(() =>
  z.strictObject({ body: z.string().check(z.minLength(1), z.maxLength(LIMITS.variantBody)) }),
);

export const VariantInput = /* @__PURE__ */ once(() =>
  z.strictObject({
    channel_id: z.string().check(z.minLength(1), z.maxLength(64)),
    body: z.string().check(z.maxLength(LIMITS.variantBody)),
    media: z.optional(z.array(PostMediaInput()).check(z.maxLength(LIMITS.mediaPerVariant))),
    options: z.optional(z.record(z.string().check(z.maxLength(64)), z.unknown())),
    thread: z.optional(z.array(ThreadItemInput()).check(z.minLength(1), z.maxLength(LIMITS.threadItems))),
    first_comment: z.optional(z.nullable(FirstCommentInput())),
  }),
);

const buildCreatePostBody = () =>
  meta(
    z.strictObject({
      variants: z.array(VariantInput()).check(z.maxLength(LIMITS.variants)),
      title: z.optional(z.nullable(z.string().check(z.maxLength(LIMITS.title)))),
      body: z.optional(z.nullable(z.string().check(z.maxLength(LIMITS.postBody)))),
      draft: z.optional(z.boolean()),
      scheduled_at: z.optional(z.nullable(dateTime())),
      publish_now: z.optional(z.boolean()),
    }),
    {
      id: 'CreatePostRequest',
      description:
        'Exactly one mode: draft: true, scheduled_at (a future time) or publish_now: true (needs the Dangerous AI operations toggle).',
      example: {
        variants: [{ channel_id: 'ch_01JD0000000000000000000000', body: 'Hello from Herald' }],
        scheduled_at: '2030-01-01T09:00:00Z',
      },
    },
  );
export const CreatePostBody = /* @__PURE__ */ once(buildCreatePostBody);
export type CreatePostInput = z.infer<ReturnType<typeof buildCreatePostBody>>;

export const ReschedulePostBody = /* @__PURE__ */ once(() =>
  meta(z.strictObject({ scheduled_at: dateTime() }), {
    id: 'ReschedulePostRequest',
    example: { scheduled_at: '2030-01-01T09:00:00Z' },
  }),
);

const buildUpdatePostBody = () =>
  meta(
    z.strictObject({
      variants: z.array(VariantInput()).check(z.maxLength(LIMITS.variants)),
      title: z.optional(z.nullable(z.string().check(z.maxLength(LIMITS.title)))),
      body: z.optional(z.nullable(z.string().check(z.maxLength(LIMITS.postBody)))),
    }),
    {
      id: 'UpdatePostRequest',
      description:
        "The post's whole content: `variants` (required; each checked as createPost checks it), `title` and `body` (absent: null). The schedule is not part of it (reschedulePost changes it).",
      example: {
        variants: [{ channel_id: 'ch_01JD0000000000000000000000', body: 'Hello from Herald (fixed)' }],
      },
    },
  );
export const UpdatePostBody = /* @__PURE__ */ once(buildUpdatePostBody);
export type UpdatePostInput = z.infer<ReturnType<typeof buildUpdatePostBody>>;
export const UnpublishPostBody = /* @__PURE__ */ once(() =>
  meta(
    z.strictObject({
      channel_ids: z.optional(
        z
          .array(z.string().check(z.minLength(1), z.maxLength(64)))
          .check(z.minLength(1), z.maxLength(LIMITS.variants)),
      ),
    }),
    {
      id: 'UnpublishPostRequest',
      description:
        'Optional: the channels to take the post down from (default: every channel it is published on). The body may be left out.',
      example: { channel_ids: ['ch_01JD0000000000000000000000'] },
    },
  ),
);

const limitParam = () => z.optional(z.coerce.number().check(z.int(), z.minimum(1), z.maximum(PAGE_SIZE.max)));
const afterParam = () => z.optional(z.string().check(z.minLength(1), z.maxLength(1024)));

export const ListPostsQuery = /* @__PURE__ */ once(() =>
  z.strictObject({
    limit: limitParam(),
    after: afterParam(),
    status: z.optional(z.enum(POST_STATUSES)),
  }),
);

/** Operations without query parameters refuse any. */
export const NoQuery = /* @__PURE__ */ once(() => z.strictObject({}));

export const CreateMediaUploadBody = /* @__PURE__ */ once(() =>
  meta(
    z.strictObject({
      filename: z.string().check(z.minLength(1), z.maxLength(255)),
      content_type: z.string().check(z.minLength(1), z.maxLength(100)),
      size_bytes: z.optional(z.int().check(z.minimum(1))),
    }),
    {
      id: 'CreateMediaUploadRequest',
      description:
        'filename includes an extension matching content_type. Allowed: image/jpeg, image/png, image/gif, image/webp (≤ 20 MB); video/mp4, video/quicktime, video/webm (≤ 1 GiB); audio/mpeg, audio/mp4, audio/wav (≤ 200 MB).',
      example: { filename: 'launch.png', content_type: 'image/png', size_bytes: 48213 },
    },
  ),
);

export const ImportMediaBody = /* @__PURE__ */ once(() =>
  meta(
    z.strictObject({
      url: z.string().check(z.minLength(1), z.maxLength(2048)),
      filename: z.optional(z.string().check(z.minLength(1), z.maxLength(255))),
    }),
    {
      id: 'ImportMediaRequest',
      description:
        'url: an http(s) address Herald fetches (public addresses only, no credentials in it; redirects followed up to 5 times, each checked). The bytes decide the type (image/jpeg, image/png, image/gif, image/webp ≤ 20 MB; video/mp4, video/quicktime, video/webm ≤ 1 GiB; audio/mpeg, audio/mp4, audio/wav ≤ 200 MB). filename: optional; its extension must match the type; by default the last segment of the URL path.',
      example: { url: 'https://example.com/launch.png' },
    },
  ),
);

export const ReplyToInboxItemBody = /* @__PURE__ */ once(() =>
  meta(
    z.strictObject({
      // The platform's own limit (a comment's, or a direct message's) is checked against the item.
      body: z.string().check(z.maxLength(LIMITS.variantBody)),
    }),
    {
      id: 'ReplyToInboxItemRequest',
      description:
        "body: the reply's text, within the platform's limit for a reply to the item's kind (a comment's for comments and mentions, a direct message's for messages), counted as the platform counts.",
      example: { body: 'Thanks! The recording is up on our site.' },
    },
  ),
);

/** The query of every paginated list without a filter. */
export const PageQuery = /* @__PURE__ */ once(() =>
  z.strictObject({ limit: limitParam(), after: afterParam() }),
);

const webhookUrl = () => z.string().check(z.minLength(1), z.maxLength(2048));
const eventTypes = () => z.array(z.enum(EVENT_TYPES)).check(z.minLength(1), z.maxLength(EVENT_TYPES.length));
const description = () =>
  z.nullable(
    z.string().check(
      z.maxLength(500),
      // Bidi controls and other invisible format characters would change how it reads to others.
      z.refine((text) => !hiddenCharacterIn(text), 'Must not contain invisible control characters.'),
    ),
  );

export const CreateWebhookEndpointBody = /* @__PURE__ */ once(() =>
  meta(
    z.strictObject({
      url: webhookUrl(),
      event_types: eventTypes(),
      description: z.optional(description()),
      enabled: z.optional(z.boolean()),
    }),
    {
      id: 'CreateWebhookEndpointRequest',
      description:
        'url: http(s) in the local stack, https only in AWS; refused with field code forbidden_address when it names or resolves to private, loopback, link-local, CGNAT, multicast, reserved or cloud-metadata address space.',
      example: { url: 'https://hooks.example.com/herald', event_types: ['post.published', 'post.failed'] },
    },
  ),
);

export const UpdateWebhookEndpointBody = /* @__PURE__ */ once(() =>
  meta(
    z
      .strictObject({
        url: z.optional(webhookUrl()),
        event_types: z.optional(eventTypes()),
        description: z.optional(description()),
        enabled: z.optional(z.boolean()),
      })
      .check(
        z.refine((b) => Object.keys(b).length > 0, {
          message: 'At least one field is required.',
          params: { code: 'empty_update' },
        }),
      ),
    {
      id: 'UpdateWebhookEndpointRequest',
      description:
        'A partial update; at least one field. A new url passes the same address checks as at creation. `enabled: true` on an auto-disabled or disabled endpoint clears its failure state and resumes deliveries; `enabled: false` stops them (state disabled).',
      example: { enabled: true },
    },
  ),
);

const buildCreateChannelConnectionBody = () =>
  meta(
    z.strictObject({
      platform: z.enum(PLATFORMS),
      redirect_uri: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
      channel_id: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
      instance: z.optional(z.string().check(z.minLength(1), z.maxLength(2048))),
      credentials: z.optional(
        z.strictObject({
          identifier: z.string().check(z.minLength(1), z.maxLength(253)),
          app_password: z.string().check(z.minLength(1), z.maxLength(256)),
          service: z.optional(z.url({ protocol: /^https?$/ }).check(z.maxLength(2048))),
        }),
      ),
    }),
    {
      id: 'CreateChannelConnectionRequest',
      description:
        'OAuth platforms: `platform` and, optionally, `redirect_uri` (where the person lands at the end: a URL on an origin the organization allows, or on this machine). Mastodon adds `instance` (the server origin). Bluesky sends `credentials` (identifier, an app password, and the PDS `service`, default https://bsky.social) and is connected at once. `channel_id` reconnects that channel in place.',
      example: { platform: 'linkedin', redirect_uri: 'https://app.example.com/connected' },
    },
  );
export const CreateChannelConnectionBody = /* @__PURE__ */ once(buildCreateChannelConnectionBody);
export type CreateChannelConnectionInput = z.infer<ReturnType<typeof buildCreateChannelConnectionBody>>;

export const SelectChannelAccountBody = /* @__PURE__ */ once(() =>
  meta(z.strictObject({ account_id: z.string().check(z.minLength(1), z.maxLength(200)) }), {
    id: 'SelectChannelAccountRequest',
    description: 'One of the `accounts[].id` of the session.',
    example: { account_id: '104857600' },
  }),
);

/** A prefixed id of `kind` (its ULID after the prefix); anything else is a 400 at its pointer. */
const idOf = (kind: keyof typeof ID_PREFIXES) =>
  z
    .string()
    .check(
      z.regex(
        new RegExp(`^${ID_PREFIXES[kind]}_[0-9A-HJKMNP-TV-Z]{26}$`),
        `Must be a ${ID_PREFIXES[kind]}_… id.`,
      ),
    );

/** A filter naming a resource by id (anything else is a 400 at its pointer). */
const idFilter = (kind: keyof typeof ID_PREFIXES) => z.optional(idOf(kind));

export const ListInboxQuery = /* @__PURE__ */ once(() =>
  z.strictObject({
    limit: limitParam(),
    after: afterParam(),
    status: z.optional(z.enum(INBOX_STATUSES)),
    kind: z.optional(z.enum(INBOX_KINDS)),
    channel_id: idFilter('channel'),
    post_id: idFilter('post'),
  }),
);

const buildUpdateInboxItemBody = () =>
  meta(z.strictObject({ status: z.enum(INBOX_STATUSES) }), {
    id: 'UpdateInboxItemRequest',
    description:
      'The status to give the item: `unread`, `read` or `archived` (any to any; the same status again changes nothing).',
    example: { status: 'read' },
  });
export const UpdateInboxItemBody = /* @__PURE__ */ once(buildUpdateInboxItemBody);
export type UpdateInboxItemInput = z.infer<ReturnType<typeof buildUpdateInboxItemBody>>;

/** The longest prompt or text a generation takes (characters). */
export const GENERATION_TEXT_MAX = 10_000;
/** The most channels one `variants` or `rewrite` generation writes for. */
export const GENERATION_CHANNELS_MAX = 25;

const generationText = () => z.string().check(z.minLength(1), z.maxLength(GENERATION_TEXT_MAX));
const generationChannels = () =>
  z.array(idOf('channel')).check(
    z.minLength(1),
    z.maxLength(GENERATION_CHANNELS_MAX),
    z.refine((ids) => new Set(ids).size === ids.length, 'Each channel at most once.'),
  );

const buildCreateGenerationBody = () =>
  meta(
    z.discriminatedUnion('task', [
      z.strictObject({
        task: z.literal('variants'),
        prompt: generationText(),
        channel_ids: generationChannels(),
        tone: z.optional(
          z.string().check(
            z.minLength(1),
            z.maxLength(40),
            z.refine((t) => !hiddenCharacterIn(t), 'Must not contain invisible control characters.'),
          ),
        ),
        language: z.optional(
          z.string().check(z.maxLength(35), z.regex(/^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{1,8})*$/, 'A BCP 47 tag.')),
        ),
      }),
      z.strictObject({
        task: z.literal('rewrite'),
        text: generationText(),
        channel_ids: generationChannels(),
      }),
      z.strictObject({ task: z.literal('thread'), text: generationText(), channel_id: idOf('channel') }),
      z.strictObject({ task: z.literal('alt_text'), media_id: idOf('media') }),
      z.strictObject({ task: z.literal('reply'), inbox_item_id: idOf('inbox') }),
    ]),
    {
      id: 'CreateGenerationRequest',
      description:
        "`task` and its fields: `variants` {prompt, channel_ids (1–25), tone?, language? (BCP 47)}: a post per channel; `rewrite` {text, channel_ids}: the text fitted to each channel; `thread` {text, channel_id}: the text split into a thread; `alt_text` {media_id}: a ready image's alternative text; `reply` {inbox_item_id}: suggested answers. Prompt and text: at most 10,000 characters. Every suggestion is within its channel's limits, as createPost checks them; nothing is published.",
      example: {
        task: 'variants',
        prompt: 'Announce our spring release: faster uploads and a new calendar view.',
        channel_ids: ['ch_01JD0000000000000000000000'],
        tone: 'friendly',
      },
    },
  );
export const CreateGenerationBody = /* @__PURE__ */ once(buildCreateGenerationBody);
export type CreateGenerationInput = z.infer<ReturnType<typeof buildCreateGenerationBody>>;

interface RequestSpec {
  body?: () => z.ZodMiniType;
  query?: () => z.ZodMiniType;
  /** The body may be left out (no bytes, no content type): it is read as `{}`. */
  optionalBody?: boolean;
}

/** Every operation's request schemas: the keys are the API's operation ids. */
export const requests = {
  listChannels: { query: NoQuery },
  listMedia: { query: PageQuery },
  createMediaUpload: { body: CreateMediaUploadBody },
  completeMediaUpload: { query: NoQuery },
  importMedia: { body: ImportMediaBody },
  getMedia: { query: NoQuery },
  deleteMedia: { query: NoQuery },
  listPosts: { query: ListPostsQuery },
  createPost: { body: CreatePostBody },
  getPost: { query: NoQuery },
  reschedulePost: { body: ReschedulePostBody },
  deletePost: { query: NoQuery },
  publishPost: { query: NoQuery },
  updatePost: { body: UpdatePostBody },
  // A createPost body, checked as createPost checks it; a body that breaks its schema is a 400.
  validatePost: { body: CreatePostBody },
  unpublishPost: { body: UnpublishPostBody, optionalBody: true },
  replyToInboxItem: { body: ReplyToInboxItemBody },
  createGeneration: { body: CreateGenerationBody },
  getAnalytics: { query: NoQuery },
  getUsage: { query: NoQuery },
  listWebhookEndpoints: { query: PageQuery },
  createWebhookEndpoint: { body: CreateWebhookEndpointBody },
  updateWebhookEndpoint: { body: UpdateWebhookEndpointBody },
  deleteWebhookEndpoint: { query: NoQuery },
  testWebhookEndpoint: { query: NoQuery },
  rotateWebhookSecret: { query: NoQuery },
  listWebhookDeliveries: { query: PageQuery },
  createChannelConnection: { body: CreateChannelConnectionBody },
  getChannelConnection: { query: NoQuery },
  selectChannelAccount: { body: SelectChannelAccountBody },
  disconnectChannel: { query: NoQuery },
  oauthCallback: {},
  getOpenApi: {},
  getHealth: {},
  getDocsIndex: {},
  getDocsPage: {},
  getProblemPage: {},
  getOperatorGuidePage: {},
  getChannel: { query: NoQuery },
  getChannelOptions: { query: NoQuery },
  listInbox: { query: ListInboxQuery },
  getInboxItem: { query: NoQuery },
  updateInboxItem: { body: UpdateInboxItemBody },
} as const satisfies Record<string, RequestSpec>;

export type OperationId = keyof typeof requests;

type Built<S> = S extends () => infer T ? (T extends z.ZodMiniType ? T : undefined) : undefined;
type Spec<K extends OperationId> = (typeof requests)[K];
type BodyBuilder<K extends OperationId> = Spec<K> extends { body: infer S } ? S : undefined;
type QueryBuilder<K extends OperationId> = Spec<K> extends { query: infer S } ? S : undefined;
/** The schemas of one operation, built. */
export interface RequestOf<K extends OperationId> {
  body: Built<BodyBuilder<K>>;
  query: Built<QueryBuilder<K>>;
}

/** Builds (once) and answers the schemas of a request spec (an entry of `requests`). */
export function buildRequest(spec: RequestSpec): {
  body?: z.ZodMiniType;
  query?: z.ZodMiniType;
  optionalBody?: boolean;
} {
  return { body: spec.body?.(), query: spec.query?.(), ...(spec.optionalBody ? { optionalBody: true } : {}) };
}

/** Builds (once) and answers an operation's request schemas. */
export function requestSchemas<K extends OperationId>(id: K): RequestOf<K> {
  return buildRequest(requests[id]) as RequestOf<K>;
}
