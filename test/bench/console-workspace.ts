import type { PostRecord } from '#core/posts';

// The publishing half of the console bench's workspace (issue 23): channels, posts and webhook
// endpoints at the size the issue names — 10 channels, 1,000 posts, 5 endpoints — so the pages that
// list them are measured where a page that scanned the table, or read every post, would show it.

export const PUBLISHING = {
  channels: 10,
  posts: 1_000,
  endpoints: 5,
  /** Delivery-log entries per endpoint (a few pages of the log). */
  deliveriesPerEndpoint: 60,
  /** The posts by status (they add up to `posts`). */
  byStatus: { published: 600, failed: 80, scheduled: 200, draft: 70, needs_approval: 50 },
} as const;

export interface Publishing {
  channelIds: string[];
  /** A post of each status, for the rows that open one. */
  postOf: Record<keyof typeof PUBLISHING.byStatus, string>;
  endpointIds: string[];
  /** The endpoint the failure ladder disabled. */
  disabledEndpoint: string;
}

const PLATFORMS = [
  'mastodon',
  'bluesky',
  'mastodon',
  'bluesky',
  'mastodon',
  'bluesky',
  'mastodon',
  'bluesky',
  'mastodon',
  'bluesky',
] as const;

/**
 * Writes the workspace through the service's adapters: channels as a completed connection leaves
 * them (connectAccount; KMS mocked, it only seals their tokens), one flipped to reauth_required by
 * the channel-health write the sync uses; posts as their lifecycle leaves them, one item each
 * (insertPost, as createPost writes them, with the deliveries their outcomes wrote), spread over the
 * last 30 days; endpoints as createWebhookEndpoint writes them, one auto-disabled by the ladder, each
 * with a delivery log.
 */
