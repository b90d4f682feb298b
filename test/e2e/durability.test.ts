import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrashStack, sleep, type Tenant } from './crash-stack.ts';
import { ALL_SCOPES, failPlatform, fakeState, type WebhookReceiver, webhookReceiver } from './helpers.ts';
import { postsAsked, replyOf, seedItem, statusesWith } from './inbox-table.ts';

// The local stack loses nothing to a crash: its own stack on its own data directory, killed with
// SIGKILL to the whole process group (the JVM of DynamoDB Local included) at the moments that
// matter, then started again on the same data. Work is done exactly once where Herald promises
// that (platform posts), at least once with the same webhook-id where it promises that (webhooks),
// and nothing acknowledged is lost.

type Json = Record<string, unknown>;
const crash = new CrashStack();
const call = crash.call.bind(crash);
const until = crash.until.bind(crash);
const tenant = crash.tenant.bind(crash);
/** When the stack last printed `herald ready` (the restart's end). */
let readyAt = 0;
/** Measured for BENCHMARKS.md (`npm run bench`, part `recovery`, sets HERALD_RECOVERY_REPORT). */
const report: { restartsMs: number[]; afterReadyMs: Record<string, number> } = {
  restartsMs: [],
  afterReadyMs: {},
};

async function boot(timeScale = 1) {
  const began = Date.now();
  await crash.boot({ HERALD_TIME_SCALE: String(timeScale) });
  readyAt = Date.now();
  report.restartsMs.push(readyAt - began);
}

const postOf = async (t: Tenant, id: string) =>
  (await call<{ status: string }>('GET', `/v1/posts/${id}`, t.key)).body;
const published = (t: Tenant, id: string) => async () =>
  (await postOf(t, id)).status === 'published' ? true : undefined;
const countOn = async (platform: string, text: string) =>
  ((await fakeState(platform)).posts ?? []).filter((p) => JSON.stringify(p).includes(text)).length;

beforeAll(async () => {
  await crash.open('herald-crash-');
  await boot();
}, 120_000);

afterAll(async () => {
  await crash.close();
  if (process.env.HERALD_RECOVERY_REPORT)
    writeFileSync(process.env.HERALD_RECOVERY_REPORT, JSON.stringify(report));
});

/** Posts answered 201/202 just before a crash; the next test waits for them to be published once. */
const acked: Array<{ id: string; text: string }> = [];
let raceTenant: Tenant;

describe('kill -9 right after an acknowledgement', () => {
  it('keeps every post answered 201 (publish now) or 202 (publishPost), over 5 crashes', async () => {
    const t = await tenant(['bluesky']);
    raceTenant = t;
    for (let round = 0; round < 5; round++) {
      const drafts = await Promise.all(
        [0, 1, 2].map(async (i) => {
          const text = `crash ${round} draft ${i} ${Date.now()}`;
          const r = await call<{ id: string }>('POST', '/v1/posts', t.key, {
            variants: [{ channel_id: t.channels.bluesky, body: text }],
            draft: true,
          });
          return { id: r.body.id, text };
        }),
      );
      let killed = false;
      const killNow = () => {
        if (killed) return;
        killed = true;
        // At once, in the callback of the first acknowledgement: the race is a few milliseconds wide.
        process.kill(-crash.stack.pid, 'SIGKILL');
      };
      const creating = [0, 1, 2, 3].map(async (s) => {
        for (let i = 0; !killed; i++) {
          const text = `crash ${round} now ${s}-${i} ${Date.now()}`;
          const r = await call<{ id: string }>('POST', '/v1/posts', t.key, {
            variants: [{ channel_id: t.channels.bluesky, body: text }],
            publish_now: true,
          }).catch(() => undefined);
          if (r?.status === 201) {
            killNow();
            acked.push({ id: r.body.id, text });
          }
        }
      });
      const publishing = drafts.map(async (d) => {
        const r = await call('POST', `/v1/posts/${d.id}/publish`, t.key).catch(() => undefined);
        if (r?.status === 202) {
          killNow();
          acked.push(d);
        }
      });
      await Promise.all([...creating, ...publishing]);
      await crash.stack.kill();
      await boot();
      for (const a of acked) expect((await postOf(t, a.id)).status, a.text).not.toBe('draft');
    }
    expect(acked.length).toBeGreaterThanOrEqual(5);
  }, 240_000);
});

