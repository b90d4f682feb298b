import { expect } from 'vitest';
import { keys } from '#adapters/keys';
import type { ChannelRecord } from '#core/accounts';
import type { Platform } from '#core/platforms';
import { createChannelConnection } from '#usecases/create-channel-connection';
import { getChannelConnection } from '#usecases/get-channel-connection';
import { oauthCallback } from '#usecases/oauth-callback';
import { selectChannelAccount } from '#usecases/select-channel-account';
import type { FakePlatforms } from '../../fakes/server.ts';
import type { FakeDynamo } from '../faults/support/dynamo.ts';
import { ORG_ID } from './fixtures.ts';

// A channel connection as a person makes one, through the use cases, against the platforms'
// contract fakes: a session, the consent page, the callback, the account choice.

export const LANDING = 'https://app.example.com/connected';
/** The organization's settings that allow LANDING's origin (a session may send people nowhere else but loopback). */
export const ALLOWS_LANDING = { landing_origins: ['https://app.example.com'] };
export const admitted = async () => undefined;

type World = { table: FakeDynamo; fakes: FakePlatforms };

export function connectFlow(world: World) {
  const create = (body: Parameters<typeof createChannelConnection>[0]['body']) =>
    createChannelConnection({
      orgId: ORG_ID,
      body,
      requestHost: 'api.example.com',
      now: new Date(),
      admitted,
    });

  /** The person at the platform's consent page: where the platform sends the browser back. */
  async function consent(authorizeUrl: string | null, extra: Record<string, string> = {}): Promise<URL> {
    const url = new URL(String(authorizeUrl));
    for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
    const res = await fetch(url, { redirect: 'manual' });
    expect(res.status, await res.clone().text()).toBe(302);
    return new URL(String(res.headers.get('location')));
  }

  /** The browser arriving at Herald's callback; the landing URL it is sent on to. */
  async function callback(platform: string, back: URL): Promise<URL> {
    const out = await oauthCallback(platform, Object.fromEntries(back.searchParams), new Date());
    if (!('location' in out)) throw new Error(`no redirect: ${JSON.stringify(out)}`);
    return new URL(out.location);
  }

  /** Session → consent → callback (→ the first account when several): the connected channel. */
  async function connect(platform: Platform, extra: Record<string, string> = {}, channelId?: string) {
    const session = await create({
      platform,
      redirect_uri: LANDING,
      ...(channelId ? { channel_id: channelId } : {}),
      ...(platform === 'mastodon' ? { instance: world.fakes.url('mastodon') } : {}),
    });
    const landed = await callback(platform, await consent(session.authorize_url, extra));
    let now = await getChannelConnection(ORG_ID, session.id, new Date());
    if (now.status === 'selecting_account')
      now = await selectChannelAccount(ORG_ID, session.id, now.accounts?.[0]?.id ?? '', new Date(), admitted);
    return { session, landed, now };
  }

  const channelOf = (id: string) =>
    world.table.get<ChannelRecord & Record<string, unknown>>(keys.channel(ORG_ID, id));

  return { create, consent, callback, connect, channelOf };
}
