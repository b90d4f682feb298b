import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ActError, type SignedIn } from '#core/people';
import { handler } from '#handlers/console-media';
import { handler as suggestHandler } from '#handlers/console-suggest';
import * as cases from '#usecases/console-media';
import * as suggestCases from '#usecases/console-suggest';
import * as badge from '#usecases/inbox-badge';
import * as settingsCases from '#usecases/settings';
import {
  call,
  consoleEvent,
  consoleOrg,
  formPost,
  mainText,
  ORG,
  person,
  sessionOf,
} from '../support/console.ts';

// The Media pages over mocked use cases: what the handler passes them (the session's org, the
// person, the page's cursor), what it renders (escaped; the facts of each kind; links only when
// http(s)), and how a refusal reaches the person (another workspace's id is the 404 page). "Suggest
// alt text" (the suggestion function): offered for a ready image on a plan with AI, its answer in a
// read-only box, a refusal on the asset's page with its status.

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/inbox-badge', () => ({ unreadBadge: vi.fn() }));
vi.mock('#usecases/console-media', () => ({ listMediaForPerson: vi.fn(), getMediaForPerson: vi.fn() }));
vi.mock('#usecases/console-suggest', () => ({
  suggestReplyForPerson: vi.fn(),
  suggestAltTextForPerson: vi.fn(),
}));

const sessions = await import('#usecases/console-sessions');

const OWNER = person('owner', 1, 'owner@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const MEDIA_ID = 'med_01JD0000000000000000000001';
const SETTINGS = { dangerous_ops: false, approval_required: false, landing_origins: [] };

const org = () => consoleOrg(SETTINGS);

const asset = (overrides: Partial<cases.MediaAsset> = {}): cases.MediaAsset => ({
  id: MEDIA_ID,
  filename: 'launch <b>banner</b>.png',
  content_type: 'image/png',
  kind: 'image',
  status: 'ready',
  url: `https://media.example/orgs/${ORG}/media/${MEDIA_ID}/launch.png`,
  size_bytes: 245_300,
  width: 1200,
  height: 630,
  duration_sec: null,
  poster_url: null,
  page_count: null,
  created_at: '2030-01-05T10:00:00.000Z',
  source_url: null,
  error: null,
  ...overrides,
});

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 1 });
  vi.mocked(badge.unreadBadge).mockResolvedValue(0);
  vi.mocked(cases.listMediaForPerson).mockResolvedValue({ assets: [asset()], next: 'cur_next' });
  vi.mocked(cases.getMediaForPerson).mockResolvedValue({ asset: asset(), suggests: false });
});

const get = (routeKey: string, who: SignedIn, opts: Parameters<typeof consoleEvent>[1] = {}) =>
  consoleEvent(routeKey, { cookies: sessionOf(who), ...opts });
const itemPage = (who: SignedIn) => get('GET /console/media/{id}', who, { params: { id: MEDIA_ID } });
const asPerson = (who: SignedIn) => ({ kind: 'person', userId: who.user.id });

describe('the media list', () => {
  it('passes the session’s org, the person and the cursor, and renders the assets escaped, paged', async () => {
    const res = await call(handler, get('GET /console/media', MEMBER, { query: 'cursor=cur_1' }));
    expect(res.statusCode).toBe(200);
    expect(cases.listMediaForPerson).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, actor: asPerson(MEMBER), cursor: 'cur_1' }),
    );
    expect(res.body).toContain('launch &lt;b&gt;banner&lt;/b&gt;.png');
    expect(res.body).toContain(`href="/console/media/${MEDIA_ID}"`);
    expect(mainText(res)).toContain('245.3 KB');
    expect(res.body).toContain('href="/console/media?cursor=cur_next" rel="next"');
    expect(res.body).toContain('href="/console/media">Newest media');
    expect(res.body).toContain('href="/console/media" aria-current="page"');
  });

  it('says when there is nothing yet', async () => {
    vi.mocked(cases.listMediaForPerson).mockResolvedValue({ assets: [], next: null });
    const res = await call(handler, get('GET /console/media', OWNER));
    expect(mainText(res)).toContain('No media yet');
    expect(res.body).not.toContain('rel="next"');
  });
});

