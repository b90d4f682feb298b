import { describe, expect, it } from 'vitest';
import {
  CHOICE_NAMES,
  capabilitiesOf,
  describeOptions,
  missingGrantNotes,
  toChannelView,
} from '#core/channel-options';
import { checkVariant, FORMATS, OPTION_DESCRIPTIONS, PLATFORM_RULES, PLATFORMS } from '#core/platforms';

// getChannelOptions' descriptions come from the schemas createPost checks options with: a rule
// changed there shows here, and every option has words saying what it does.

const base = { body: 'Hello', media: [{ type: 'video' as const }] };

describe('describeOptions', () => {
  it.each(PLATFORMS)('%s: one description per option of its schema, none left over', (p) => {
    const described = describeOptions(p);
    const schemaKeys = Object.keys(
      (PLATFORM_RULES[p].options() as unknown as { def: { shape: Record<string, unknown> } }).def.shape,
    );
    expect(Object.keys(described).sort()).toEqual(schemaKeys.sort());
    expect(Object.keys(OPTION_DESCRIPTIONS[p]).sort()).toEqual(schemaKeys.sort());
    for (const d of Object.values(described)) expect(d.description.length).toBeGreaterThan(10);
  });

  it('derives enumerations, types and bounds from the schema', () => {
    expect(describeOptions('tiktok').privacy_level).toEqual({
      type: 'string',
      values: ['PUBLIC_TO_EVERYONE', 'MUTUAL_FOLLOW_FRIENDS', 'FOLLOWER_OF_CREATOR', 'SELF_ONLY'],
      required: false,
      description: OPTION_DESCRIPTIONS.tiktok.privacy_level,
    });
    expect(describeOptions('tiktok').disable_comment).toMatchObject({ type: 'boolean', required: false });
    expect(describeOptions('youtube').tags).toMatchObject({
      type: 'array',
      max_items: 30,
      items: { type: 'string', max_length: 100 },
    });
    expect(describeOptions('youtube').category_id).toMatchObject({ type: 'string', pattern: '^[0-9]{1,3}$' });
    expect(describeOptions('pinterest').link).toMatchObject({
      type: 'string',
      format: 'uri',
      max_length: 2048,
    });
    expect(describeOptions('bluesky').langs).toMatchObject({ type: 'array', max_items: 3 });
  });

  it('describes exactly the values createPost accepts for an enumeration', () => {
    for (const value of describeOptions('x').reply_settings?.values ?? []) {
      expect(checkVariant('x', { body: 'Hi', options: { reply_settings: value } }, '')).toEqual([]);
    }
    expect(checkVariant('x', { body: 'Hi', options: { reply_settings: 'everyone' } }, '')).toHaveLength(1);
  });
});

describe('formats', () => {
  it.each(PLATFORMS)('%s: capabilities.formats are the values options.format takes', (p) => {
    const caps = capabilitiesOf({ platform: p, granted_scopes: [] });
    expect(caps.formats).toEqual([...FORMATS[p]]);
    const body =
      p === 'youtube' || p === 'tiktok' || p === 'instagram' || p === 'pinterest' ? base : { body: 'Hi' };
    for (const format of caps.formats) {
      expect(
        checkVariant(p, { ...body, options: { format } }, '').filter((e) => e.code === 'invalid_option'),
      ).toEqual([]);
    }
    const refused = checkVariant(p, { ...body, options: { format: 'hologram' } }, '');
    expect(refused.some((e) => e.code === 'invalid_option' && e.pointer.startsWith('/options'))).toBe(true);
    expect('format' in describeOptions(p)).toBe(caps.formats.length > 0);
    if (caps.formats.length) expect(describeOptions(p).format?.values).toEqual(caps.formats);
  });
});

