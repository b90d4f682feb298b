import { KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { getPlatformApp, platformAppSettings } from '#adapters/platform-apps';
import { clearOpened } from '#adapters/sealed';
import { ActError } from '#core/people';
import { platformApps, setPlatformApp } from '#usecases/cli/admin';
import { FAKE_APPS } from '../../fakes/oauth.ts';
import { useWorld } from '../faults/support/world.ts';
import { serveDataKeys } from '../support/kms.ts';

// `herald platform-app set --platform tiktok --audited yes|no`: the setting the TikTok connector's
// default post mode follows (PublishContext.app), against the in-memory table.

const kms = mockClient(KMSClient);
useWorld();
const app = FAKE_APPS.tiktok;
const register = (extra: { audited?: boolean } = {}) =>
  setPlatformApp({ platform: 'tiktok', clientId: app.clientId, clientSecret: app.clientSecret, ...extra });

beforeEach(() => {
  kms.reset();
  serveDataKeys(kms);
  clearOpened();
  vi.stubEnv('HERALD_PUBLIC_URL', 'https://api.example.com');
});

describe('the TikTok app audited setting', () => {
  it('is off until the operator says the app is audited', async () => {
    expect(await platformAppSettings('tiktok')).toEqual({ audited: false });
    await register();
    expect(await platformAppSettings('tiktok')).toEqual({ audited: false });
    await register({ audited: true });
    expect(await platformAppSettings('tiktok')).toEqual({ audited: true });
  });

  it('--audited alone changes only that setting: the secret still opens, the client id stays', async () => {
    await register();
    const shown = await setPlatformApp({ platform: 'tiktok', audited: true });
    expect(shown).toMatchObject({
      platform: 'tiktok',
      client_id: app.clientId,
      audited: true,
      configured: true,
    });
    expect(shown).not.toHaveProperty('client_secret');
    const stored = await getPlatformApp('tiktok');
    expect(stored).toMatchObject({ client_id: app.clientId, client_secret: app.clientSecret, audited: true });
    await setPlatformApp({ platform: 'tiktok', audited: false });
    expect(await platformAppSettings('tiktok')).toEqual({ audited: false });
  });

  it('registering the app again without --audited keeps the setting', async () => {
    await register({ audited: true });
    await register();
    expect(await platformAppSettings('tiktok')).toEqual({ audited: true });
  });

  it('platform-app list shows it for TikTok only', async () => {
    await register({ audited: true });
    const { data } = await platformApps();
    expect(data.find((a) => a.platform === 'tiktok')).toMatchObject({ configured: true, audited: true });
    expect(data.find((a) => a.platform === 'youtube')).not.toHaveProperty('audited');
  });

  it('refuses --audited alone before any app, and on another platform', async () => {
    await expect(setPlatformApp({ platform: 'tiktok', audited: true })).rejects.toThrow(
      /no tiktok platform app is registered/,
    );
    await expect(
      setPlatformApp({ platform: 'youtube', clientId: 'c', clientSecret: 's', audited: true }),
    ).rejects.toBeInstanceOf(ActError);
    expect(await platformAppSettings('youtube')).toBeUndefined();
  });
});