describe('kill -9 with work in flight and waiting', () => {
  it('delivers webhooks in flight and awaiting retry with the same webhook-id, delivers posts in flight and in backoff once, sends a post that fell due during the outage, and publishes the acknowledged ones of the crashes above once', async () => {
    // Arrange: the thread and the inbox reply of the next tests first (their holds are on their own
    // texts; the Mastodon hold below takes the next status of any text). Two endpoints; `hung` holds its first request
    // open, `failing` answers 500 once.
    thread = await arrangeThread();
    reply = await arrangeReply();
    const t = await tenant(['bluesky', 'mastodon', 'x']);
    const hung = await webhookReceiver();
    const failing = await webhookReceiver();
    failFirstRequest(failing);
    const holdFirst = holdFirstRequest(hung);
    const endpoints: string[] = [];
    for (const rx of [hung, failing]) {
      const ep = await call<{ id: string }>('POST', '/v1/webhook-endpoints', t.key, {
        url: rx.url,
        event_types: ['post.published'],
      });
      expect(ep.status, ep.text).toBe(201);
      endpoints.push(ep.body.id);
    }
    const stamp = Date.now();
    const texts = {
      event: `event ${stamp}`,
      inFlight: `in flight ${stamp}`,
      backoff: `backoff ${stamp}`,
      due: `due ${stamp}`,
    };
    // Mastodon takes the status and the answer never comes back (the worker dies waiting for it).
    // Both failures meet only this test's posts (their text): other files post on the same fakes.
    await failPlatform('mastodon', {
      status: 200,
      pathPattern: '^/api/v1/statuses$',
      bodyIncludes: texts.inFlight,
      holdAnswerMs: 600_000,
    });
    // X refuses once with 503: the delivery waits out its backoff (5 s and more).
    await failPlatform('x', {
      status: 503,
      pathPattern: '^/2/tweets$',
      bodyIncludes: texts.backoff,
      body: { title: 'Service Unavailable', detail: 'busy', type: 'about:blank', status: 503 },
    });
    const post = (channel: string, body: string, mode: Json) =>
      call<{ id: string }>('POST', '/v1/posts', t.key, {
        variants: [{ channel_id: channel, body }],
        ...mode,
      });
    const event = (await post(t.channels.bluesky as string, texts.event, { publish_now: true })).body.id;
    const inFlight = (await post(t.channels.mastodon as string, texts.inFlight, { publish_now: true })).body
      .id;
    const backoff = (await post(t.channels.x as string, texts.backoff, { publish_now: true })).body.id;
    const due = (
      await post(t.channels.bluesky as string, texts.due, {
        scheduled_at: new Date(Date.now() + 4_000).toISOString(),
      })
    ).body.id;
    await until(
      'the webhook attempts and the platform calls to be under way',
      async () => {
        const mastodon = (await fakeState('mastodon')).requests.some((r) =>
          JSON.stringify(r.json ?? '').includes(texts.inFlight),
        );
        const x = (await fakeState('x')).requests.some((r) =>
          JSON.stringify(r.json ?? '').includes(texts.backoff),
        );
        const firstEvent = (rx: WebhookReceiver) => rx.received.find((r) => r.body.includes(event));
        // The failed first attempt is recorded and its retry queued (due in 5 s).
        const log = await call<{ data: Array<{ status: string; attempts: unknown[] }> }>(
          'GET',
          `/v1/webhook-endpoints/${endpoints[1]}/deliveries`,
          t.key,
        );
        const retrying = log.body.data?.some((d) => d.status === 'pending' && d.attempts.length === 1);
        return mastodon && x && firstEvent(failing) && retrying && holdFirst.holding() ? true : undefined;
      },
      20_000,
    );
    // The retry's message is sent right after the attempt is recorded.
    await sleep(300);
    const ids = {
      hung: holdFirst.heldId(),
      failing: failing.received.find((r) => r.body.includes(event))?.headers['webhook-id'],
    };
    expect((await postOf(t, due)).status).toBe('scheduled');

    // Act
    await crash.stack.kill();
    // Down until the scheduled post is due.
    await sleep(Math.max(0, stamp + 4_500 - Date.now()));
    await boot();

    // Assert: each case, timed from the restart.
    const times: Record<string, number> = {};
    const timed = async (name: string, fn: () => Promise<unknown>) => {
      await fn();
      times[name] = Date.now() - readyAt;
    };
    await Promise.all([
      timed('scheduled post due during the outage published', () =>
        until('the due post', published(t, due), 60_000),
      ),
      timed('webhook awaiting its 2nd attempt delivered', () =>
        until(
          'the 2nd attempt',
          async () =>
            failing.received.filter((r) => r.headers['webhook-id'] === ids.failing).length >= 2
              ? true
              : undefined,
          60_000,
        ),
      ),
      timed('delivery in backoff published', () =>
        until('the post in backoff', published(t, backoff), 60_000),
      ),
      timed('delivery in flight published', () =>
        until('the post in flight', published(t, inFlight), 200_000),
      ),
      timed('webhook in flight delivered', () =>
        until(
          'the webhook in flight again',
          async () =>
            hung.received.some((r) => r.headers['webhook-id'] === ids.hung && r.status === 200)
              ? true
              : undefined,
          200_000,
        ),
      ),
      // The crashes above may have struck with their deliveries in flight: the same bound applies.
      timed('posts acknowledged just before a crash published', async () => {
        for (const a of acked) await until(`${a.text} published`, published(raceTenant, a.id), 200_000);
      }),
    ]);
    Object.assign(report.afterReadyMs, times);
    for (const a of acked) expect(await countOn('bluesky', a.text), a.text).toBe(1);
    expect(await countOn('mastodon', texts.inFlight)).toBe(1);
    expect(await countOn('x', texts.backoff)).toBe(1);
    expect(await countOn('bluesky', texts.due)).toBe(1);
    expect(await countOn('bluesky', texts.event)).toBe(1);
    expect(
      failing.received.filter((r) => r.headers['webhook-id'] === ids.failing).map((r) => r.status),
    ).toEqual([500, 200]);
  }, 360_000);
});