describe('an asset’s page', () => {
  it('shows a ready image’s facts and its file’s link', async () => {
    const res = await call(handler, itemPage(OWNER));
    expect(res.statusCode).toBe(200);
    expect(cases.getMediaForPerson).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(OWNER),
      id: MEDIA_ID,
    });
    const text = mainText(res);
    for (const fact of ['Ready', 'Image', 'image/png', '245.3 KB', '1200 × 630 pixels', MEDIA_ID])
      expect(text).toContain(fact);
    expect(res.body).toContain(`href="${asset().url}"`);
  });

  it('shows a video’s duration and poster, a document’s pages, a failed import’s reason', async () => {
    vi.mocked(cases.getMediaForPerson).mockResolvedValueOnce({
      asset: asset({
        kind: 'video',
        content_type: 'video/mp4',
        duration_sec: 12.5,
        poster_url: 'https://media.example/poster.jpg',
      }),
      suggests: true,
    });
    const video = await call(handler, itemPage(OWNER));
    expect(mainText(video)).toContain('12.5 seconds');
    expect(video.body).toContain('href="https://media.example/poster.jpg"');
    vi.mocked(cases.getMediaForPerson).mockResolvedValueOnce({
      asset: asset({
        kind: 'document',
        content_type: 'application/pdf',
        width: null,
        height: null,
        page_count: 3,
      }),
      suggests: false,
    });
    expect(mainText(await call(handler, itemPage(OWNER)))).toMatch(/Pages\s*3/);
    vi.mocked(cases.getMediaForPerson).mockResolvedValueOnce({
      asset: asset({
        status: 'failed',
        error: 'The server answered 404.',
        source_url: 'javascript:alert(1)',
        url: 'javascript:alert(2)',
      }),
      suggests: false,
    });
    const failed = await call(handler, itemPage(OWNER));
    expect(mainText(failed)).toContain('The server answered 404.');
    expect(failed.body).not.toContain('href="javascript:');
  });

  it('answers another workspace’s (or no) asset with the 404 page', async () => {
    vi.mocked(cases.getMediaForPerson).mockRejectedValue(
      new ActError('This workspace has no such media asset.', 'not_found'),
    );
    const res = await call(handler, itemPage(MEMBER));
    expect(res.statusCode).toBe(404);
  });
});

describe('suggesting alt text', () => {
  const SUGGEST = `action="/console/media/${MEDIA_ID}/suggest/alt-text"`;
  const suggest = (who: SignedIn) =>
    formPost(
      'POST /console/media/{id}/suggest/alt-text',
      {},
      { cookies: sessionOf(who), params: { id: MEDIA_ID } },
    );

  it('offers the button only for a ready image on a plan with AI', async () => {
    expect((await call(handler, itemPage(OWNER))).body).not.toContain(SUGGEST);
    vi.mocked(cases.getMediaForPerson).mockResolvedValue({ asset: asset(), suggests: true });
    expect((await call(handler, itemPage(MEMBER))).body).toContain(SUGGEST);
    vi.mocked(cases.getMediaForPerson).mockResolvedValue({
      asset: asset({ status: 'pending' }),
      suggests: true,
    });
    expect((await call(handler, itemPage(OWNER))).body).not.toContain(SUGGEST);
    vi.mocked(cases.getMediaForPerson).mockResolvedValue({
      asset: asset({ kind: 'video', content_type: 'video/mp4' }),
      suggests: true,
    });
    expect((await call(handler, itemPage(OWNER))).body).not.toContain(SUGGEST);
  });

  it('shows the suggestion in a labelled read-only box, escaped, saying nothing is saved', async () => {
    vi.mocked(cases.getMediaForPerson).mockResolvedValue({ asset: asset(), suggests: true });
    vi.mocked(suggestCases.suggestAltTextForPerson).mockResolvedValue({
      alt: 'A <b>banner</b>',
      model: 'rules',
    });
    const res = await call(suggestHandler, suggest(MEMBER));
    expect(res.statusCode).toBe(200);
    expect(suggestCases.suggestAltTextForPerson).toHaveBeenCalledWith(
      expect.objectContaining({ orgId: ORG, actor: asPerson(MEMBER), id: MEDIA_ID }),
    );
    expect(res.body).toMatch(/<label class="label" for="alt-suggestion">Suggested alt text<\/label>/);
    expect(res.body).toMatch(
      /<textarea[^>]* id="alt-suggestion"[^>]* readonly[^>]*>A &lt;b&gt;banner&lt;\/b&gt;<\/textarea>/,
    );
    expect(mainText(res)).toContain('not by a language model');
    expect(mainText(res)).toContain('Nothing is saved');
  });

  it('shows a refusal on the asset’s page with its status; another workspace’s asset is the 404 page', async () => {
    vi.mocked(cases.getMediaForPerson).mockResolvedValue({ asset: asset(), suggests: true });
    for (const [kind, status] of [
      ['rate_limited', 429],
      ['forbidden', 403],
      ['invalid', 400],
      ['conflict', 503],
    ] as const) {
      vi.mocked(suggestCases.suggestAltTextForPerson).mockRejectedValueOnce(
        new ActError(`refused: ${kind}`, kind),
      );
      const res = await call(suggestHandler, suggest(OWNER));
      expect(res.statusCode, kind).toBe(status);
      expect(res.body).toContain('role="alert"');
      expect(mainText(res)).toContain(`refused: ${kind}`);
    }
    vi.mocked(suggestCases.suggestAltTextForPerson).mockRejectedValueOnce(new ActError('gone', 'not_found'));
    expect((await call(suggestHandler, suggest(OWNER))).statusCode).toBe(404);
  });
});
