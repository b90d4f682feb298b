import { describe, expect, it } from 'vitest';
import {
  type ConnectionRecord,
  connectionStatus,
  isLoopback,
  landing,
  landingAllowed,
  landingOrigin,
  landingUrl,
  toConnection,
} from '#core/connections';

// Connection sessions: where a person may land, when a session counts as expired, what the resource
// shows in each state.

const T0 = Date.parse('2030-06-01T12:00:00.000Z');
const rec = (patch: Partial<ConnectionRecord> = {}): ConnectionRecord => ({
  id: 'conn_01JD0000000000000000000001',
  org_id: 'org_01JD0000000000000000000001',
  platform: 'linkedin',
  status: 'awaiting_authorization',
  redirect_uri: 'https://app.example.com/done?tab=channels',
  authorize_url: 'https://www.linkedin.com/oauth/v2/authorization?state=s',
  callback_uri: 'https://api.example.com/oauth/callback/linkedin',
  channel_id: null,
  instance: null,
  accounts: [
    { id: 'urn:li:person:a', type: 'person', handle: 'Ada', name: 'Ada', avatar_url: null, followers: 0 },
  ],
  error: null,
  expires_at: new Date(T0 + 600_000).toISOString(),
  created_at: new Date(T0).toISOString(),
  updated_at: new Date(T0).toISOString(),
  ...patch,
});

describe('landingUrl', () => {
  it.each([
    'https://app.example.com/connected',
    'https://app.example.com:8443/a?b=c',
    'http://app.example.com/done',
    'http://localhost:5173/done',
    'http://[::1]:3000/',
  ])('takes %s as a URL a person may land on', (url) => expect(landingUrl(url)?.href).toBe(url));

  it.each([
    'javascript:alert(1)',
    'https://user:pass@app.example.com/',
    'https://app.example.com/#fragment',
    'ftp://app.example.com/',
    'not a url',
  ])('refuses %s', (url) => expect(landingUrl(url)).toBeNull());
});

describe('isLoopback', () => {
  it.each([
    'http://localhost:5173/done',
    'https://localhost/',
    'http://127.0.0.1:40000/connected',
    'http://127.8.9.10/',
    'http://0x7f.1/',
    'http://[::1]:3000/',
  ])('%s is this machine', (url) => expect(isLoopback(new URL(url))).toBe(true));

  it.each([
    'http://127.evil.example/',
    'http://127.0.0.1.evil.example/',
    'http://localhost.evil.example/',
    'http://10.0.0.5/done',
    'https://app.example.com/',
  ])('%s is not', (url) => expect(isLoopback(new URL(url))).toBe(false));
});

describe('landingAllowed', () => {
  const allowed = ['https://app.example.com', 'https://staging.example.com:8443'];

  it.each([
    'https://app.example.com/connected?tab=1',
    'https://APP.example.com:443/x',
    'https://staging.example.com:8443/',
    'http://127.0.0.1:9/connected',
  ])('allows %s', (url) => expect(landingAllowed(new URL(url), allowed)).toBe(true));

  it.each([
    'http://app.example.com/connected',
    'https://app.example.com:8443/connected',
    'https://staging.example.com/',
    'https://evil.app.example.com/',
    'https://app.example.com.evil.example/',
  ])('refuses %s (scheme, host and port must all match)', (url) =>
    expect(landingAllowed(new URL(url), allowed)).toBe(false),
  );
});

describe('landingOrigin', () => {
  it.each([
    ['https://app.example.com', 'https://app.example.com'],
    ['https://App.Example.com/', 'https://app.example.com'],
    ['https://app.example.com:443', 'https://app.example.com'],
    ['http://intranet.example:8080', 'http://intranet.example:8080'],
  ])('%s is stored as %s', (raw, origin) => expect(landingOrigin(raw)).toBe(origin));

  it.each([
    'https://app.example.com/connected',
    'https://app.example.com/?a=b',
    'https://app.example.com/#x',
    'https://user@app.example.com',
    'ftp://app.example.com',
    'app.example.com',
    '',
  ])('refuses %s', (raw) => expect(landingOrigin(raw)).toBeNull());
});

describe('connectionStatus', () => {
  it('is expired once the deadline passed while awaiting or selecting, never once ended', () => {
    const after = T0 + 600_001;
    expect(connectionStatus(rec(), T0)).toBe('awaiting_authorization');
    expect(connectionStatus(rec(), after)).toBe('expired');
    expect(connectionStatus(rec({ status: 'selecting_account' }), after)).toBe('expired');
    expect(connectionStatus(rec({ status: 'connected' }), after)).toBe('connected');
    expect(connectionStatus(rec({ status: 'failed' }), after)).toBe('failed');
  });
});

describe('toConnection', () => {
  it('shows the authorize URL only while awaiting, the accounts only while selecting, the channel only when connected', () => {
    const awaiting = toConnection(rec(), T0);
    expect(awaiting).toMatchObject({ status: 'awaiting_authorization', accounts: null, channel: null });
    expect(awaiting.authorize_url).toContain('linkedin.com');
    const selecting = toConnection(rec({ status: 'selecting_account' }), T0);
    expect(selecting).toMatchObject({ authorize_url: null, accounts: [{ id: 'urn:li:person:a' }] });
    const connected = toConnection(rec({ status: 'connected', channel_id: 'ch_1' }), T0, { id: 'ch_1' });
    expect(connected).toMatchObject({ authorize_url: null, accounts: null, channel: { id: 'ch_1' } });
    expect(toConnection(rec(), T0 + 700_000)).toMatchObject({ status: 'expired', authorize_url: null });
  });

  it('never shows the callback URI or the instance bookkeeping', () => {
    expect(Object.keys(toConnection(rec(), T0))).not.toContain('callback_uri');
  });
});

describe('landing', () => {
  it("keeps the redirect_uri's own query and adds connection_id, status and error", () => {
    const url = new URL(
      landing(rec({ status: 'failed', error: { code: 'consent_denied', message: 'no' } }), T0) ?? '',
    );
    expect(url.origin + url.pathname).toBe('https://app.example.com/done');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      tab: 'channels',
      connection_id: 'conn_01JD0000000000000000000001',
      status: 'failed',
      error: 'consent_denied',
    });
  });

  it('is null without a redirect_uri (the callback shows a page instead)', () => {
    expect(landing(rec({ redirect_uri: null }), T0)).toBeNull();
  });
});