/** Makes a receiver hold its first request open (never answered): a delivery in flight at the crash. */
function holdFirstRequest(rx: WebhookReceiver) {
  let held: string | undefined;
  rx.respond = (r) => {
    if (held !== undefined) return 200;
    held = String(r.headers['webhook-id']);
    return 'hold';
  };
  return { holding: () => held !== undefined, heldId: () => held };
}

/** Answers 500 to the first request, 200 afterwards. */
function failFirstRequest(rx: WebhookReceiver) {
  let first = true;
  rx.respond = () => {
    if (!first) return 200;
    first = false;
    return 500;
  };
}

/**
 * The thread of the test below, arranged inside the test above so that one crash (and one wait for
 * the delivery queue's visibility timeout) serves both: Mastodon takes item 2 (the first follow-up)
 * and its answer never comes back; the stack is killed while the worker waits for it.
 */
async function arrangeThread() {
  const t = await tenant(['mastodon']);
  const stamp = Date.now();
  const texts = [1, 2, 3, 4, 5].map((i) => `thread ${stamp} ${i}/5`);
  const comment = `thread ${stamp} comment`;
  await failPlatform('mastodon', {
    status: 200,
    pathPattern: '^/api/v1/statuses$',
    bodyIncludes: texts[1],
    holdAnswerMs: 600_000,
  });
  const created = await call<{ id: string }>('POST', '/v1/posts', t.key, {
    variants: [
      {
        channel_id: t.channels.mastodon,
        body: texts[0],
        thread: texts.slice(1).map((body) => ({ body })),
        first_comment: { body: comment },
      },
    ],
    publish_now: true,
  });
  expect(created.status, created.text).toBe(201);
  await until(
    'item 2 to reach the platform',
    async () => ((await countOn('mastodon', texts[1] as string)) === 1 ? true : undefined),
    30_000,
  );
  return { t, stamp, texts, comment, postId: created.body.id };
}
let thread: Awaited<ReturnType<typeof arrangeThread>>;

describe('kill -9 between the parts of a thread', () => {
  it('killed after item 2 of 5 was accepted by the platform, before it was recorded: each part on the platform once, in order', async () => {
    // Arranged and crashed in the test above.
    const { t, stamp, texts, comment } = thread;

    // Assert: published, every part once, each a reply to the one before.
    await until('the thread', published(t, thread.postId), 200_000);
    const statuses = ((await fakeState('mastodon')).posts ?? []).filter((p) =>
      String(p.text).startsWith(`thread ${stamp} `),
    );
    expect(statuses.map((p) => p.text)).toEqual([...texts, comment]);
    expect(statuses[0]?.in_reply_to_id).toBeNull();
    statuses.slice(1).forEach((p, k) => {
      expect(p.in_reply_to_id, String(p.text)).toBe(statuses[k]?.id);
    });
    const post = (
      await call<{
        deliveries: Array<{ external_id: string; thread: Array<{ stage: string; external_id: string }> }>;
      }>('GET', `/v1/posts/${thread.postId}`, t.key)
    ).body;
    expect(post.deliveries[0]?.thread.map((p) => [p.stage, p.external_id])).toEqual(
      statuses.slice(1, 5).map((p) => ['published', p.id]),
    );
  }, 300_000);
});

