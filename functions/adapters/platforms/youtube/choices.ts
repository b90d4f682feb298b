import { OAuthTokens } from '../oauth.ts';
import type { Choice, ChoicesContext } from '../types.ts';
import { api, authed } from './client.ts';
import { youtubeError } from './errors.ts';

// The categories a video may be uploaded in (`category_id`): videoCategories.list for the channel's
// country (its snippet.country; US when it names none), assignable ones only — videos.insert
// refuses the others (invalidCategoryId). 1 quota unit each call.

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
  return { category_id: categories };
}
