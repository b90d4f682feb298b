import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, embeddedIPv4, isForbiddenAddress, parseCidrs } from '#core/address-policy';

/** Hostile URLs refused by checkWebhookUrl (http allowed unless the row says otherwise). */
const HOSTILE: Array<[url: string, reason: string]> = [
  // 127.0.0.0/8 and its alternative IPv4 spellings
  ['http://127.0.0.1/', 'forbidden_address'],
  ['http://127.1/', 'forbidden_address'],
  ['http://127.0.1/', 'forbidden_address'],
  ['http://127.255.255.254/', 'forbidden_address'],
  ['http://2130706433/', 'forbidden_address'],
  ['http://0177.0.0.1/', 'forbidden_address'],
  ['http://0x7f.1/', 'forbidden_address'],
  ['http://0x7f000001/', 'forbidden_address'],
  ['http://017700000001/', 'forbidden_address'],
  ['http://127.0.0.1.:8080/', 'forbidden_address'],
  ['http://0.0.0.0/', 'forbidden_address'],
  ['http://0/', 'forbidden_address'],
  // IPv6 literals and IPv4-embedding forms
  ['http://[::]/', 'forbidden_address'],
  ['http://[::1]/', 'forbidden_address'],
  ['http://[::ffff:127.0.0.1]/', 'forbidden_address'],
  ['http://[::ffff:7f00:1]/', 'forbidden_address'],
  ['http://[::ffff:a9fe:a9fe]/', 'forbidden_address'],
  ['http://[::ffff:0:7f00:1]/', 'forbidden_address'],
  ['http://[::127.0.0.1]/', 'forbidden_address'],
  ['http://[64:ff9b::a9fe:a9fe]/', 'forbidden_address'],
  ['http://[64:ff9b::7f00:1]/', 'forbidden_address'],
  ['http://[64:ff9b:1::a00:1]/', 'forbidden_address'],
  ['http://[2002:a9fe:a9fe::]/', 'forbidden_address'],
  ['http://[2002:7f00:1::1]/', 'forbidden_address'],
  ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', 'forbidden_address'],
  ['http://[fe80::1]/', 'forbidden_address'],
  ['http://[fc00::1]/', 'forbidden_address'],
  ['http://[fd00::1]/', 'forbidden_address'],
  ['http://[fd00:ec2::254]/', 'forbidden_address'],
  ['http://[2001:db8::1]/', 'forbidden_address'],
  ['http://[ff02::1]/', 'forbidden_address'],
  ['http://[fec0::1]/', 'forbidden_address'],
  // private, CGNAT, link-local, metadata
  ['http://10.0.0.1/', 'forbidden_address'],
  ['http://10.255.255.255/', 'forbidden_address'],
  ['http://172.16.0.1/', 'forbidden_address'],
  ['http://172.31.255.254/', 'forbidden_address'],
  ['http://192.168.1.1/', 'forbidden_address'],
  ['http://100.64.0.1/', 'forbidden_address'],
  ['http://100.127.255.254/', 'forbidden_address'],
  ['http://169.254.169.254/latest/meta-data/', 'forbidden_address'],
  ['http://169.254.1.1/', 'forbidden_address'],
  ['http://0xa9fea9fe/', 'forbidden_address'],
  ['http://2852039166/', 'forbidden_address'],
  ['http://100.100.100.200/', 'forbidden_address'],
  ['http://168.63.129.16/', 'forbidden_address'],
  // multicast, broadcast, reserved, documentation, benchmarking
  ['http://224.0.0.1/', 'forbidden_address'],
  ['http://239.255.255.250/', 'forbidden_address'],
  ['http://255.255.255.255/', 'forbidden_address'],
  ['http://192.0.0.1/', 'forbidden_address'],
  ['http://192.0.2.1/', 'forbidden_address'],
  ['http://198.51.100.7/', 'forbidden_address'],
  ['http://203.0.113.9/', 'forbidden_address'],
  ['http://198.18.0.1/', 'forbidden_address'],
  ['http://198.19.255.1/', 'forbidden_address'],
  ['http://240.0.0.1/', 'forbidden_address'],
  // userinfo, schemes, ports, https-only
  ['http://example.com@127.0.0.1/', 'userinfo_not_allowed'],
  ['http://user:pass@example.com/', 'userinfo_not_allowed'],
  ['http://127.0.0.1@example.com/', 'userinfo_not_allowed'],
  ['ftp://example.com/', 'scheme_not_allowed'],
  ['file:///etc/passwd', 'scheme_not_allowed'],
  ['gopher://example.com:70/', 'scheme_not_allowed'],
  ['javascript:alert(1)', 'scheme_not_allowed'],
  ['http://example.com:0/', 'invalid_port'],
  ['http://example.com:65536/', 'invalid_url'],
  ['not a url', 'invalid_url'],
  ['http://[::1/', 'invalid_url'],
];

