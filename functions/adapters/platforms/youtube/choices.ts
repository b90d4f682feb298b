import { OAuthTokens } from '../oauth.ts';
import { type Choice, type ChoicesContext, PlatformError } from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// The categories a video may be uploaded in (`category_id`): videoCategories.list for the channel's
// country (its snippet.country; US when it names none), assignable ones only — videos.insert
// refuses the others (invalidCategoryId). The playlists a video may be added to (`playlist_id`):
// playlists.list mine=true (docs/playlists/list; maxResults ≤ 50, pageToken), the first pages only.
// 1 quota unit each call.

interface Category {
  id: string;
  snippet?: { title?: string; assignable?: boolean };
}

async function countryOf(tokens: OAuthTokens, channelId: string): Promise<string> {
  if (!channelId) return 'US';
  const q = new URLSearchParams({ part: 'snippet', id: channelId });
  const res = await authed<{ items?: Array<{ snippet?: { country?: string } }> }>(
    tokens,
    api(`/youtube/v3/channels?${q}`),
    { method: 'GET' },
  );
  if (res.status !== 200) throw youtubeError(res, 'channels.list');
  const country = res.body.items?.[0]?.snippet?.country;
  return typeof country === 'string' && /^[A-Z]{2}$/.test(country) ? country : 'US';
}

const PLAYLIST_PAGE = 50;
const PLAYLIST_PAGES = 4;

async function playlists(tokens: OAuthTokens, ctx: ChoicesContext): Promise<Choice[]> {
  const out: Choice[] = [];
  let pageToken: string | undefined;
  for (let page = 0; page < PLAYLIST_PAGES; page++) {
    const q = new URLSearchParams({
      part: 'snippet',
      mine: 'true',
      maxResults: String(PLAYLIST_PAGE),
      ...(pageToken ? { pageToken } : {}),
    });
    const res = await authed<{
      items?: Array<{ id?: string; snippet?: { title?: string } }>;
      nextPageToken?: string;
    }>(tokens, api(`/youtube/v3/playlists?${q}`), { method: 'GET' });
    if (res.status !== 200) throw youtubeError(res, 'playlists.list');
    for (const p of res.body.items ?? [])
      if (typeof p.id === 'string') out.push({ value: p.id, label: p.snippet?.title || p.id });
    pageToken = typeof res.body.nextPageToken === 'string' ? res.body.nextPageToken : undefined;
    if (!pageToken) return out;
  }
  ctx.note?.({
    code: 'list_truncated',
    option: 'playlist_id',
    message: `Only the first ${PLAYLIST_PAGE * PLAYLIST_PAGES} playlists are listed; any playlist id of the channel is accepted.`,
  });
  return out;
}

/** The playlists; a refusal other than the grant's leaves the categories listed and says why. */
async function playlistsOrNote(tokens: OAuthTokens, ctx: ChoicesContext): Promise<Choice[]> {
  try {
    return await playlists(tokens, ctx);
  } catch (err) {
    if (!(err instanceof PlatformError) || err.category === 'auth_expired') throw err;
    ctx.note?.({ code: 'choices_unavailable', option: 'playlist_id', message: err.message });
    return [];
  }
}

export async function choices(ctx: ChoicesContext): Promise<Record<string, Choice[]>> {
  const tokens = await OAuthTokens.open(ctx);
  const regionCode = await countryOf(tokens, String(ctx.credentials.account_id ?? ''));
  const q = new URLSearchParams({ part: 'snippet', regionCode });
  const res = await authed<{ items?: Category[] }>(tokens, api(`/youtube/v3/videoCategories?${q}`), {
    method: 'GET',
  });
  if (res.status !== 200) throw youtubeError(res, 'videoCategories.list');
  const categories = (res.body.items ?? [])
    .filter((c) => c.snippet?.assignable === true)
    .map((c) => ({ value: String(c.id), label: c.snippet?.title || String(c.id) }));
  ctx.limit?.('region_code', regionCode);
  return { category_id: categories, playlist_id: await playlistsOrNote(tokens, ctx) };
}
