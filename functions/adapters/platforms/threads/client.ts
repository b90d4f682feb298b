import { platformOrigin } from '../http.ts';
import { channelAuth, GraphClient } from '../meta/client.ts';
import type { Credentials, TokenSource } from '../types.ts';

// Threads speaks the Graph API on its own host (graph.threads.net, v1.0), with tokens that renew
// (60-day long-lived tokens, GET /refresh_access_token?grant_type=th_refresh_token).

const PLATFORM = 'threads';
const VERSION = 'v1.0';

/** The Graph client for the channel; a refused token is renewed once by the channel's token source. */
export async function open(ctx: { credentials: Credentials; tokens: TokenSource }) {
  const { accountId } = channelAuth(PLATFORM, ctx.credentials);
  const origin = platformOrigin(PLATFORM, 'https://graph.threads.net');
  const token = await ctx.tokens.accessToken();
  const refresh = async (): Promise<string | null> =>
    (await ctx.tokens.refreshAfter401()) ? String(ctx.tokens.credentials.access_token ?? '') : null;
  const client = new GraphClient({ platform: PLATFORM, base: `${origin}/${VERSION}`, token, refresh });
  return { client, accountId };
}