export async function seedPublishing(orgId: string): Promise<Publishing> {
  const { KMSClient } = await import('@aws-sdk/client-kms');
  const { mockClient } = await import('aws-sdk-client-mock');
  const { serveDataKeys } = await import('../unit/support/kms.ts');
  const { connectAccount } = await import('#usecases/support/channel-connect');
  const { updateChannelHealth } = await import('#adapters/channels');
  const { insertPost } = await import('#adapters/posts');
  const { createEndpoint } = await import('#adapters/webhook-endpoints');
  const { putTestDelivery } = await import('#adapters/webhook-deliveries');
  const { newId } = await import('#core/ids');

  const kms = mockClient(KMSClient);
  serveDataKeys(kms);
  const channelIds: string[] = [];
  let first: Awaited<ReturnType<typeof connectAccount>> | undefined;
  try {
    for (let i = 0; i < PUBLISHING.channels; i++) {
      const platform = PLATFORMS[i % PLATFORMS.length] ?? 'mastodon';
      const handle = platform === 'bluesky' ? `brand${i}.bsky.social` : `brand${i}@mastodon.example`;
      const channel = await connectAccount({
        orgId,
        platform,
        account: {
          id: `acct-${i}`,
          type: 'user',
          handle,
          name: `Northwind ${i}`,
          avatar_url: null,
          followers: 1_000 * (i + 1),
          credentials:
            platform === 'bluesky'
              ? { service: 'https://bsky.example', identifier: handle, app_password: 'xxxx-xxxx-xxxx-xxxx' }
              : { instance: 'https://mastodon.example', access_token: `token-${i}` },
        },
        connectionId: newId('connection'),
        reconnect: null,
        now: new Date(),
      });
      channelIds.push(channel.id);
      first ??= channel;
    }
  } finally {
    kms.restore();
  }
  // One channel lost its grant, as the sync records it.
  if (first)
    await updateChannelHealth(
      first,
      { status: 'reauth_required', last_error: 'The platform revoked the grant: reconnect the channel.' },
      new Date().toISOString(),
    );

  const now = Date.now();
  const postOf = {} as Publishing['postOf'];
  const statuses = (
    Object.entries(PUBLISHING.byStatus) as Array<[keyof typeof PUBLISHING.byStatus, number]>
  ).flatMap(([status, n]) => Array.from({ length: n }, () => status));
  for (let i = 0; i < statuses.length; i++) {
    const status = statuses[i] as keyof typeof PUBLISHING.byStatus;
    // Spread over the last 30 days, interleaved: every page of the list mixes statuses.
    const createdMs =
      now - Math.floor(((statuses.length - i) * 30 * 86_400_000) / statuses.length) - (i % 7) * 3_600_000;
    const created = new Date(createdMs).toISOString();
    const id = newId('post', createdMs);
    const variants = channelIds.slice(i % 8, (i % 8) + 1 + (i % 3)).map((channelId, v) => ({
      id: `var_${v}`,
      channel_id: channelId,
      body: `Post ${i} for channel ${v}: spring collection, new arrivals and a story from the studio.`,
      media: [],
      options: {},
    }));
    const done = status === 'published' || status === 'failed';
    const deliveries: PostRecord['deliveries'] = {};
    if (done)
      for (const v of variants)
        deliveries[v.channel_id] = {
          channel_id: v.channel_id,
          stage: status === 'published' ? 'published' : 'failed',
          external_id: status === 'published' ? `ext-${i}` : null,
          url: status === 'published' ? `https://mastodon.example/@brand/${i}` : null,
          error:
            status === 'failed'
              ? 'mastodon: POST /api/v1/statuses 422 Validation failed: Text character limit of 500 exceeded'
              : null,
          error_category: status === 'failed' ? 'validation' : null,
          attempts: 1,
          updated_at: created,
          round: 1,
        };
    const scheduledAt =
      status === 'scheduled' || status === 'needs_approval'
        ? new Date(now + (1 + (i % 20)) * 86_400_000).toISOString()
        : done
          ? created
          : null;
    const post: PostRecord = {
      id,
      org_id: orgId,
      status,
      type: 'single',
      title: null,
      body: null,
      scheduled_at: scheduledAt,
      published_at: status === 'published' ? created : null,
      created_at: created,
      updated_at: created,
      variants,
      deliveries,
      round: done ? 1 : 0,
      version: done ? 4 : 1,
      approval: status === 'needs_approval' ? { mode: 'schedule' } : null,
      counted_period: done || status === 'scheduled' ? created.slice(0, 7) : null,
    };
    await insertPost(post);
    postOf[status] = id;
  }

  const endpointIds: string[] = [];
  const at = new Date(now).toISOString();
  for (let i = 0; i < PUBLISHING.endpoints; i++) {
    const id = newId('webhook');
    const disabled = i === 0;
    await createEndpoint({
      entity: 'webhook_endpoint',
      id,
      org_id: orgId,
      url: `https://hooks.northwind.example/${i + 1}`,
      description: `Endpoint ${i + 1}`,
      event_types: ['post.published', 'post.failed'],
      enabled: !disabled,
      state: disabled ? 'auto_disabled' : 'active',
      failure: disabled
        ? {
            consecutive_failures: 40,
            failing_since: new Date(now - 5 * 86_400_000).toISOString(),
            last_status_code: 503,
            disabled_at: at,
          }
        : { consecutive_failures: 0 },
      secret: { current: Buffer.from(`sealed-${i}`).toString('base64') },
      created_at: at,
      updated_at: at,
      version: 1,
    } as never);
    endpointIds.push(id);
    for (let d = 0; d < PUBLISHING.deliveriesPerEndpoint; d++) {
      const attempted = new Date(now - d * 600_000).toISOString();
      const ok = !disabled && d % 9 !== 0;
      await putTestDelivery(
        {
          orgId,
          endpointId: id,
          eventId: newId('message', now - d * 600_000),
          eventType: d % 2 ? 'post.published' : 'post.failed',
        },
        {
          attempt: 1,
          attempted_at: attempted,
          status_code: ok ? 200 : 503,
          duration_ms: 40 + (d % 50),
          error: ok ? null : 'HTTP 503',
        },
        ok,
      );
    }
  }
  return { channelIds, postOf, endpointIds, disabledEndpoint: endpointIds[0] as string };
}
