import { credentialRedactor, getChannelWithSealedCredentials } from '#adapters/channel-credentials';
import {
  type CachedChoices,
  cacheChoices,
  type ChoicesAnswer as Live,
} from '#adapters/channel-options-cache';
import { choicesFor } from '#adapters/platforms/choices';
import { type Choice, PlatformError } from '#adapters/platforms/types';
import type { ChannelRecord } from '#core/accounts';
import type { OptionsNote } from '#core/channel-options';
import { logger } from '#shared/logger';
import { channelTokens } from '#usecases/support/channel-tokens';

// getChannelOptions' trip to the platform, loaded only when the cache cannot answer: the channel's
// tokens (opened for an admitted request only, renewed as publishing renews them), the platform's
// choices hook, and the cache write. A platform that fails or refuses the token: a note per list,
// nothing cached.

export async function readLiveChoices(
  channel: ChannelRecord,
  names: readonly string[],
  now: Date,
  expiresAt: Date,
  admitted: () => Promise<unknown>,
): Promise<Live> {
  const choices = await choicesFor(channel.platform);
  if (!choices) return { choices: {}, limits: {}, notes: [], read_at: null };
  const stored = await getChannelWithSealedCredentials(channel.org_id, channel.id);
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
      choices: {},
      limits: {},
      read_at: null,
      notes: names.map(
        (option): OptionsNote =>
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
  await cacheChoices(channel.org_id, channel.id, entry, expiresAt).catch((err: Error) =>
    logger.warn('channel options: could not cache the choices', {
      channel_id: channel.id,
      error: err.message,
    }),
  );
  return entry;
}
