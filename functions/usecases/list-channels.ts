import { listChannels } from '#adapters/channels';
import { toChannelView } from '#core/channel-options';

/** listChannels: every channel of the organization, not paginated (the count is plan-bounded). */
export async function listChannelsOf(orgId: string) {
  return { data: (await listChannels(orgId)).map(toChannelView) };
}