describe('capabilities and what to do', () => {
  it('an Instagram channel connected without the comment grant lacks first comments, with the grant to reconnect with', () => {
    const caps = capabilitiesOf({ platform: 'instagram', granted_scopes: ['instagram_business_basic'] });
    expect(caps).toMatchObject({
      first_comment: false,
      unpublish: false,
      missing: { first_comment: 'instagram_manage_comments' },
    });
    const [note, ...rest] = missingGrantNotes('instagram', caps);
    expect(rest).toEqual([]);
    expect(note).toMatchObject({
      code: 'missing_grant',
      capability: 'first_comment',
      scope: 'instagram_manage_comments',
    });
    expect(note?.message).toMatch(/connect it again/);
  });

  it('a channel whose grant has it: no note', () => {
    const caps = capabilitiesOf({
      platform: 'threads',
      granted_scopes: ['threads_basic', 'threads_manage_replies'],
    });
    expect(caps).toMatchObject({ thread: true, first_comment: true, missing: {} });
    expect(missingGrantNotes('threads', caps)).toEqual([]);
  });

  it('the Channel view carries them; the resource stays as listChannels showed it otherwise', () => {
    const view = toChannelView(
      {
        id: 'ch_1',
        org_id: 'org_1',
        platform: 'x',
        handle: 'herald',
        avatar_url: null,
        followers: 3,
        status: 'live',
        last_sync_at: null,
        last_error: null,
        created_at: '2026-01-01T00:00:00.000Z',
        granted_scopes: null,
        pace_until: '2026-01-02T00:00:00.000Z',
      },
      { poll: null, off: false },
    );
    expect(view.capabilities).toMatchObject({ thread: true, first_comment: true, formats: [] });
    expect(view).not.toHaveProperty('org_id');
    expect(view).not.toHaveProperty('pace_until');
  });

  it('lists live choices only for options the platform schema has (LinkedIn organizations aside)', () => {
    for (const [p, names] of Object.entries(CHOICE_NAMES)) {
      for (const n of names ?? []) {
        if (n === 'organization') continue;
        expect(describeOptions(p as never)).toHaveProperty(n);
      }
    }
  });
});

describe('capabilities: poll, link_card and TikTok post modes', () => {
  it.each(PLATFORMS)(
    '%s: poll and link_card say whether the schema takes options.poll and options.link_card',
    (p) => {
      const caps = capabilitiesOf({ platform: p, granted_scopes: [] });
      expect(caps.poll).toBe('poll' in describeOptions(p));
      expect(caps.link_card).toBe('link_card' in describeOptions(p));
    },
  );

  it('TikTok offers inbox mode only until the platform app is audited; other platforms have no post modes', () => {
    expect(capabilitiesOf({ platform: 'tiktok' }, null).post_modes).toEqual(['inbox']);
    expect(capabilitiesOf({ platform: 'tiktok' }, { audited: false }).post_modes).toEqual(['inbox']);
    expect(capabilitiesOf({ platform: 'tiktok' }, { audited: true }).post_modes).toEqual(['direct', 'inbox']);
    expect(capabilitiesOf({ platform: 'youtube' }, { audited: true })).not.toHaveProperty('post_modes');
    // Without the app read (listChannels, getChannel) nothing is claimed.
    expect(capabilitiesOf({ platform: 'tiktok' })).not.toHaveProperty('post_modes');
  });

  it('YouTube lists its playlists as choices of playlist_id', () => {
    expect(CHOICE_NAMES.youtube).toContain('playlist_id');
    expect('playlist_id' in describeOptions('youtube')).toBe(true);
  });
});

describe('object options', () => {
  it("describes a poll's fields from its schema, each with whether it is required", () => {
    expect(describeOptions('x').poll).toMatchObject({
      type: 'object',
      required: false,
      properties: {
        choices: { type: 'array', required: true, max_items: 4, items: { type: 'string', max_length: 25 } },
        duration_minutes: { type: 'integer', required: false },
      },
    });
    expect(describeOptions('linkedin').poll?.properties?.choices?.items?.max_length).toBe(30);
  });
});
