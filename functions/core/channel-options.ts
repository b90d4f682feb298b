import * as z from 'zod/mini';
import { type ChannelRecord, toChannel } from './accounts.ts';
import type { Platform } from './constants.ts';
import { type ChannelInbox, channelInbox, type InboxPollRecord } from './inbox.ts';
import {
  type ChannelCapabilities,
  channelCapabilities,
  FORMATS,
  LINK_CARD_PLATFORMS,
  OPTION_DESCRIPTIONS,
  PLATFORM_RULES,
  POLL_PLATFORMS,
  TIKTOK_POST_MODES,
  type TikTokPostMode,
} from './platforms.ts';

// What a channel accepts (getChannel's `capabilities`, getChannelOptions): its platform's
// capabilities less what its grant lacks, and each variant option described from the very schema
// createPost checks it with, so the description cannot drift from the rule.

/** One variant option, as getChannelOptions describes it. */
export interface OptionDescription {
  type: 'string' | 'boolean' | 'integer' | 'number' | 'array' | 'object';
  /** The only values it takes (an enumeration). */
  values?: string[];
  required: boolean;
  description: string;
  max_length?: number;
  pattern?: string;
  /** `uri`: an http(s) URL. */
  format?: string;
  /** An array's items, and how many at most. */
  items?: Omit<OptionDescription, 'required' | 'description' | 'items'>;
  max_items?: number;
  /** An object's fields (`options.poll`: choices, duration_minutes), each with whether it is required. */
  properties?: Record<string, Omit<OptionDescription, 'description' | 'properties'>>;
}

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  maxLength?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  items?: JsonSchema;
  properties?: Record<string, JsonSchema>;
  required?: string[];
}

/** An object's fields, one level deep (the only objects among the options are flat). */
function fields(json: JsonSchema): OptionDescription['properties'] {
  const required = new Set(json.required ?? []);
  const out: NonNullable<OptionDescription['properties']> = {};
  for (const [name, prop] of Object.entries(json.properties ?? {})) {
    const { properties: _nested, ...field } = shape(prop);
    out[name] = { ...field, required: required.has(name) };
  }
  return out;
}

function shape(json: JsonSchema): Omit<OptionDescription, 'required' | 'description'> {
  const out: Omit<OptionDescription, 'required' | 'description'> = {
    type: (json.type ?? 'string') as OptionDescription['type'],
  };
  if (json.enum) out.values = json.enum.map(String);
  if (json.maxLength !== undefined) out.max_length = json.maxLength;
  if (json.pattern !== undefined) out.pattern = json.pattern;
  if (json.format !== undefined) out.format = json.format;
  if (json.items) {
    const { items: _nested, ...items } = shape(json.items);
    out.items = items;
  }
  if (json.maxItems !== undefined) out.max_items = json.maxItems;
  if (json.properties) out.properties = fields(json);
  return out;
}

const described = new Map<Platform, Record<string, OptionDescription>>();

/**
 * Every option of the platform's variant schema: type, values and required from the schema itself.
 * Derived once per platform per container (the schemas never change while it runs).
 */
export function describeOptions(platform: Platform): Record<string, OptionDescription> {
  let out = described.get(platform);
  if (!out) {
    out = deriveOptions(platform);
    described.set(platform, out);
  }
  return out;
}

function deriveOptions(platform: Platform): Record<string, OptionDescription> {
  const json = z.toJSONSchema(PLATFORM_RULES[platform].options(), { unrepresentable: 'any' }) as JsonSchema;
  const required = new Set(json.required ?? []);
  const descriptions = OPTION_DESCRIPTIONS[platform];
  const out: Record<string, OptionDescription> = {};
  for (const [name, prop] of Object.entries(json.properties ?? {})) {
    out[name] = { ...shape(prop), required: required.has(name), description: descriptions[name] ?? '' };
  }
  return out;
}

/**
 * The option names a platform's connector lists live values for (getChannelOptions' `choices`).
 * `organization` (LinkedIn) is not a variant option: an organization is connected as a channel of
 * its own; the list says which ones this member could connect.
 */
