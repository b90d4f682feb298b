import {
  type CachedChoices,
  type ChoicesAnswer as Live,
  readChannelAndChoices,
} from '#adapters/channel-options-cache';
import type { ChannelRecord } from '#core/accounts';
import {
  CHOICE_NAMES,
  capabilitiesOf,
  describeOptions,
  missingGrantNotes,
  type OptionsNote,
} from '#core/channel-options';
import { notFound } from '#core/errors';
import { isId } from '#core/ids';
import { once } from '#core/once';

/**
 * How long the choices a platform answered are reused: an agent listing a channel's options
 * before each post does not spend the platform's rate limit (TikTok allows 20 creator_info reads a
 * minute per token, YouTube counts quota units), and a board created a few minutes ago shows soon.
 */
export const CHOICES_TTL_MS = 5 * 60_000;

// Asking the platform (the tokens, KMS, the OAuth client, the connectors' list calls) loads on the
// first call whose choices are not cached: a container answering from the cache never pays for it.
const live = once(() => import('#usecases/support/channel-choices'));

/**
 * getChannelOptions. Primary course: the channel's capabilities (its platform's, less what its
 * grant lacks, with what to do), its variant options described from the schema createPost checks
 * them with, and the live choices of those options read from the platform through the connector
 * — from the cache when read for the same connection within CHOICES_TTL_MS. A platform that
 * fails or refuses the token leaves the choices empty with a note per list (not cached, so the
 * next call asks again); the rest of the answer does not depend on the platform.
 */
export async function getChannelOptions(
  orgId: string,
  id: string,
  now: Date,
  admitted: () => Promise<unknown>,
) {
  if (!isId('channel', id)) throw notFound('channel');
  const { channel, cached } = await readChannelAndChoices(orgId, id);
  if (!channel) throw notFound('channel');
  const capabilities = capabilitiesOf(channel);
  const found = await choicesOf(channel, cached, now, admitted);
  return {
    platform: channel.platform,
    capabilities,
    options: describeOptions(channel.platform),
    choices: found.choices,
    limits: found.limits,
    notes: [...missingGrantNotes(channel.platform, capabilities), ...found.notes],
    choices_read_at: found.read_at,
  };
}

const NONE: Live = { choices: {}, limits: {}, notes: [], read_at: null };

/** The cached choices while fresh and of the same connection; else the platform's, read now. */
async function choicesOf(
  channel: ChannelRecord,
  cached: CachedChoices | null,
  now: Date,
  admitted: () => Promise<unknown>,
): Promise<Live> {
  const names = CHOICE_NAMES[channel.platform] ?? [];
  if (names.length === 0) return NONE;
  if (channel.status === 'disconnected' || channel.status === 'reauth_required') {
    return {
      ...NONE,
      notes: names.map(
        (option): OptionsNote => ({
          code: 'channel_not_live',
          option,
          message: `The channel is ${channel.status === 'disconnected' ? 'disconnected' : 'waiting to be connected again'}: connect it again (createChannelConnection with platform ${channel.platform}) to list these choices.`,
        }),
      ),
    };
  }
  const age = cached ? now.getTime() - Date.parse(cached.read_at) : Number.NaN;
  if (cached && cached.connection_id === (channel.connection_id ?? null) && age >= 0 && age < CHOICES_TTL_MS)
    return cached;
  return (await live()).readLiveChoices(
    channel,
    names,
    now,
    new Date(now.getTime() + CHOICES_TTL_MS),
    admitted,
  );
}
