/**
 * Webhook address policy (docs/api/webhooks.md, "Address checks"): which IP addresses a webhook may
 * never be delivered to, and the syntactic checks of a webhook URL. Pure: no DNS, no I/O. The
 * delivery adapter (`adapters/webhooks/safe-http`) resolves names, checks every answer with
 * `isForbiddenAddress` and connects to the checked address only.
 */
import ipaddr from 'ipaddr.js';

type IP = ipaddr.IPv4 | ipaddr.IPv6;

/** Parsed CIDRs (address, prefix length). */
export type CidrList = ReadonlyArray<readonly [IP, number]>;

const cidr = (text: string): readonly [IP, number] => ipaddr.parseCIDR(text);

/** Explicitly forbidden ranges, on top of every ipaddr.js range other than `unicast`. */
const FORBIDDEN_CIDRS: CidrList = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
  '255.255.255.255/32',
  '::/128',
  '::1/128',
  '2001:db8::/32',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
  // Cloud metadata services: AWS (IPv4 and IPv6), Alibaba Cloud, Azure wire server.
  '169.254.169.254/32',
  'fd00:ec2::254/128',
  '100.100.100.200/32',
  '168.63.129.16/32',
].map(cidr);

const matchesAny = (ip: IP, list: CidrList): boolean =>
  list.some(([range, bits]) => ip.kind() === range.kind() && ip.match(range, bits));

const v4 = (hi: number, lo: number): ipaddr.IPv4 =>
  new ipaddr.IPv4([(hi >> 8) & 0xff, hi & 0xff, (lo >> 8) & 0xff, lo & 0xff]);

/**
 * The IPv4 addresses embedded in an IPv6 address by the usual transition mechanisms: IPv4-mapped
 * (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), IPv4-compatible (::/96), NAT64 (64:ff9b::/96 and
 * 64:ff9b:1::/48), 6to4 (2002::/16) and Teredo (2001::/32: server, and the XOR-obfuscated client).
 */
export function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = ip.parts as [number, number, number, number, number, number, number, number];
  const out: ipaddr.IPv4[] = [];
  const zeroPrefix = (n: number) => p.slice(0, n).every((x) => x === 0);
  if (zeroPrefix(5) && p[5] === 0xffff) out.push(v4(p[6], p[7])); // mapped
  if (zeroPrefix(4) && p[4] === 0xffff && p[5] === 0) out.push(v4(p[6], p[7])); // translated
  if (zeroPrefix(6)) out.push(v4(p[6], p[7])); // compatible (also :: and ::1, harmless)
  if (p[0] === 0x64 && p[1] === 0xff9b) {
    out.push(v4(p[6], p[7])); // /96 layout
    if (p[2] === 1) out.push(v4(p[3], ((p[4] & 0xff) << 8) | (p[5] >> 8))); // RFC 6052 /48 layout
  }
  if (p[0] === 0x2002) out.push(v4(p[1], p[2])); // 6to4
  if (p[0] === 0x2001 && p[1] === 0) {
    out.push(v4(p[2], p[3])); // Teredo server
    out.push(v4(p[6] ^ 0xffff, p[7] ^ 0xffff)); // Teredo client, obfuscated
  }
  return out;
}

function forbiddenIp(ip: IP): boolean {
  if (ip.range() !== 'unicast') return true;
  if (matchesAny(ip, FORBIDDEN_CIDRS)) return true;
  if (ip.kind() === 'ipv6') return embeddedIPv4(ip as ipaddr.IPv6).some(forbiddenIp);
  return false;
}

/**
 * True when `address` must never receive a webhook: anything that is not plain public unicast, in
 * either family, including IPv6 forms that embed a forbidden IPv4 address. Unparseable input is
 * forbidden. An address inside `allow` (HERALD_WEBHOOK_ALLOW_CIDRS, local stack only) is exempt; an
 * IPv4-mapped IPv6 address is compared with the allow list as its IPv4 address.
 */
export function isForbiddenAddress(address: string, allow: CidrList = []): boolean {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(text)) return true;
  let ip: IP;
  try {
    ip = ipaddr.parse(text);
  } catch {
    return true;
  }
  if (ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).zoneId !== undefined) return true;
  const plain =
    ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress()
      ? (ip as ipaddr.IPv6).toIPv4Address()
      : ip;
  if (allow.length > 0 && (matchesAny(ip, allow) || matchesAny(plain, allow))) return false;
  return forbiddenIp(ip);
}

/** Parses HERALD_WEBHOOK_ALLOW_CIDRS (comma-separated CIDRs or single addresses). Throws on garbage. */
export function parseCidrs(env: string | undefined): CidrList {
  if (env === undefined) return [];
  const out: Array<readonly [IP, number]> = [];
  for (const item of env.split(',')) {
    const text = item.trim();
    if (text === '') continue;
    if (ipaddr.isValidCIDR(text)) {
      out.push(ipaddr.parseCIDR(text));
    } else if (ipaddr.isValid(text)) {
      const ip = ipaddr.parse(text);
      out.push([ip, ip.kind() === 'ipv4' ? 32 : 128]);
    } else {
      throw new Error(`HERALD_WEBHOOK_ALLOW_CIDRS: not a CIDR: ${text}`);
    }
  }
  return out;
}

export type WebhookUrlRefusal =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'https_required'
  | 'userinfo_not_allowed'
  | 'invalid_port'
  | 'missing_host'
  | 'forbidden_address';

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: WebhookUrlRefusal };

/** The hostname of a WHATWG URL without IPv6 brackets. */
export const bareHostname = (url: URL): string =>
  url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;

/** True when the (bare) hostname is an IPv4 or IPv6 literal as normalised by the WHATWG parser. */
export const isIpLiteral = (host: string): boolean =>
  ipaddr.IPv4.isValidFourPartDecimal(host) || (host.includes(':') && ipaddr.IPv6.isValid(host));

/**
 * Syntactic checks of a webhook URL (WHATWG parsing, so 2130706433, 0177.0.0.1 and 0x7f.1 become
 * 127.0.0.1): http/https only (https only when `requireHttps`), no userinfo, a host, a port in
 * 1–65535, and an IP-literal host must not be forbidden. Names are checked after resolution.
 */
export function checkWebhookUrl(
  raw: string,
  opts: { requireHttps: boolean; allow?: CidrList },
): WebhookUrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid_url' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return { ok: false, reason: 'scheme_not_allowed' };
  if (opts.requireHttps && url.protocol !== 'https:') return { ok: false, reason: 'https_required' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'userinfo_not_allowed' };
  const host = bareHostname(url);
  if (host === '') return { ok: false, reason: 'missing_host' };
  if (url.port !== '') {
    const port = Number(url.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, reason: 'invalid_port' };
  }
  if (isIpLiteral(host) && isForbiddenAddress(host, opts.allow ?? [])) {
    return { ok: false, reason: 'forbidden_address' };
  }
  return { ok: true, url };
}
