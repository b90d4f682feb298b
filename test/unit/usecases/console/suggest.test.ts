import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { billingPeriod } from '#core/plans';
import { suggestAltTextForPerson, suggestReplyForPerson } from '#usecases/console-suggest';
import {
  channel,
  channelItem,
  fixedId,
  inboxItemItem,
  inboxRecord,
  mediaAsset,
  mediaItem,
  OTHER_ORG_ID,
  org,
  orgItem,
} from '../../support/fixtures.ts';
import { actErrorOf, MEMBER, NOW, person, STRANGER, usePeopleTable } from '../../support/people.ts';

// "Suggest a reply" and "Suggest alt text" over the real createGeneration (rules engine), in the
// in-memory table: every
// member may ask; the credits come off ai_credits while the month's api_requests is left alone (a
// person is not an API request, so an exhausted quota takes nothing back out of it); a plan without
// `ai` or no credits left is refused in a person's words, nothing used.

const table = usePeopleTable();
const ITEM = inboxRecord(1, { channel_id: fixedId('channel', 1), text: 'Does it work on phones?' });
const lambda = { getRemainingTimeInMillis: () => 30_000 };
const period = billingPeriod(NOW.getTime()).id;
const usage = () => table.get(keys.usage(ITEM.org_id, period));

const seed = (counters: Record<string, number> = {}) => {
  table.seed(channelItem(channel(1)));
  table.seed(inboxItemItem(ITEM));
  table.seed({ ...keys.usage(ITEM.org_id, period), api_requests: 7, ...counters });
};
const suggest = () =>
  suggestReplyForPerson({ orgId: ITEM.org_id, actor: person(MEMBER), id: ITEM.id, now: NOW, lambda });

describe('suggesting a reply', () => {
  it('answers a member with a reply naming the author, on ai_credits and not api_requests', async () => {
    seed();
    const s = await suggest();
    expect(s.model).toBe('rules');
    expect(s.bodies.length).toBeGreaterThan(0);
    expect(s.bodies[0]).toContain('fan.example');
    expect(usage()?.ai_credits).toBeGreaterThan(0);
    expect(usage()?.api_requests).toBe(7);
  });

  it('refuses with no credits left (nothing taken out of api_requests) and on a plan without ai', async () => {
    seed({ ai_credits: 1_000 });
    const exhausted = await actErrorOf(suggest());
    expect(exhausted.kind).toBe('rate_limited');
    expect(usage()?.api_requests).toBe(7);
    expect(usage()?.ai_credits).toBe(1_000);
    table.seed(orgItem({ ...org(), plan: 'free' }));
    expect((await actErrorOf(suggest())).kind).toBe('forbidden');
  });
});

describe('suggesting alt text', () => {
  const IMAGE = mediaAsset({
    status: 'ready',
    filename: 'team-photo.png',
    width: 1200,
    height: 800,
    size_bytes: 4_000,
  });
  const alt = (id = IMAGE.id, orgId = IMAGE.org_id, actor = person(MEMBER)) =>
    suggestAltTextForPerson({ orgId, actor, id, now: NOW, lambda });

  it('answers a member with alt text for a ready image, on ai_credits and not api_requests', async () => {
    seed();
    table.seed(mediaItem(IMAGE));
    const s = await alt();
    expect(s.model).toBe('rules');
    expect(s.alt.trim().length).toBeGreaterThan(0);
    expect(usage()?.ai_credits).toBeGreaterThan(0);
    expect(usage()?.api_requests).toBe(7);
  });

  it('refuses what is not a ready image, another workspace’s asset, and a plan without ai, nothing used', async () => {
    seed();
    table.seed(mediaItem(mediaAsset({ id: fixedId('media', 2), status: 'pending' })));
    table.seed(
      mediaItem(
        mediaAsset({ id: fixedId('media', 3), status: 'ready', kind: 'video', content_type: 'video/mp4' }),
      ),
    );
    table.seed(mediaItem(IMAGE));
    const pending = await actErrorOf(alt(fixedId('media', 2)));
    expect(pending.kind).toBe('invalid');
    expect(pending.message).toContain('ready image');
    expect((await actErrorOf(alt(fixedId('media', 3)))).kind).toBe('invalid');
    // Another workspace's image is unknown to it, as to the API (the page then answers 404).
    const elsewhere = await actErrorOf(alt(IMAGE.id, OTHER_ORG_ID, person(STRANGER)));
    expect([elsewhere.kind, elsewhere.message]).toEqual(['invalid', 'No media asset with this id.']);
    expect((await actErrorOf(alt('not-a-media-id'))).kind).toBe('not_found');
    expect(usage()?.ai_credits ?? 0).toBe(0);
    table.seed(orgItem({ ...org(), plan: 'free' }));
    expect((await actErrorOf(alt())).kind).toBe('forbidden');
  });
});
