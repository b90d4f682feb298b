import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ForbiddenAddressError,
  pinnedLookup,
  type Resolver,
  resolveChecked,
  safePost,
  WebhookRequestError,
} from '#adapters/webhooks/safe-http';
import { parseCidrs } from '#core/address-policy';

const LOOPBACK = parseCidrs('127.0.0.0/8');
const servers: http.Server[] = [];

interface Receiver {
  port: number;
  requests: http.IncomingMessage[];
}

/** A loopback receiver; `handler` answers each request. */
async function receiver(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<Receiver> {
  const requests: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req);
    res.on('error', () => {});
    handler(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, requests };
}

const ok = (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('thanks');
};

/** A resolver stub answering `answers[n]` on its n-th call, counting calls. */
function stubResolver(...answers: string[][]): Resolver & { calls: number } {
  const fn = async () => {
    const answer = answers[Math.min(fn.calls, answers.length - 1)] ?? [];
    fn.calls += 1;
    return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  fn.calls = 0;
  return fn;
}

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** Hostile destinations refused before any connection. */
const HOSTILE: Array<[name: string, url: string, answers: string[]]> = [
  ['name resolving to loopback', 'http://innocent.test/', ['127.0.0.1']],
  ['name resolving to RFC 1918', 'http://innocent.test/', ['10.0.0.5']],
  ['name resolving to 172.16/12', 'http://innocent.test/', ['172.20.1.1']],
  ['name resolving to 192.168/16', 'http://innocent.test/', ['192.168.0.10']],
  ['name resolving to metadata', 'http://innocent.test/', ['169.254.169.254']],
  ['name resolving to AWS IPv6 metadata', 'http://innocent.test/', ['fd00:ec2::254']],
  ['name resolving to Alibaba metadata', 'http://innocent.test/', ['100.100.100.200']],
  ['name resolving to Azure wire server', 'http://innocent.test/', ['168.63.129.16']],
  ['name resolving to CGNAT', 'http://innocent.test/', ['100.64.1.1']],
  ['name resolving to ::1', 'http://innocent.test/', ['::1']],
  ['name resolving to IPv4-mapped loopback', 'http://innocent.test/', ['::ffff:127.0.0.1']],
  ['name resolving to NAT64 metadata', 'http://innocent.test/', ['64:ff9b::a9fe:a9fe']],
  ['name resolving to ULA', 'http://innocent.test/', ['fc00::1']],
  ['name resolving to 0.0.0.0', 'http://innocent.test/', ['0.0.0.0']],
  ['one public + one private answer', 'http://mixed.test/', ['93.184.216.34', '10.0.0.1']],
  ['one public IPv6 + one link-local answer', 'http://mixed.test/', ['2606:4700:4700::1111', 'fe80::1']],
  ['IP literal loopback', 'http://127.0.0.1/', []],
  ['decimal IPv4 literal', 'http://2130706433/', []],
  ['IPv6 literal mapped loopback', 'http://[::ffff:7f00:1]/', []],
];

describe('safePost refuses hostile destinations', () => {
  it.each(HOSTILE)('%s', async (_name, url, answers) => {
    // Arrange
    const resolver = stubResolver(answers);

    // Act
    const attempt = safePost(url, '{}', {}, { allow: [], requireHttps: false, resolver });

    // Assert
    await expect(attempt).rejects.toBeInstanceOf(ForbiddenAddressError);
    expect(resolver.calls).toBeLessThanOrEqual(1);
  });

  it.each([
    ['http://example.com@127.0.0.1/', 'userinfo_not_allowed', false],
    ['ftp://example.com/', 'scheme_not_allowed', false],
    ['file:///etc/passwd', 'scheme_not_allowed', false],
    ['http://example.com/', 'https_required', true],
  ] as const)('%s → %s', async (url, reason, requireHttps) => {
    const resolver = stubResolver(['93.184.216.34']);
    const attempt = safePost(url, '{}', {}, { allow: [], requireHttps, resolver });
    await expect(attempt).rejects.toMatchObject({ name: 'WebhookRequestError', reason });
    expect(resolver.calls).toBe(0);
  });

  it('reports a failed or empty resolution', async () => {
    const failing: Resolver = async () => {
      throw new Error('ENOTFOUND');
    };
    await expect(
      safePost('http://nowhere.test/', '{}', {}, { allow: [], requireHttps: false, resolver: failing }),
    ).rejects.toMatchObject({ reason: 'dns_failed' });
    await expect(
      safePost(
        'http://nowhere.test/',
        '{}',
        {},
        { allow: [], requireHttps: false, resolver: stubResolver([]) },
      ),
    ).rejects.toMatchObject({ reason: 'dns_failed' });
  });
});

describe('resolveChecked', () => {
  it('returns public answers in order', async () => {
    const answers = await resolveChecked(
      'ok.test',
      [],
      stubResolver(['93.184.216.34', '2606:4700:4700::1111']),
    );
    expect(answers.map((a) => a.address)).toEqual(['93.184.216.34', '2606:4700:4700::1111']);
  });

  it('passes allow-listed loopback only with the allow list', async () => {
    await expect(resolveChecked('local.test', [], stubResolver(['127.0.0.1']))).rejects.toBeInstanceOf(
      ForbiddenAddressError,
    );
    await expect(resolveChecked('local.test', LOOPBACK, stubResolver(['127.0.0.1']))).resolves.toHaveLength(
      1,
    );
  });
});

describe('pinnedLookup', () => {
  it('always answers the checked address, whatever the name and options', () => {
    const lookup = pinnedLookup({ address: '93.184.216.34', family: 4 });
    const single: unknown[] = [];
    const all: unknown[] = [];
    lookup('evil.test', {}, (...args: unknown[]) => single.push(...args));
    lookup('other.test', { all: true }, (...args: unknown[]) => all.push(...args));
    expect(single).toEqual([null, '93.184.216.34', 4]);
    expect(all).toEqual([null, [{ address: '93.184.216.34', family: 4 }]]);
  });
});

describe('safePost against loopback receivers', () => {
  it('DNS rebinding: resolves once and connects to the checked first answer', async () => {
    // Arrange: the checked answer is allow-listed loopback; a second lookup would answer 10.0.0.1.
    const target = await receiver(ok);
    const resolver = stubResolver(['127.0.0.1'], ['10.0.0.1']);

    // Act
    const result = await safePost(
      `http://rebind.test:${target.port}/hook?x=1`,
      '{"type":"webhook.test"}',
      { 'content-type': 'application/json', 'webhook-id': 'msg_1' },
      { allow: LOOPBACK, requireHttps: false, resolver },
    );

    // Assert
    expect(result.status).toBe(200);
    expect(result.bodyExcerpt).toBe('thanks');
    expect(resolver.calls).toBe(1);
    expect(target.requests).toHaveLength(1);
    expect(target.requests[0]?.headers.host).toBe(`rebind.test:${target.port}`);
    expect(target.requests[0]?.headers['webhook-id']).toBe('msg_1');
    expect(target.requests[0]?.url).toBe('/hook?x=1');
  });

  it('DNS rebinding: a forbidden first answer is refused without any connection', async () => {
    const target = await receiver(ok);
    const resolver = stubResolver(['10.0.0.1'], ['127.0.0.1']);

    const attempt = safePost(
      `http://rebind.test:${target.port}/`,
      '{}',
      {},
      {
        allow: LOOPBACK,
        requireHttps: false,
        resolver,
      },
    );

    await expect(attempt).rejects.toBeInstanceOf(ForbiddenAddressError);
    expect(resolver.calls).toBe(1);
    expect(target.requests).toHaveLength(0);
  });

  it('returns a 302 as a result and never follows Location', async () => {
    const second = await receiver(ok);
    const first = await receiver((_req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${second.port}/stolen` });
      res.end();
    });

    const result = await safePost(
      `http://127.0.0.1:${first.port}/`,
      '{}',
      {},
      {
        allow: LOOPBACK,
        requireHttps: false,
      },
    );

    expect(result.status).toBe(302);
    expect(first.requests).toHaveLength(1);
    expect(second.requests).toHaveLength(0);
  });

  it('gives up on a slow receiver at the timeout', async () => {
    const slow = await receiver(() => {
      /* never answers */
    });

    const attempt = safePost(
      `http://127.0.0.1:${slow.port}/`,
      '{}',
      {},
      {
        allow: LOOPBACK,
        requireHttps: false,
        timeoutMs: 200,
      },
    );

    await expect(attempt).rejects.toBeInstanceOf(WebhookRequestError);
    await expect(attempt).rejects.toMatchObject({ reason: 'timeout' });
  });

  it('times out a receiver that trickles its body', async () => {
    const trickle = await receiver((_req, res) => {
      res.writeHead(200);
      res.write('a');
    });

    const attempt = safePost(
      `http://127.0.0.1:${trickle.port}/`,
      '{}',
      {},
      {
        allow: LOOPBACK,
        requireHttps: false,
        timeoutMs: 200,
      },
    );

    await expect(attempt).rejects.toMatchObject({ reason: 'timeout' });
  });

  it('caps a huge response body', async () => {
    const huge = await receiver((_req, res) => {
      res.writeHead(500);
      const chunk = 'x'.repeat(64 * 1024);
      for (let i = 0; i < 64; i++) res.write(chunk);
      res.end();
    });

    const result = await safePost(
      `http://127.0.0.1:${huge.port}/`,
      '{}',
      {},
      {
        allow: LOOPBACK,
        requireHttps: false,
        maxResponseBytes: 1024,
      },
    );

    expect(result.status).toBe(500);
    expect(result.bodyExcerpt).toHaveLength(1024);
    expect(result.truncated).toBe(true);
  });

  it('reports a refused connection', async () => {
    const gone = await receiver(ok);
    const port = gone.port;
    for (const server of servers.splice(0))
      await new Promise<void>((resolve) => server.close(() => resolve()));

    const attempt = safePost(`http://127.0.0.1:${port}/`, '{}', {}, { allow: LOOPBACK, requireHttps: false });

    await expect(attempt).rejects.toMatchObject({ reason: 'connection_error' });
  });
});
