import { listChannels } from '#adapters/channels';
import { inboxPollsOfOrg } from '#adapters/inbox-polls';
import { toChannelView } from '#core/channel-options';
import { inboxDisabledPlatforms } from '#shared/inbox-settings';

/**
 * listChannels: every channel of the organization, not paginated (the count is plan-bounded), each
 * with its inbox state: the org's poll states are one more Query, run alongside the channels'.
 */
export async function listChannelsOf(orgId: string) {
  const [channels, polls] = await Promise.all([listChannels(orgId), inboxPollsOfOrg(orgId)]);
  const off = inboxDisabledPlatforms();
  return {
    data: channels.map((c) => toChannelView(c, { poll: polls.get(c.id) ?? null, off: off.has(c.platform) })),
  };
}
