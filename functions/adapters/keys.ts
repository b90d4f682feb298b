// Every entity's DynamoDB keys are built here and nowhere else (see docs/architecture/data-model.md).
// Generic attributes: pk, sk, gsi1pk, gsi1sk.

import type { PostStatus } from '#core/constants';

/**
 * The sort key of an entry of the work index (GSI2: due posts, posts to sync, channels to sync):
 * `<time>#<org>#<id>`. Undefined for anything else.
 */
export function parseWorkEntry(gsi2sk: unknown): { at: string; orgId: string; id: string } | undefined {
  const [at, orgId, id] = String(gsi2sk).split('#');
  return at && orgId && id ? { at, orgId, id } : undefined;
}

export const keys = {
  org: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'ORG' }),
  user: (orgId: string, userId: string) => ({ pk: `ORG#${orgId}`, sk: `USER#${userId}` }),
  usersOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'USER#' }),
  /** A person's passkey, under their organization: sign-in finds it from the assertion's user handle. */
  passkey: (orgId: string, userId: string, credentialId: string) => ({
    pk: `ORG#${orgId}`,
    sk: `PASSKEY#${userId}#${credentialId}`,
  }),
  passkeysOfUser: (orgId: string, userId: string) => ({ pk: `ORG#${orgId}`, skPrefix: `PASSKEY#${userId}#` }),
  /** Every passkey of an organization (the members page counts them per user from the sort keys). */
  passkeysOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'PASSKEY#' }),
  /** A one-time enrollment link, by the SHA-256 of its token; deleted when used, expires by TTL. */
  enrollment: (tokenHash: string) => ({ pk: `ENROLL#${tokenHash}`, sk: 'ENROLL' }),
  /** A WebAuthn ceremony's challenge (registration or sign-in); deleted when answered, expires by TTL. */
  ceremony: (ceremonyId: string) => ({ pk: `CEREMONY#${ceremonyId}`, sk: 'CEREMONY' }),
  /** A console session, by the SHA-256 of its cookie; expires by TTL. */
  consoleSession: (tokenHash: string) => ({ pk: `SESSION#${tokenHash}`, sk: 'SESSION' }),
  /** Attempts from one source in one UTC minute (sign-in, enrollment; refused acts); expires by TTL. */
  attempts: (what: string, source: string, minute: number) => ({
    pk: `ATTEMPTS#${what}#${source}`,
    sk: `MINUTE#${minute}`,
  }),
  /** The audit log: an organization's acts, newest last by ULID (read newest first). */
  audit: (orgId: string, entryId: string) => ({ pk: `ORG#${orgId}`, sk: `AUDIT#${entryId}` }),
  auditOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'AUDIT#' }),
  /** Uniqueness guard for a user's email inside an organization. */
  userEmail: (orgId: string, email: string) => ({ pk: `ORG#${orgId}`, sk: `EMAIL#${email.toLowerCase()}` }),
  /** API keys are found by the SHA-256 of the presented key; GSI1 lists an org's keys. */
  apiKey: (hash: string) => ({ pk: `APIKEY#${hash}`, sk: 'APIKEY' }),
  apiKeyByOrg: (orgId: string, keyId: string) => ({ gsi1pk: `ORG#${orgId}#KEYS`, gsi1sk: keyId }),
  apiKeysOfOrg: (orgId: string) => ({ gsi1pk: `ORG#${orgId}#KEYS` }),
  channel: (orgId: string, channelId: string) => ({ pk: `ORG#${orgId}`, sk: `CHANNEL#${channelId}` }),
  channelsOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'CHANNEL#' }),
  /** Which channel of the org posts as a platform account (connecting it again reconnects that one). */
  channelAccount: (orgId: string, platform: string, accountId: string) => ({
    pk: `ORG#${orgId}`,
    sk: `CHACCT#${platform}#${accountId}`,
  }),
  /** A channel in the channel-sync index: the UTC day of its next sync, then the time. */
  channelSync: (nextSyncAt: string, orgId: string, channelId: string) => ({
    gsi2pk: `CHSYNC#${nextSyncAt.slice(0, 10)}`,
    gsi2sk: `${nextSyncAt}#${orgId}#${channelId}`,
  }),
  /**
   * A session holding a grant while the person picks an account: in the sync index at its expiry,
   * so the channel sync revokes and erases what was never chosen.
   */
  connectionCleanup: (expiresAt: string, orgId: string, connectionId: string) => ({
    gsi2pk: `CHSYNC#${expiresAt.slice(0, 10)}`,
    gsi2sk: `${expiresAt}#${orgId}#${connectionId}`,
  }),
  /** `day` is YYYY-MM-DD (UTC). */
  channelSyncBucket: (day: string) => ({ gsi2pk: `CHSYNC#${day}` }),
  /** How far the channel sync's finder has sent the sync index (one item for the deployment). */
  channelSyncCursor: () => ({ pk: 'CHSYNC', sk: 'CURSOR' }),
  /**
   * Channels whose renewal the platform refused for the operator's app since the finder last
   * reported them: one item per platform, counted by the sync workers, taken by the finder.
   */
  appRefusals: (platform: string) => ({ pk: 'ALARM#PLATFORM_APP_REFUSED', sk: platform }),
  appRefusalsAll: () => ({ pk: 'ALARM#PLATFORM_APP_REFUSED' }),
  /** A connection session (OAuth or app password) of an organization. */
  connection: (orgId: string, connectionId: string) => ({ pk: `ORG#${orgId}`, sk: `CONN#${connectionId}` }),
  /** The `state` of an OAuth authorization, by its SHA-256: finds the session; deleted when used. */
  oauthState: (stateHash: string) => ({ pk: `OAUTHSTATE#${stateHash}`, sk: 'STATE' }),
  /** The operator's app on a platform (client id, sealed secret, redirect URI, scopes). */
  platformApp: (platform: string) => ({ pk: `PLATFORMAPP#${platform}`, sk: 'APP' }),
  /**
   * A channel's pacing counters (the windows of its platform's counted limits, core/pacing.ts): its
   * own partition, so a burst to one account never heats its organization's; expires by TTL.
   */
  paceChannel: (orgId: string, channelId: string) => ({ pk: `PACE#${orgId}#${channelId}`, sk: 'PACE' }),
  /**
   * What getChannelOptions last read from a channel's platform (its choices), for a few minutes:
   * its own partition, never in an organization's listings; expires by TTL.
   */
  channelOptions: (orgId: string, channelId: string) => ({
    pk: `CHOPTS#${orgId}#${channelId}`,
    sk: 'CHOPTS',
  }),
  /** A platform app's pacing: its pause after the platform refused the app, and its counters; expires by TTL. */
  paceApp: (platform: string) => ({ pk: `PACEAPP#${platform}`, sk: 'PACE' }),
  /** Herald's app on one Mastodon instance (registered there on first use). */
  instanceApp: (origin: string) => ({ pk: `MASTODONAPP#${origin}`, sk: 'APP' }),
  /** Platform credentials live apart from the channel so no listing can ever return them. */
  channelCredentials: (orgId: string, channelId: string) => ({
    pk: `ORG#${orgId}`,
    sk: `CREDS#${channelId}`,
  }),
  post: (orgId: string, postId: string) => ({ pk: `ORG#${orgId}`, sk: `POST#${postId}` }),
  postsOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'POST#' }),
  postByStatus: (orgId: string, status: PostStatus, postId: string) => ({
    gsi1pk: `ORG#${orgId}#POSTS#${status}`,
    gsi1sk: `POST#${postId}`,
  }),
  postsByStatus: (orgId: string, status: PostStatus) => ({ gsi1pk: `ORG#${orgId}#POSTS#${status}` }),
  /** A post in the due-work index: the UTC minute bucket of `at`, then `at` and where to find it. */
  dueWork: (at: string, orgId: string, postId: string) => ({
    gsi2pk: `DUE#${at.slice(0, 16)}`,
    gsi2sk: `${at}#${orgId}#${postId}`,
  }),
  dueBucket: (minute: Date) => ({ gsi2pk: `DUE#${minute.toISOString().slice(0, 16)}` }),
  /** How far the sweeper has read the due-work index (one item for the deployment). */
  sweepCursor: () => ({ pk: 'SWEEP', sk: 'CURSOR' }),
  /**
   * A published post in the due-work index for engagement sync: the UTC day of `publishedAt`, then
   * `publishedAt` and where to find it. Only the last days' buckets are ever read.
   */
  syncWork: (publishedAt: string, orgId: string, postId: string) => ({
    gsi2pk: `SYNC#${publishedAt.slice(0, 10)}`,
    gsi2sk: `${publishedAt}#${orgId}#${postId}`,
  }),
  /** `day` is YYYY-MM-DD (UTC). */
  syncBucket: (day: string) => ({ gsi2pk: `SYNC#${day}` }),
  /**
   * An inbox item (core/inbox.ts): its id is derived from (channel, platform id), so two polls that
   * read the same comment write one item; newest first by id (its time part is the platform's).
   */
  inboxItem: (orgId: string, itemId: string) => ({ pk: `ORG#${orgId}`, sk: `INBOX#${itemId}` }),
  inboxOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'INBOX#' }),
  /** An item by status (gsi1): the unread count and the status filter read only their own items. */
  inboxByStatus: (orgId: string, status: string, itemId: string) => ({
    gsi1pk: `ORG#${orgId}#INBOX#${status}`,
    gsi1sk: itemId,
  }),
  inboxOfStatus: (orgId: string, status: string) => ({ gsi1pk: `ORG#${orgId}#INBOX#${status}` }),
  /** What the inbox poller keeps for a channel (its cursor, last poll, error, backoff). */
  inboxPoll: (orgId: string, channelId: string) => ({ pk: `ORG#${orgId}`, sk: `INBOXPOLL#${channelId}` }),
  inboxPollsOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'INBOXPOLL#' }),
  /**
   * A polled channel in the poll index (gsi2): one of the interval's slots, chosen from its id, so
   * each run of the finder reads one slot and every channel is polled once per interval.
   */
  inboxSlot: (slot: number, orgId: string, channelId: string) => ({
    gsi2pk: `INBOXSLOT#${slot}`,
    gsi2sk: `${orgId}#${channelId}`,
  }),
  inboxSlotBucket: (slot: number) => ({ gsi2pk: `INBOXSLOT#${slot}` }),
  /**
   * A Herald post's part as published on a channel (its platform id): the poller finds the post a
   * comment answers by one BatchGet of these. Written when the part is published; expires by TTL.
   */
  postRef: (orgId: string, channelId: string, externalId: string) => ({
    pk: `ORG#${orgId}`,
    sk: `POSTREF#${channelId}#${externalId}`,
  }),
  media: (orgId: string, mediaId: string) => ({ pk: `ORG#${orgId}`, sk: `MEDIA#${mediaId}` }),
  /**
   * A generation's credit reservation (adapters/ai-credits.ts): open while the model works, in the
   * due-work index (dueWork) until settled or refunded; expires by TTL.
   */
  generation: (orgId: string, genId: string) => ({ pk: `ORG#${orgId}`, sk: `GEN#${genId}` }),
  /** An organization's idempotency records (Powertools; sk `<operation>#<hash>`); expire by TTL. */
  idempotency: (orgId: string) => ({ pk: `ORG#${orgId}#IDEMPOTENCY` }),
  /** Before per-organization keys: every organization's records of an operation under one key. */
  legacyIdempotency: (operation: string) => ({ pk: `IDEMPOTENCY#${operation}` }),
  /** When this deployment first keyed idempotency records per organization (bounds the legacy reads). */
  idempotencySwitch: () => ({ pk: 'IDEMPOTENCY', sk: 'PER_ORG_SINCE' }),
  /**
   * The request gate of an organization for a month (`period` is YYYY-MM, UTC): the meters
   * (api_requests, posts_per_month) and each API key's burst window or revocation, under its id.
   */
  usage: (orgId: string, period: string) => ({ pk: `ORG#${orgId}`, sk: `USAGE#${period}` }),
  /** Analytics counters of an organization: deliveries and engagement totals (kept from the stream). */
  orgStats: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'STATS' }),
  /** Posts published and failed on one UTC day (`day` is YYYY-MM-DD); expires by TTL. */
  dayStats: (orgId: string, day: string) => ({ pk: `ORG#${orgId}`, sk: `STATS#DAY#${day}` }),
  /** A stream change already counted into the stats (dedupes stream retries); expires by TTL. */
  statsMarker: (orgId: string, hash: string) => ({ pk: `ORG#${orgId}`, sk: `STATSEEN#${hash}` }),
  webhookEndpoint: (orgId: string, endpointId: string) => ({ pk: `ORG#${orgId}`, sk: `WHE#${endpointId}` }),
  webhookEndpointsOfOrg: (orgId: string) => ({ pk: `ORG#${orgId}`, skPrefix: 'WHE#' }),
  /** How many endpoints an organization has (bounded by MAX_ENDPOINTS_PER_ORG). */
  webhookCount: (orgId: string) => ({ pk: `ORG#${orgId}`, sk: 'WEBHOOKS' }),
  /** One event's deliveries to one endpoint; expires by TTL. */
  webhookDelivery: (orgId: string, endpointId: string, eventId: string) => ({
    pk: `ORG#${orgId}`,
    sk: `WHD#${endpointId}#${eventId}`,
  }),
  /** The delivery log: an endpoint's deliveries by last attempt time. */
  webhookDeliveryByTime: (orgId: string, endpointId: string, at: string, eventId: string) => ({
    gsi1pk: `ORG#${orgId}#WHE#${endpointId}#LOG`,
    gsi1sk: `${at}#${eventId}`,
  }),
  webhookDeliveriesOf: (orgId: string, endpointId: string) => ({
    gsi1pk: `ORG#${orgId}#WHE#${endpointId}#LOG`,
  }),
} as const;
