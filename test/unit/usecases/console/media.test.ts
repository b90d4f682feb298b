import { describe, expect, it } from 'vitest';
import { getMediaForPerson, listMediaForPerson } from '#usecases/console-media';
import { fixedId, mediaAsset, mediaItem, ORG_ID, OTHER_ORG_ID } from '../../support/fixtures.ts';
import { actErrorOf, MEMBER, person, STRANGER, usePeopleTable } from '../../support/people.ts';

// The media library over the real listMedia and getMedia, in the in-memory table: every member
// sees the workspace's media, newest first, paged; another workspace's asset is not found to them
// (and theirs to it); the plan decides whether an asset's page offers AI suggestions.

const table = usePeopleTable();
const OLDER = mediaAsset({ id: fixedId('media', 1), status: 'ready', filename: 'older.png' });
const NEWER = mediaAsset({ id: fixedId('media', 2), status: 'ready', filename: 'newer.png' });
const SECRET = 'cursor-secret-for-tests-0123456789';

describe('the media library', () => {
  it('lists a member the workspace’s media newest first, a page at a time', async () => {
    table.seed(mediaItem(OLDER));
    table.seed(mediaItem(NEWER));
    const list = await listMediaForPerson({ orgId: ORG_ID, actor: person(MEMBER), cursorSecret: SECRET });
    expect(list.assets.map((a) => a.filename)).toEqual(['newer.png', 'older.png']);
    expect(list.next).toBeNull();
    const bad = await actErrorOf(
      listMediaForPerson({ orgId: ORG_ID, actor: person(MEMBER), cursor: 'nope', cursorSecret: SECRET }),
    );
    expect(bad.kind).toBe('invalid');
  });

  it('shows one asset to a member, with AI on the team plan; another workspace’s is not found', async () => {
    table.seed(mediaItem(OLDER));
    const seen = await getMediaForPerson({ orgId: ORG_ID, actor: person(MEMBER), id: OLDER.id });
    expect(seen.asset).toMatchObject({ id: OLDER.id, status: 'ready', kind: 'image' });
    expect(seen.suggests).toBe(true);
    const elsewhere = await actErrorOf(
      getMediaForPerson({ orgId: OTHER_ORG_ID, actor: person(STRANGER), id: OLDER.id }),
    );
    expect(elsewhere.kind).toBe('not_found');
    const unknown = await actErrorOf(
      getMediaForPerson({ orgId: ORG_ID, actor: person(MEMBER), id: 'med_x' }),
    );
    expect(unknown.kind).toBe('not_found');
  });
});