describe('checkWebhookUrl', () => {
  it('has at least 40 hostile rows', () => {
    expect(HOSTILE.length).toBeGreaterThanOrEqual(40);
  });

  it.each(HOSTILE)('refuses %s (%s)', (url, reason) => {
    // Act
    const result = checkWebhookUrl(url, { requireHttps: false });

    // Assert
    expect(result).toEqual({ ok: false, reason });
  });

  it('refuses http:// when https is required', () => {
    expect(checkWebhookUrl('http://example.com/hook', { requireHttps: true })).toEqual({
      ok: false,
      reason: 'https_required',
    });
  });

  it.each([
    'https://example.com/hook',
    'https://93.184.216.34/hook',
    'https://[2606:4700:4700::1111]/hook',
    'http://example.com:8080/hook?x=1',
  ])('accepts %s', (url) => {
    const result = checkWebhookUrl(url, { requireHttps: url.startsWith('https') });
    expect(result.ok).toBe(true);
  });

  it('normalizes numeric IPv4 hosts through WHATWG parsing', () => {
    const result = checkWebhookUrl('http://0x7f.1/', {
      requireHttps: false,
      allow: parseCidrs('127.0.0.0/8'),
    });
    expect(result.ok && result.url.hostname).toBe('127.0.0.1');
  });

  it('lets allow-listed loopback through only with the allow list', () => {
    expect(checkWebhookUrl('http://127.0.0.1:3000/', { requireHttps: false }).ok).toBe(false);
    expect(
      checkWebhookUrl('http://127.0.0.1:3000/', { requireHttps: false, allow: parseCidrs('127.0.0.0/8') }).ok,
    ).toBe(true);
  });
});

describe('isForbiddenAddress', () => {
  it.each([
    '127.0.0.1',
    '0.0.0.0',
    '10.1.2.3',
    '169.254.169.254',
    '100.100.100.200',
    '168.63.129.16',
    '192.88.99.1',
    '192.52.193.1',
    '::',
    '::1',
    '::ffff:10.0.0.1',
    'fd00:ec2::254',
    '2001:2::1',
    '2001:20::1',
    '5f00::1',
    '3fff::1',
    'fe80::1%eth0',
    'not-an-ip',
    '',
  ])('forbids %s', (ip) => {
    expect(isForbiddenAddress(ip)).toBe(true);
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e'])(
    'allows public %s',
    (ip) => {
      expect(isForbiddenAddress(ip)).toBe(false);
    },
  );

  it('exempts allow-listed CIDRs, including the IPv4-mapped form', () => {
    const allow = parseCidrs('127.0.0.0/8, ::1/128');
    expect(isForbiddenAddress('127.0.0.1', allow)).toBe(false);
    expect(isForbiddenAddress('127.5.6.7', allow)).toBe(false);
    expect(isForbiddenAddress('::ffff:127.0.0.1', allow)).toBe(false);
    expect(isForbiddenAddress('::1', allow)).toBe(false);
    expect(isForbiddenAddress('10.0.0.1', allow)).toBe(true);
    expect(isForbiddenAddress('169.254.169.254', allow)).toBe(true);
  });
});

describe('embeddedIPv4', () => {
  const embedded = (ip: string) => embeddedIPv4(ipaddr.IPv6.parse(ip)).map((a) => a.toString());

  it('unwraps the Teredo client address (XOR-obfuscated)', () => {
    expect(embedded('2001:0:4136:e378:8000:63bf:80ff:fffe')).toEqual(['65.54.227.120', '127.0.0.1']);
  });

  it('unwraps 6to4, NAT64 and mapped forms', () => {
    expect(embedded('2002:a9fe:a9fe::')).toEqual(['169.254.169.254']);
    expect(embedded('64:ff9b::a9fe:a9fe')).toEqual(['169.254.169.254']);
    expect(embedded('::ffff:7f00:1')).toEqual(['127.0.0.1']);
    expect(embedded('::ffff:0:a00:1')).toEqual(['10.0.0.1']);
    expect(embedded('2606:4700:4700::1111')).toEqual([]);
  });
});

describe('parseCidrs', () => {
  it('parses a comma-separated list and single addresses', () => {
    expect(parseCidrs('127.0.0.0/8, ::1 ,').map(([ip, bits]) => `${ip.toString()}/${bits}`)).toEqual([
      '127.0.0.0/8',
      '::1/128',
    ]);
    expect(parseCidrs(undefined)).toEqual([]);
    expect(parseCidrs('')).toEqual([]);
  });

  it('rejects garbage', () => {
    expect(() => parseCidrs('127.0.0.0/8,nope')).toThrow(/not a CIDR/);
  });
});