/**
 * The inbox reply of the test below, arranged inside the in-flight test above like the thread:
 * Mastodon takes the reply's status and never answers, so the worker is mid-reply at the crash.
 */
async function arrangeReply() {
  const t = await tenant(['mastodon'], `${ALL_SCOPES},inbox:read,inbox:write`);
  const channelId = t.channels.mastodon as string;
  const item = await seedItem(crash.dir, {
    orgId: t.orgId,
    channelId,
    platform: 'mastodon',
    text: `Crash? ${Date.now()}`,
  });
  const marker = `held reply ${Date.now()}`;
  await failPlatform('mastodon', {
    status: 200,
    pathPattern: '^/api/v1/statuses$',
    bodyIncludes: marker,
    holdAnswerMs: 600_000,
  });
  const res = await call<{ id: string }>('POST', `/v1/inbox/${item.id}/replies`, t.key, { body: marker });
  expect(res.status, res.text).toBe(202);
  await until(
    'the reply to reach the platform',
    async () => ((await statusesWith(marker)).length === 1 ? true : undefined),
    30_000,
  );
  return { orgId: t.orgId, itemId: item.id, replyId: res.body.id, marker };
}
let reply: Awaited<ReturnType<typeof arrangeReply>>;

describe('kill -9 while the platform holds its answer to an inbox reply', () => {
  it('finds the reply it made after the restart: one status on the platform, the reply sent with its id', async () => {
    // Arranged and crashed in the test above. After the lease runs out the message comes back,
    // the worker looks first and finds it.
    const done = await until(
      'the reply to be recorded',
      async () => {
        const r = await replyOf(crash.dir, reply.orgId, reply.itemId, reply.replyId);
        return r?.stage === 'sent' || r?.stage === 'failed' ? r : undefined;
      },
      240_000,
    );
    const statuses = await statusesWith(reply.marker);
    expect(done.stage, JSON.stringify(done.error)).toBe('sent');
    expect(statuses).toHaveLength(1);
    expect(done.external_id).toBe(statuses[0]?.id);
    expect(done.attempts).toBe(1);
    // Found by the lookup, not sent again (which the platform's Idempotency-Key would also absorb).
    expect(await postsAsked(reply.marker)).toBe(1);
  }, 300_000);
});

describe('kill -9 during the failure ladder’s wait', () => {
  it('resumes the ladder: the endpoint is warned once and disabled on time', async () => {
    // Arrange: 72 h of ladder in ≈ 26 s (time scale 0.0001); an endpoint that always answers 500.
    await crash.stack.kill();
    await boot(0.0001);
    const t = await tenant(['bluesky']);
    const rx = await webhookReceiver(500);
    const ep = (
      await call<{ id: string }>('POST', '/v1/webhook-endpoints', t.key, {
        url: rx.url,
        event_types: ['post.published'],
      })
    ).body.id;
    await call('POST', '/v1/posts', t.key, {
      variants: [{ channel_id: t.channels.bluesky, body: `ladder ${Date.now()}` }],
      publish_now: true,
    });
    const failingSince = await until(
      'the failure streak',
      async () => {
        const e = (
          await call<{ failure: { failing_since: string | null } }>('GET', '/v1/webhook-endpoints', t.key)
        ).body as unknown as {
          data: Array<{ id: string; failure: { failing_since: string | null } }>;
        };
        return e.data.find((x) => x.id === ep)?.failure.failing_since ?? undefined;
      },
      20_000,
    );
    const ladder = () =>
      JSON.parse(readFileSync(join(crash.dir, 'step-functions.json'), 'utf8')) as Array<{
        status: string;
        input: string;
      }>;
    await until(
      'the ladder execution',
      async () => (ladder().some((e) => e.status === 'RUNNING' && e.input.includes(ep)) ? true : undefined),
      10_000,
    );

    // Act: crash while it waits for the warning (24 h ≈ 8.6 s after failing_since).
    await crash.stack.kill();
    const emailsBefore = (crash.stack.output().match(/\[aws\] email to/g) ?? []).length;
    await boot(0.0001);

    // Assert
    const state = async () =>
      (
        await call<{ data: Array<{ id: string; state: string }> }>('GET', '/v1/webhook-endpoints', t.key)
      ).body.data.find((x) => x.id === ep)?.state as string;
    await until(
      'auto_disabled',
      async () => ((await state()) === 'auto_disabled' ? true : undefined),
      60_000,
    );
    expect(Date.now() - Date.parse(failingSince)).toBeGreaterThanOrEqual(72 * 3600 * 1000 * 0.0001 - 1_000);
    expect(emailsBefore).toBe(0);
    expect((crash.stack.output().match(/\[aws\] email to/g) ?? []).length).toBe(1);
    expect(
      ladder()
        .filter((e) => e.input.includes(ep))
        .map((e) => e.status),
    ).toEqual(['SUCCEEDED']);
  }, 180_000);
});