export const CHOICE_NAMES: Partial<Record<Platform, readonly string[]>> = {
  pinterest: ['board_id'],
  youtube: ['category_id', 'playlist_id'],
  tiktok: ['privacy_level'],
  linkedin: ['organization'],
};

/** A channel's capabilities as getChannel and getChannelOptions answer them. */
export interface ChannelCapabilityView extends ChannelCapabilities {
  formats: string[];
  /** `options.poll` is taken. */
  poll: boolean;
  /** A URL in the text gets a preview card (`options.link_card`). */
  link_card: boolean;
  /** TikTok: the `options.post_mode` values this deployment can publish with (getChannelOptions). */
  post_modes?: TikTokPostMode[];
}

/**
 * TikTok's post modes as the operator's platform app allows them: Direct Post to a public level
 * needs an audited app ("All content posted by unaudited clients will be restricted to private
 * viewing mode"), so an unaudited app (the default) offers inbox mode only.
 */
export const tiktokPostModes = (app: { audited?: boolean } | null | undefined): TikTokPostMode[] =>
  app?.audited === true ? [...TIKTOK_POST_MODES] : ['inbox'];

/** `app`: the platform's app as the operator set it, where the answer depends on it (TikTok). */
export function capabilitiesOf(
  channel: {
    platform: Platform;
    granted_scopes?: readonly string[] | null;
  },
  app?: { audited?: boolean } | null,
): ChannelCapabilityView {
  const caps = channelCapabilities(channel.platform, channel.granted_scopes);
  const view: ChannelCapabilityView = {
    ...caps,
    formats: [...FORMATS[channel.platform]],
    poll: POLL_PLATFORMS.includes(channel.platform),
    link_card: LINK_CARD_PLATFORMS.includes(channel.platform),
  };
  if (channel.platform === 'tiktok' && app !== undefined) view.post_modes = tiktokPostModes(app);
  return view;
}

/** What a channel's `inbox` is read from besides the channel: its poll state, the operator's switch. */
export interface ChannelInboxState {
  poll: Pick<InboxPollRecord, 'last_synced_at' | 'error'> | null;
  /** The operator turned the platform's inbox off (inboxDisabledPlatforms). */
  off: boolean;
}

/**
 * The channel as listChannels and getChannel answer it: with its capabilities and its inbox
 * (other answers that embed a channel, a connection session's or an event's, carry it without them).
 */
export function toChannelView(
  rec: ChannelRecord,
  state: ChannelInboxState,
): ReturnType<typeof toChannel> & { capabilities: ChannelCapabilityView; inbox: ChannelInbox } {
  return {
    ...toChannel(rec),
    capabilities: capabilitiesOf(rec),
    inbox: channelInbox({
      platform: rec.platform,
      grantedScopes: rec.granted_scopes,
      accountId: rec.account_id,
      poll: state.poll,
      off: state.off,
      status: rec.status,
    }),
  };
}

/** Something the caller should know about a channel's options: why a list is empty, what to do. */
export interface OptionsNote {
  code:
    | 'missing_grant'
    | 'channel_not_live'
    | 'choices_unavailable'
    | 'reauth_required'
    | 'scope_not_granted'
    | 'list_truncated';
  message: string;
  /** The choice list the note is about. */
  option?: string;
  /** The capability the note is about (missing_grant). */
  capability?: 'thread' | 'first_comment';
  /** The grant to connect again with (missing_grant, scope_not_granted). */
  scope?: string;
}

/** One note per capability the channel's grant lacks, saying to reconnect and with which grant. */
export function missingGrantNotes(platform: Platform, caps: ChannelCapabilities): OptionsNote[] {
  return (['thread', 'first_comment'] as const).flatMap((capability) => {
    const scope = caps.missing[capability];
    if (!scope) return [];
    const what = capability === 'thread' ? 'threads' : 'first comments';
    return [
      {
        code: 'missing_grant' as const,
        capability,
        scope,
        message: `This ${platform} channel was connected without ${scope}, so ${what} are refused: connect it again (createChannelConnection with platform ${platform}; the same account keeps the same channel) to grant it.`,
      },
    ];
  });
}
