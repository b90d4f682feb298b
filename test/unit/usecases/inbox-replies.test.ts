import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import {
  BatchGetCommand,
  type BatchGetCommandInput,
  DynamoDBDocumentClient,
  GetCommand,
  type GetCommandInput,
  PutCommand,
  type PutCommandInput,
  UpdateCommand,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import { clearPacingCache } from '#adapters/pacing';
import { type InboxConnector, PlatformError } from '#adapters/platforms/types';
import type { ChannelRecord } from '#core/accounts';
import { MAX_ATTEMPTS } from '#core/delivery';
import { ApiError } from '#core/errors';
import type { InboxItemRecord, InboxReply } from '#core/inbox';
import type { InboxReplyMessage } from '#core/messages';
import { ActError } from '#core/people';
import { LEASE_SECONDS } from '#core/timing';
import { replyDeadLetter } from '#usecases/inbox-reply-dead-letters';
import { ReplyBusyError, sendReply } from '#usecases/inbox-reply-worker';
import { replyToInboxItem, replyToInboxItemByKey } from '#usecases/reply-to-inbox-item';
import { repliesToSend } from '#usecases/support/relay-inbox-replies';
import { update as applyUpdate, condition } from '../support/expressions.ts';
import {
  CREATED_AT,
  channel,
  channelItem,
  fixedId,
  type Item,
  inboxItemItem,
  inboxRecord,
  ORG_ID,
  OTHER_ORG_ID,
  org,
  orgItem,
} from '../support/fixtures.ts';

// Answering an inbox item: replyToInboxItem's checks and its one conditional append, the relay's
// message, and the inbox reply worker — exactly once under duplicates, races and crashes — against
// an in-memory table (DynamoDB's conditions and updates, the shared evaluator) behind the mocked
// document client, a connector the test controls and a recorded queue.

const connector = vi.hoisted(() => ({
  reply: vi.fn<InboxConnector['reply']>(),
  findReply: vi.fn<InboxConnector['findReply']>(),
  poll: vi.fn<InboxConnector['poll']>(),
}));
vi.mock('#adapters/platforms/index', () => ({
  connectorFor: async () => ({ publish: vi.fn(), reconcile: vi.fn(), inbox: connector }),
}));
const queue = vi.hoisted(() => ({ sent: [] as Array<{ queue: string; body: unknown; delay: number }> }));
vi.mock('#adapters/queues', () => ({
  sendDelayed: async (q: string, body: unknown, delay: number) => {
    queue.sent.push({ queue: q, body, delay });
  },
}));
// The channel as stored, with its credentials (their sealing is not this test's business).
const creds = vi.hoisted(() => ({ read: null as null | (() => unknown) }));
vi.mock('#adapters/channel-credentials', () => ({
  credentialRedactor: () => ({
    remember: (c: unknown) => c,
    redact: (t: string) => t.replaceAll('secret-token', '***'),
  }),
  getChannelWithCredentials: async () => ({
    channel: creds.read?.() ?? null,
    credentials: { access_token: 'secret-token' },
    version: 1,
  }),
}));

const ddb = mockClient(DynamoDBDocumentClient);

const NOW = new Date('2030-06-10T09:30:00.000Z');
const later = (s: number) => new Date(NOW.getTime() + s * 1000);
const CH = { ...channel(1, 'mastodon'), account_id: '1', connection_id: 'con_1' } as ChannelRecord;
const ITEM = inboxRecord(1, { channel_id: CH.id, platform: 'mastodon', platform_id: '109', url: null });
const SENT = { externalId: '110', url: 'https://mastodon.example/@acme/110' };
const lambda = { getRemainingTimeInMillis: () => 10_000 } as unknown as Context;

// ---- the in-memory table -------------------------------------------------------------------------

const idOf = (k: Record<string, unknown> | undefined) => `${String(k?.pk)}\u0000${String(k?.sk)}`;
const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
let items: Map<string, Item>;
/** Runs before the next UpdateItem is applied (a crash or a concurrent writer), once each. */
let beforeUpdate: Array<(input: UpdateCommandInput) => void>;

function serve(seed: Item[]) {
  items = new Map(seed.map((i) => [idOf(i), copy(i)]));
  beforeUpdate = [];
  ddb.reset();
  ddb.on(GetCommand).callsFake((input: GetCommandInput) => {
    const found = items.get(idOf(input.Key));
    return { Item: found ? copy(found) : undefined };
  });
  ddb.on(BatchGetCommand).callsFake((input: BatchGetCommandInput) => {
    const responses: Record<string, Item[]> = {};
    for (const [table, req] of Object.entries(input.RequestItems ?? {}))
      responses[table] = (req.Keys ?? []).flatMap((k) => {
        const found = items.get(idOf(k));
        return found ? [copy(found)] : [];
      });
    return { Responses: responses, UnprocessedKeys: {} };
  });
  // Audit entries only: stored, never conditioned.
  ddb.on(PutCommand).callsFake((input: PutCommandInput) => {
    items.set(idOf(input.Item), copy(input.Item ?? {}));
    return {};
  });
  ddb.on(UpdateCommand).callsFake((input: UpdateCommandInput) => {
    beforeUpdate.shift()?.(input);
    const current = items.get(idOf(input.Key));
    const holds =
      !input.ConditionExpression ||
      condition(
        input.ConditionExpression,
        input.ExpressionAttributeNames,
        input.ExpressionAttributeValues,
      )(current ?? {});
    if (!holds)
      throw Object.assign(
        new ConditionalCheckFailedException({ message: 'The conditional request failed', $metadata: {} }),
        input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' && current ? { Item: copy(current) } : {},
      );
    const { next } = applyUpdate(
      copy({ ...current, ...input.Key }),
      input.UpdateExpression ?? '',
      input.ExpressionAttributeNames,
      input.ExpressionAttributeValues,
    );
    items.set(idOf(input.Key), copy(next));
    return input.ReturnValues === 'ALL_NEW' ? { Attributes: copy(next) } : {};
  });
}

const stored = (id = ITEM.id) => items.get(idOf(keys.inboxItem(ORG_ID, id))) as Item & InboxItemRecord;
const storedChannel = () => items.get(idOf(keys.channel(ORG_ID, CH.id))) as Item & ChannelRecord;
const reply = () => stored().replies[0] as InboxReply;

function world(
  opts: { dangerous?: boolean; item?: Partial<InboxItemRecord>; channel?: Partial<ChannelRecord> } = {},
) {
  serve([
    orgItem(org({ dangerous_ops: opts.dangerous ?? true })),
    orgItem(org({ dangerous_ops: true }, OTHER_ORG_ID)),
    channelItem({ ...CH, ...opts.channel }),
    inboxItemItem({ ...ITEM, ...opts.item }),
  ]);
  creds.read = () => copy(storedChannel());
}

beforeEach(() => {
  connector.reply.mockReset();
  connector.findReply.mockReset();
  queue.sent.length = 0;
  clearPacingCache();
  world();
});

const byKey = (body: string, itemId = ITEM.id, orgId = ORG_ID) =>
  replyToInboxItemByKey({
    orgId,
    keyId: fixedId('key', 1),
    itemId,
    body,
    idempotencyKey: undefined,
    now: NOW,
    admitted: async () => undefined,
    lambda,
  }).then((r) => ({ status: r.status, reply: JSON.parse(r.json) as InboxReply }));

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

/** The item with one reply queued by the API, as the relay's message names it. */
async function queued(): Promise<InboxReplyMessage> {
  const { reply: r } = await byKey('Thanks for watching!');
  return { org_id: ORG_ID, item_id: ITEM.id, reply_id: r.id };
}

// ---- replyToInboxItem ----------------------------------------------------------------------------

describe('replyToInboxItem', () => {
  it('appends the reply queued at the item’s version and answers 202 with it', async () => {
    const { status, reply: r } = await byKey('Thanks for watching!');
    expect(status).toBe(202);
    expect(r).toEqual({
      id: expect.stringMatching(/^rpl_/),
      text: 'Thanks for watching!',
      stage: 'queued',
      external_id: null,
      url: null,
      error: null,
      created_at: NOW.toISOString(),
    });
    expect(stored().version).toBe((ITEM.version ?? 0) + 1);
    expect(stored().replies).toHaveLength(1);
    expect(reply()).toMatchObject({
      id: r.id,
      stage: 'queued',
      requested_by: fixedId('key', 1),
      attempts: 0,
    });
  });

  it('counts an item the poller wrote without a version as version 1: the append makes it 2', async () => {
    const { version: _v, ...unversioned } = ITEM;
    serve([orgItem(org({ dangerous_ops: true })), channelItem(CH), inboxItemItem(unversioned)]);
    await byKey('Hi');
    expect(stored().version).toBe(2);
    expect(stored().replies).toHaveLength(1);
  });

  it('refuses with 403 while Dangerous AI operations is off, before looking for the item', async () => {
    world({ dangerous: false });
    const err = await refusal(byKey('Hi', fixedId('inbox', 99)));
    expect(err.code).toBe('dangerous_ops_disabled');
    expect(stored().replies).toEqual([]);
  });

  it('answers 404 for another organization’s item, a missing one and a malformed id, writing nothing', async () => {
    items.set(idOf(keys.inboxItem(OTHER_ORG_ID, fixedId('inbox', 2))), {
      ...inboxItemItem(inboxRecord(2, { org_id: OTHER_ORG_ID })),
    });
    for (const [orgId, id] of [
      [ORG_ID, fixedId('inbox', 2)],
      [ORG_ID, fixedId('inbox', 3)],
      [ORG_ID, 'inb_nope'],
    ] as const) {
      const err = await refusal(byKey('Hi', id, orgId));
      expect(err.code).toBe('resource_not_found');
    }
    expect(ddb.commandCalls(UpdateCommand)).toHaveLength(0);
  });

  it('refuses a kind the platform cannot answer with 409 reply_unsupported (TikTok; a YouTube message)', async () => {
    for (const item of [
      { platform: 'tiktok', kind: 'comment' },
      { platform: 'youtube', kind: 'message' },
    ] as const) {
      world({ item });
      const err = await refusal(byKey('Hi'));
      expect(err.code).toBe('reply_unsupported');
      expect(err.status).toBe(409);
      expect(stored().replies).toEqual([]);
    }
  });

  it('refuses an empty text and one over the platform’s limit with 400 at /body', async () => {
    const empty = await refusal(byKey('   '));
    expect(empty.code).toBe('validation_failed');
    expect(empty.errors).toEqual([expect.objectContaining({ pointer: '/body', code: 'too_short' })]);
    const long = await refusal(byKey('a'.repeat(501)));
    expect(long.errors).toEqual([expect.objectContaining({ pointer: '/body', code: 'text_too_long' })]);
    // Mastodon's 500 holds the author's mention Herald puts first ("@fan.example ", 13 as counted).
    expect((await refusal(byKey('a'.repeat(488)))).errors?.[0]?.code).toBe('text_too_long');
    expect((await byKey('a'.repeat(487))).status).toBe(202);
    // A direct message has its own limit (Bluesky's 1,000 against a post's 300).
    world({ item: { platform: 'bluesky', kind: 'message' }, channel: { platform: 'bluesky' } });
    expect((await byKey('b'.repeat(1000))).status).toBe(202);
    expect((await refusal(byKey('b'.repeat(1001)))).errors?.[0]?.pointer).toBe('/body');
  });

  it('refuses a disconnected channel, or one that needs reconnecting, with 409', async () => {
    for (const status of ['disconnected', 'reauth_required'] as const) {
      world({ channel: { status } });
      const err = await refusal(byKey('Hi'));
      expect(err.code).toBe('resource_conflict');
      expect(stored().replies).toEqual([]);
    }
  });

  it('refuses a 51st reply with 409: an item keeps at most 50', async () => {
    const full = Array.from({ length: 50 }, (_, i) => ({
      ...reply0(),
      id: `rpl_${String(i).padStart(26, '0')}`,
      stage: 'sent' as const,
    }));
    world({ item: { replies: full } });
    expect((await refusal(byKey('Hi'))).code).toBe('resource_conflict');
  });

  it('adds the reply after a concurrent write moved the item on (read again, appended once)', async () => {
    beforeUpdate.push(() => {
      const i = stored();
      items.set(idOf(i), { ...i, status: 'read', version: (i.version ?? 0) + 1 });
    });
    const { reply: r } = await byKey('Hi');
    expect(stored().replies.map((x) => x.id)).toEqual([r.id]);
    expect(stored().status).toBe('read');
  });

  it('lets owners and admins reply from the console without the toggle, audited; members are refused', async () => {
    world({ dangerous: false });
    const admin = fixedId('user', 1);
    const member = fixedId('user', 2);
    for (const [id, role] of [
      [admin, 'admin'],
      [member, 'member'],
    ] as const)
      items.set(idOf(keys.user(ORG_ID, id)), {
        ...keys.user(ORG_ID, id),
        entity: 'user',
        id,
        org_id: ORG_ID,
        email: `${role}@acme.example`,
        role,
        created_at: CREATED_AT,
      });
    const r = await replyToInboxItem({
      orgId: ORG_ID,
      itemId: ITEM.id,
      body: 'Thanks!',
      actor: { kind: 'person', userId: admin },
      now: NOW,
    });
    expect(r.stage).toBe('queued');
    expect(reply().requested_by).toBe(admin);
    await expect(
      replyToInboxItem({
        orgId: ORG_ID,
        itemId: ITEM.id,
        body: 'x',
        actor: { kind: 'person', userId: member },
      }),
    ).rejects.toBeInstanceOf(ActError);
  });
});

const reply0 = (): InboxReply => ({
  id: fixedId('reply', 1),
  text: 'Thanks!',
  stage: 'queued',
  external_id: null,
  url: null,
  error: null,
  created_at: CREATED_AT,
  attempts: 0,
  claim: null,
});

describe('the relay', () => {
  it('sends one message for a reply the item gained queued, none for a retry or another change', () => {
    const before = { ...ITEM, replies: [reply0()] };
    const added = { ...reply0(), id: fixedId('reply', 2) };
    expect(repliesToSend(before, { ...before, replies: [reply0(), added] })).toEqual([
      { org_id: ORG_ID, item_id: ITEM.id, reply_id: added.id },
    ]);
    // The worker's retry (sending → queued) is its own message's business.
    const sending = { ...before, replies: [{ ...reply0(), stage: 'sending' as const }] };
    expect(repliesToSend(sending, before)).toEqual([]);
    expect(repliesToSend(before, { ...before, status: 'read' })).toEqual([]);
    expect(repliesToSend(undefined, undefined)).toEqual([]);
  });
});

// ---- the worker ----------------------------------------------------------------------------------

describe('the inbox reply worker', () => {
  it('sends the reply once and records it sent with the platform’s id', async () => {
    const msg = await queued();
    connector.reply.mockResolvedValue(SENT);
    expect(await sendReply(msg, () => NOW)).toBe('sent');
    expect(connector.reply).toHaveBeenCalledTimes(1);
    const ctx = connector.reply.mock.calls[0]?.[0];
    expect(ctx).toMatchObject({
      text: 'Thanks for watching!',
      idempotencyKey: msg.reply_id,
      item: { kind: 'comment', platformId: '109' },
      channel: { id: CH.id, platform: 'mastodon', accountId: '1' },
    });
    expect(reply()).toMatchObject({
      stage: 'sent',
      external_id: '110',
      url: SENT.url,
      error: null,
      claim: null,
    });
  });

  it('sends once under a duplicate message', async () => {
    const msg = await queued();
    connector.reply.mockResolvedValue(SENT);
    expect(await sendReply(msg, () => NOW)).toBe('sent');
    expect(await sendReply(msg, () => later(1))).toBe('skipped');
    expect(connector.reply).toHaveBeenCalledTimes(1);
  });

  it('sends once when two workers race for the same reply', async () => {
    const msg = await queued();
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => {
      release = r;
    });
    connector.reply.mockImplementation(async () => {
      await held;
      return SENT;
    });
    const first = sendReply(msg, () => NOW);
    // The second finds the reply claimed under a live lease: busy, back to the queue.
    await vi.waitFor(() => expect(connector.reply).toHaveBeenCalledTimes(1));
    await expect(sendReply(msg, () => later(1))).rejects.toBeInstanceOf(ReplyBusyError);
    release();
    expect(await first).toBe('sent');
    expect(await sendReply(msg, () => later(2))).toBe('skipped');
    expect(connector.reply).toHaveBeenCalledTimes(1);
  });

  it('sends once when both read the reply queued: the second claim’s conditional write loses', async () => {
    const msg = await queued();
    connector.reply.mockResolvedValue(SENT);
    // Both claims are decided on the queued reply before either write lands.
    const a = sendReply(msg, () => NOW);
    const b = sendReply(msg, () => NOW);
    const outcomes = await Promise.allSettled([a, b]);
    expect(connector.reply).toHaveBeenCalledTimes(1);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'busy')).sort()).toEqual([
      'busy',
      'sent',
    ]);
  });

  it('after a crash between the platform’s answer and the record, finds the reply: no second send', async () => {
    const msg = await queued();
    connector.reply.mockResolvedValue(SENT);
    // The claim lands; the worker dies as it records (the write never happens).
    beforeUpdate.push(() => undefined);
    beforeUpdate.push(() => {
      throw new Error('worker killed');
    });
    await expect(sendReply(msg, () => NOW)).rejects.toThrow('worker killed');
    expect(reply()).toMatchObject({ stage: 'sending', attempts: 1 });
    const startedAt = reply().claim?.started_at;
    // SQS brings the message back after the lease ran out: the outcome is unknown, so look first.
    connector.findReply.mockResolvedValue(SENT);
    expect(await sendReply(msg, () => later(LEASE_SECONDS + 1))).toBe('sent');
    expect(connector.reply).toHaveBeenCalledTimes(1);
    expect(connector.findReply).toHaveBeenCalledTimes(1);
    expect(connector.findReply.mock.calls[0]?.[0].attemptStartedAt.toISOString()).toBe(startedAt);
    expect(reply()).toMatchObject({ stage: 'sent', external_id: '110', attempts: 1, unresolved_since: null });
  });

  it('after a crash before the platform call, looks, finds nothing and sends once', async () => {
    const msg = await queued();
    const abandoned: InboxReply = {
      ...reply(),
      stage: 'sending',
      attempts: 1,
      claim: {
        token: 'dead-worker',
        until: later(LEASE_SECONDS).toISOString(),
        started_at: NOW.toISOString(),
      },
    };
    items.set(idOf(stored()), { ...stored(), replies: [abandoned], version: (stored().version ?? 0) + 1 });
    connector.findReply.mockResolvedValue(null);
    connector.reply.mockResolvedValue(SENT);
    // While the dead worker's lease runs, the message goes back.
    await expect(sendReply(msg, () => later(10))).rejects.toBeInstanceOf(ReplyBusyError);
    expect(await sendReply(msg, () => later(LEASE_SECONDS + 1))).toBe('sent');
    expect(connector.findReply).toHaveBeenCalledTimes(1);
    expect(connector.reply).toHaveBeenCalledTimes(1);
    expect(reply()).toMatchObject({ stage: 'sent', attempts: 1 });
  });

  it('retries a 429 after the platform’s hint, then sends', async () => {
    const msg = await queued();
    connector.reply.mockRejectedValueOnce(
      new PlatformError('rate_limited', 'Too many requests', { retryAfterSeconds: 30, status: 429 }),
    );
    expect(await sendReply(msg, () => NOW)).toBe('retrying');
    expect(reply()).toMatchObject({ stage: 'queued', attempts: 1, next_attempt_at: later(30).toISOString() });
    expect(queue.sent).toEqual([{ queue: 'inboxReplies', body: { ...msg, attempt: 1 }, delay: 30 }]);
    // The channel is paused until then (pacing): an early copy is not due yet, and sends nothing.
    expect(storedChannel().pace_until).toBe(later(30).toISOString());
    expect(await sendReply(msg, () => later(5))).toBe('skipped');
    connector.reply.mockResolvedValueOnce(SENT);
    expect(await sendReply({ ...msg, attempt: 1 }, () => later(30))).toBe('sent');
    expect(connector.reply).toHaveBeenCalledTimes(2);
    expect(reply()).toMatchObject({ stage: 'sent', attempts: 2 });
  });

  it('fails for good after the delivery’s attempts, with the error in its category', async () => {
    const msg = await queued();
    connector.reply.mockRejectedValue(new PlatformError('system', 'upstream 503', { status: 503 }));
    let t = 0;
    for (let i = 1; i <= MAX_ATTEMPTS; i++) {
      const due = reply().next_attempt_at;
      if (due) t = (Date.parse(due) - NOW.getTime()) / 1000;
      // A 5xx may have been carried out: every attempt after it looks first (nothing found).
      connector.findReply.mockResolvedValue(null);
      expect(await sendReply(msg, () => later(t))).toBe(i < MAX_ATTEMPTS ? 'retrying' : 'failed');
    }
    expect(connector.reply).toHaveBeenCalledTimes(MAX_ATTEMPTS);
    expect(reply()).toMatchObject({ stage: 'failed', error: { code: 'system' } });
  });

  it('a refused grant: the channel goes reauth_required and the reply failed (auth_expired), tokens redacted', async () => {
    const msg = await queued();
    connector.reply.mockRejectedValue(
      new PlatformError('auth_expired', 'The access token secret-token is invalid', { status: 401 }),
    );
    expect(await sendReply(msg, () => NOW)).toBe('failed');
    expect(reply()).toMatchObject({
      stage: 'failed',
      error: { code: 'auth_expired', message: expect.not.stringContaining('secret-token') },
    });
    expect(storedChannel().status).toBe('reauth_required');
    expect(connector.reply).toHaveBeenCalledTimes(1);
  });

  it('waits out a channel’s pause without spending an attempt or calling the platform', async () => {
    world({ channel: { pace_until: later(600).toISOString(), pace_reason: 'mastodon rate limit' } });
    const msg = await queued();
    expect(await sendReply(msg, () => NOW)).toBe('retrying');
    expect(connector.reply).not.toHaveBeenCalled();
    expect(reply()).toMatchObject({
      stage: 'queued',
      attempts: 0,
      next_attempt_at: later(600).toISOString(),
    });
    expect(queue.sent[0]).toMatchObject({ queue: 'inboxReplies', delay: 600 });
  });

  it('fails a reply whose channel was disconnected since, without calling the platform', async () => {
    const msg = await queued();
    items.set(idOf(storedChannel()), { ...storedChannel(), status: 'disconnected' });
    expect(await sendReply(msg, () => NOW)).toBe('failed');
    expect(connector.reply).not.toHaveBeenCalled();
    expect(reply()).toMatchObject({ stage: 'failed', error: { code: 'auth_expired' } });
  });

  it('marks a dead-lettered reply failed (system), and leaves a sent one alone', async () => {
    const msg = await queued();
    expect(await replyDeadLetter(msg, NOW)).toBe(true);
    expect(reply()).toMatchObject({ stage: 'failed', error: { code: 'system' } });
    expect(await replyDeadLetter(msg, NOW)).toBe(false);
    expect(await sendReply(msg, () => NOW)).toBe('skipped');
    expect(connector.reply).not.toHaveBeenCalled();
  });
});