describe('what listens', () => {
  it('binds every socket of the stack to loopback, except DynamoDB Local (which has no host option)', () => {
    const pids = descendants(crash.stack.pid);
    const listening = pids.flatMap((pid) =>
      listeningSockets(pid).map((s) => ({ pid, ...s, exe: exeOf(pid) })),
    );
    expect(listening.length).toBeGreaterThanOrEqual(4);
    const exposed = listening.filter((s) => !s.loopback);
    expect(
      exposed.every((s) => s.exe.includes('java')),
      JSON.stringify(exposed),
    ).toBe(true);
  });

  it('serves no Herald table to a DynamoDB client without the data directory’s key', async () => {
    const info = JSON.parse(readFileSync(join(crash.dir, 'stack.json'), 'utf8')) as {
      dynamodbEndpoint: string;
      dynamodbCredentials: { accessKeyId: string; secretAccessKey: string };
    };
    const tables = async (credentials: { accessKeyId: string; secretAccessKey: string }) => {
      const client = new DynamoDBClient({
        endpoint: info.dynamodbEndpoint,
        region: 'us-east-1',
        credentials,
      });
      try {
        return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
      } finally {
        client.destroy();
      }
    };
    expect(new URL(info.dynamodbEndpoint).hostname).toBe('127.0.0.1');
    expect(await tables(info.dynamodbCredentials)).toContain('herald');
    expect(await tables({ accessKeyId: 'local', secretAccessKey: 'local' })).toEqual([]);
    expect(await tables({ accessKeyId: 'STRANGER0000000001', secretAccessKey: 'x' })).toEqual([]);
  });
});

// ---- /proc -------------------------------------------------------------------------------------

function descendants(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const out = [pid];
  for (let i = 0; i < out.length; i++)
    for (const [child, parent] of parents) if (parent === out[i]) out.push(child);
  return out;
}

const exeOf = (pid: number) => {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return '';
  }
};

/** Listening TCP sockets of a process, from its fds and /proc/net/tcp{,6}. */
function listeningSockets(pid: number): Array<{ address: string; port: number; loopback: boolean }> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m?.[1]) inodes.add(m[1]);
    } catch {
      // closed meanwhile
    }
  }
  const out: Array<{ address: string; port: number; loopback: boolean }> = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A' || !inodes.has(f[9] as string)) continue;
      const [hex = '', portHex = '0'] = (f[1] as string).split(':');
      const address = hex.length === 8 ? ipv4(hex) : ipv6(hex);
      out.push({
        address,
        port: Number.parseInt(portHex, 16),
        loopback: address === '127.0.0.1' || address === '::1' || address.startsWith('127.'),
      });
    }
  }
  return out;
}

const ipv4 = (hex: string) =>
  (hex.match(/../g) ?? [])
    .reverse()
    .map((b) => Number.parseInt(b, 16))
    .join('.');

function ipv6(hex: string): string {
  // Four little-endian 32-bit words.
  const words = (hex.match(/.{8}/g) ?? []).map((w) => (w.match(/../g) ?? []).reverse().join(''));
  const groups = words.join('').match(/.{4}/g) ?? [];
  const text = groups.map((g) => Number.parseInt(g, 16).toString(16)).join(':');
  if (text === '0:0:0:0:0:0:0:1') return '::1';
  if (text === '0:0:0:0:0:0:0:0') return '::';
  if (text.startsWith('0:0:0:0:0:ffff:')) return ipv4(words[3] ?? '');
  return text;
}
