import { credentialRedactor, getChannelWithSealedCredentials } from '#adapters/channel-credentials';
import { type CachedChoices, cacheChoices, cachedChoicesOf, cacheKey } from '#adapters/channel-options-cache';
import { getPlatformAppInfo } from '#adapters/platform-apps';
import { choicesFor } from '#adapters/platforms/choices';
import { type Choice, PlatformError } from '#adapters/platforms/types';
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
import { logger } from '#shared/logger';
import { channelTokens } from '#usecases/support/channel-tokens';

/**
 * How long the choices a platform answered are reused: an agent listing a channel's options
 * before each post does not spend the platform's rate limit (TikTok allows 20 creator_info reads a
 * minute per token, YouTube counts quota units), and a board created a few minutes ago shows soon.
 */
export const CHOICES_TTL_MS = 5 * 60_000;

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
  // The channel, its sealed tokens and its cached choices: one round trip.
  const stored = await getChannelWithSealedCredentials(orgId, id, cacheKey(orgId, id));
  const channel = stored.channel;
  if (!channel) throw notFound('channel');
  // TikTok's post modes depend on the operator's app (audited or not): read beside the choices.
  const [live, app] = await Promise.all([
    liveChoices(channel, stored, now, admitted),
    channel.platform === 'tiktok' ? getPlatformAppInfo('tiktok') : Promise.resolve(undefined),
  ]);
  const capabilities = capabilitiesOf(channel, app);
  return {
    platform: channel.platform,
    capabilities,
    options: describeOptions(channel.platform),
    choices: live.choices,
    limits: live.limits,
    notes: [...missingGrantNotes(channel.platform, capabilities), ...live.notes],
    choices_read_at: live.read_at,
  };
}

type Live = Omit<CachedChoices, 'connection_id' | 'read_at'> & { read_at: string | null };

const perList = (names: readonly string[], note: (option: string) => OptionsNote): OptionsNote[] =>
  names.map(note);

async function liveChoices(
  channel: ChannelRecord,
  stored: Awaited<ReturnType<typeof getChannelWithSealedCredentials>>,
  now: Date,
  admitted: () => Promise<unknown>,
): Promise<Live> {
  const names = CHOICE_NAMES[channel.platform] ?? [];
  const none: Live = { choices: {}, limits: {}, notes: [], read_at: null };
  if (names.length === 0) return none;
  const choices = await choicesFor(channel.platform);
  if (!choices) return none;
  if (channel.status === 'disconnected' || channel.status === 'reauth_required') {
    return {
      ...none,
      notes: perList(names, (option) => ({
        code: 'channel_not_live',
        option,
        message: `The channel is ${channel.status === 'disconnected' ? 'disconnected' : 'waiting to be connected again'}: connect it again (createChannelConnection with platform ${channel.platform}) to list these choices.`,
      })),
    };
  }

  const cached = cachedChoicesOf(stored.also);
  if (
    cached &&
    cached.connection_id === (channel.connection_id ?? null) &&
    now.getTime() - Date.parse(cached.read_at) < CHOICES_TTL_MS &&
    Date.parse(cached.read_at) <= now.getTime()
  ) {
    return cached;
  }

  // The tokens are opened (KMS) and the platform asked only for an admitted request.
  await admitted();
  const credentials = await stored.open();
  const creds = credentialRedactor();
  creds.remember(credentials);
  const limits: Live['limits'] = {};
  const notes: OptionsNote[] = [];
  const tokens = channelTokens({
    orgId: channel.org_id,
    channelId: channel.id,
    platform: channel.platform,
    credentials,
    version: stored.version,
    remember: creds.remember,
  });
  let lists: Record<string, Choice[]>;
  try {
    lists = await choices({
      channel: { id: channel.id, handle: channel.handle, platform: channel.platform },
      credentials,
      tokens,
      limit: (name, value) => {
        limits[name] = value;
      },
      note: (n) => notes.push(n),
    });
  } catch (err) {
    if (!(err instanceof PlatformError)) throw err;
    const message = creds.redact(tokens.explain(err));
    logger.warn('channel options: the platform did not answer the choices', {
      org_id: channel.org_id,
      channel_id: channel.id,
      platform: channel.platform,
      category: err.category,
      error: message,
    });
    const refused = err.category === 'auth_expired';
    return {
      ...none,
      notes: perList(names, (option) =>
        refused
          ? {
              code: 'reauth_required',
              option,
              message: `${message} — connect the channel again (createChannelConnection with platform ${channel.platform}) to list these choices.`,
            }
          : {
              code: 'choices_unavailable',
              option,
              message: `${message} — the list could not be read now; ask again later (options and capabilities above do not depend on it).`,
            },
      ),
    };
  }

  const entry: CachedChoices = {
    connection_id: channel.connection_id ?? null,
    read_at: now.toISOString(),
    choices: lists,
    limits,
    notes,
  };
  // The answer stands without the cache: a failed write only means the next call asks again.
  await cacheChoices(channel.org_id, channel.id, entry, new Date(now.getTime() + CHOICES_TTL_MS)).catch(
    (err: Error) =>
      logger.warn('channel options: could not cache the choices', {
        channel_id: channel.id,
        error: err.message,
      }),
  );
  return entry;
}
