import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { keys } from '#adapters/keys';
import { billingPeriod, PLANS } from '#core/plans';
import type { PostRecord } from '#core/posts';
import { approvePost, rejectPost } from '#usecases/approvals';
import { approvePost as cliApprove, rejectPost as cliReject } from '#usecases/cli/admin';
import { remove } from '#usecases/post-acts';
import { dispatch } from '../support/dispatch.ts';
import { fixedId, ORG_ID, OTHER_ORG_ID, org, orgItem, post, postItem } from '../support/fixtures.ts';
import {
  ADMIN,
  actErrorOf,
  holdPostWrites,
  itemsOf,
  MEMBER,
  NOW,
  OWNER,
  person,
  usePeopleTable,
} from '../support/people.ts';

// Approving and rejecting a post that waits for approval, from the console (a person, on the post
// as their page showed it) and the CLI (the operator): one version-checked write decides every
// race, the winner's write alone counts the post against posts_per_month, both decisions are kept
// on the post and audited.

const table = usePeopleTable();

const LATER = '2030-06-12T08:00:00.000Z';
const WAITING = post({
  id: fixedId('post', 7),
  status: 'needs_approval',
  scheduled_at: LATER,
  approval: { mode: 'schedule' },
  version: 3,
  created_by: { key_id: fixedId('key', 1), via: 'mcp' },
});
const shown = { version: 3, status: 'needs_approval' };

const stored = (id = WAITING.id) => table.get(keys.post(ORG_ID, id)) as unknown as PostRecord | undefined;
const postsCounted = (month = '2030-06') =>
  (table.get(keys.usage(ORG_ID, month))?.posts_per_month as number) ?? 0;
// Its own entries; a refused act's act_refused is tested with the audit log (settings-and-audit).
const audit = () => itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused');
/** The posts_per_month changes applied to the gate item, in order (+1 a count, -1 one given back). */
const countWrites = () =>
  table
    .callsOf('UpdateItem', (c) => c.applied && String(c.view.keys[0]?.sk).startsWith('USAGE#'))
    .map((c) => {
      const values = c.view.raw.ExpressionAttributeValues as Record<string, { N?: string }>;
      return Number((values[':one'] ?? values[':minus'])?.N);
    });

/** `s`: the page's version and status; null: no page (the CLI's way). */
const approve = (actor = person(ADMIN), s: typeof shown | null = shown) =>
  approvePost({ orgId: ORG_ID, actor, postId: WAITING.id, now: NOW, shown: s ?? undefined });
const reject = (reason = 'Off-brand tone', actor = person(OWNER), s: typeof shown | null = shown) =>
  rejectPost({ orgId: ORG_ID, actor, postId: WAITING.id, reason, now: NOW, shown: s ?? undefined });

describe('approvePost', () => {
  it('schedules the post as asked, counts it once, keeps who decided on it and audits it', async () => {
    table.seed(postItem(WAITING));

    const res = await approve();

    expect(res).toMatchObject({ id: WAITING.id, status: 'scheduled', scheduled_at: LATER });
    expect(res).not.toHaveProperty('decision');
    expect(res).not.toHaveProperty('created_by');
    expect(stored()).toMatchObject({
      status: 'scheduled',
      version: 4,
      counted_period: '2030-06',
      created_by: WAITING.created_by,
      decision: {
        outcome: 'approved',
        by: ADMIN.id,
        email: ADMIN.email,
        at: NOW.toISOString(),
        reason: null,
      },
    });
    expect(postsCounted()).toBe(1);
    expect(audit()).toEqual([
      expect.objectContaining({
        action: 'post_approved',
        target: WAITING.id,
        actor: { kind: 'person', user_id: ADMIN.id, email: ADMIN.email },
        detail: { status: 'scheduled', scheduled_at: LATER },
      }),
    ]);
  });

  it('publishes at once a post whose asked time passed while it waited, counted once', async () => {
    table.seed(postItem({ ...WAITING, scheduled_at: '2030-06-10T09:00:00.000Z' }));

    const res = await approve();

    expect(res.status).toBe('publishing');
    expect(stored()?.deliveries[WAITING.variants[0]?.channel_id as string]).toMatchObject({
      stage: 'queued',
    });
    expect(postsCounted()).toBe(1);
  });

  it('refuses a member, changing nothing', async () => {
    table.seed(postItem(WAITING));
    expect((await actErrorOf(approve(person(MEMBER)))).kind).toBe('forbidden');
    expect(stored()).toMatchObject({ status: 'needs_approval', version: 3 });
    expect(postsCounted()).toBe(0);
    expect(audit()).toEqual([]);
  });

  it("answers another organization's post as not found, from a page (a version shown) or not", async () => {
    table.seed(postItem({ ...WAITING, org_id: OTHER_ORG_ID }));
    for (const s of [null, shown]) {
      expect((await actErrorOf(approve(person(ADMIN), s))).kind).toBe('not_found');
      expect((await actErrorOf(reject('No', person(OWNER), s))).kind).toBe('not_found');
    }
    expect(table.get(keys.post(OTHER_ORG_ID, WAITING.id))).toMatchObject({ status: 'needs_approval' });
  });

  it('refuses a page that showed an older version, saying what happened', async () => {
    table.seed(postItem({ ...WAITING, version: 4 }));
    const err = await actErrorOf(approve(person(ADMIN), { version: 3, status: 'needs_approval' }));
    expect(err).toMatchObject({
      kind: 'conflict',
      message: 'This post was changed meanwhile. Nothing was done.',
    });
    expect(postsCounted()).toBe(0);
  });

  it('answers a conflict when posts_per_month is spent, nothing written', async () => {
    table.seed(postItem(WAITING), {
      ...keys.usage(ORG_ID, '2030-06'),
      posts_per_month: PLANS.team.limits.posts_per_month,
    });
    const err = await actErrorOf(approve());
    expect(err.kind).toBe('conflict');
    expect(err.message).toMatch(/posts_per_month for 2030-06/);
    expect(stored()).toMatchObject({ status: 'needs_approval' });
  });
});

describe('rejectPost', () => {
  it('sends the post back to draft with the reason, never counted, and audits it', async () => {
    table.seed(postItem(WAITING));

    const res = await reject('  Off-brand tone  ');

    expect(res).toMatchObject({ status: 'draft', scheduled_at: null });
    expect(stored()).toMatchObject({
      status: 'draft',
      approval: null,
      decision: { outcome: 'rejected', by: OWNER.id, email: OWNER.email, reason: 'Off-brand tone' },
    });
    expect(postsCounted()).toBe(0);
    expect(audit()).toEqual([
      expect.objectContaining({
        action: 'post_rejected',
        detail: { reason: 'Off-brand tone', asked: 'schedule', scheduled_at: LATER },
      }),
    ]);
    // Never due: a draft is in no schedule.
    expect(table.all('WORK#').length + table.all('DUE#').length).toBe(0);
  });

  it('requires a reason of at most 500 characters, after the role check', async () => {
    table.seed(postItem(WAITING));
    expect(await actErrorOf(reject('   '))).toMatchObject({
      kind: 'invalid',
      message: 'Say why the post is rejected.',
    });
    expect((await actErrorOf(reject('x'.repeat(501)))).kind).toBe('invalid');
    expect((await actErrorOf(reject('', person(MEMBER)))).kind).toBe('forbidden');
    expect(stored()).toMatchObject({ status: 'needs_approval', version: 3 });
  });

  it('sends it to approval again when it is scheduled again with approval required', async () => {
    const { reschedule } = await import('#usecases/post-acts');
    table.seed(postItem(WAITING), orgItem({ ...org({ approval_required: true }), owner_count: 1 }));
    await reject();
    await reschedule({
      orgId: ORG_ID,
      actor: person(ADMIN),
      postId: WAITING.id,
      scheduledAt: LATER,
      shown: { version: 4, status: 'draft' },
      now: NOW,
    });
    expect(stored()).toMatchObject({ status: 'needs_approval', approval: { mode: 'schedule' } });
    expect(postsCounted()).toBe(0);
  });
});

describe('races: exactly one decision wins', () => {
  it('of two people approving at once, one wins; the other gets a conflict; counted once', async () => {
    table.seed(postItem(WAITING));
    holdPostWrites(2);

    const results = await Promise.allSettled([approve(person(ADMIN)), approve(person(OWNER))]);

    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: { kind: 'conflict', message: 'This post was approved meanwhile. Nothing was done.' },
    });
    expect(postsCounted()).toBe(1);
    // Each counted before its write; the loser's count, certainly unused, was given back.
    expect(countWrites()).toEqual([1, 1, -1]);
    expect(stored()?.version).toBe(4);
    expect(audit().map((e) => e.action)).toEqual(['post_approved']);
  });

  it('of two operators approving at once (no page version), one wins and the other is told its status', async () => {
    table.seed(postItem(WAITING));
    holdPostWrites(2);
    const results = await Promise.allSettled([
      cliApprove({ orgId: ORG_ID, postId: WAITING.id }),
      cliApprove({ orgId: ORG_ID, postId: WAITING.id }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: { kind: 'conflict', message: 'The post is scheduled, not waiting for approval.' },
    });
    // The CLI acts now, on the real clock.
    expect(postsCounted(billingPeriod(Date.now()).id)).toBe(1);
  });

  it('approve against reject: one wins, the post is either scheduled and counted or a draft and not', async () => {
    table.seed(postItem(WAITING));
    holdPostWrites(2);

    const [approved, rejected] = await Promise.allSettled([approve(), reject()]);

    expect([approved.status, rejected.status].sort()).toEqual(['fulfilled', 'rejected']);
    const now = stored();
    if (approved.status === 'fulfilled') {
      expect(now).toMatchObject({ status: 'scheduled', decision: { outcome: 'approved' } });
      expect(rejected).toMatchObject({
        reason: { message: 'This post was approved meanwhile. Nothing was done.' },
      });
      expect(postsCounted()).toBe(1);
    } else {
      expect(now).toMatchObject({ status: 'draft', decision: { outcome: 'rejected' } });
      expect(approved).toMatchObject({
        reason: { message: 'This post was rejected meanwhile. Nothing was done.' },
      });
      expect(postsCounted()).toBe(0);
    }
    expect(audit()).toHaveLength(1);
  });

  it('approve against delete: one wins; a deleted post is never approved nor counted', async () => {
    table.seed(postItem(WAITING), orgItem({ ...org({ dangerous_ops: true }), owner_count: 1 }));
    holdPostWrites(2);

    const [approved, deleted] = await Promise.allSettled([
      approve(),
      remove({ orgId: ORG_ID, actor: person(OWNER), postId: WAITING.id, shown, now: NOW }),
    ]);

    expect([approved.status, deleted.status].sort()).toEqual(['fulfilled', 'rejected']);
    if (deleted.status === 'fulfilled') {
      expect(stored()).toBeUndefined();
      expect(approved).toMatchObject({
        reason: {
          kind: 'not_found',
          message: expect.stringMatching(/deleted meanwhile, or never was here. Nothing was done/),
        },
      });
      expect(postsCounted()).toBe(0);
      expect(countWrites()).toEqual([1, -1]);
    } else {
      expect(stored()).toMatchObject({ status: 'scheduled' });
      expect(deleted).toMatchObject({
        reason: { kind: 'conflict', message: 'This post was approved meanwhile. Nothing was done.' },
      });
      expect(postsCounted()).toBe(1);
    }
  });

  it('approve against its own schedule: a dispatch before the approval changes nothing; the approved post starts at its time, counted once', async () => {
    const due = '2030-06-10T09:31:00.000Z';
    table.seed(postItem({ ...WAITING, scheduled_at: due }));
    const msg = { org_id: ORG_ID, post_id: WAITING.id, scheduled_at: due };
    const at = () => new Date('2030-06-10T09:31:00.500Z');

    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageBatchCommand).resolves({});
    try {
      const early = await dispatch(msg, at);
      await approve();
      const onTime = await dispatch(msg, at);

      // The dispatch on time sends the delivery messages (the first claim starts the post).
      expect([early, onTime]).toEqual(['stale', 'started']);
      expect(sqs.commandCalls(SendMessageBatchCommand)).toHaveLength(1);
      expect(stored()).toMatchObject({ status: 'scheduled', counted_period: '2030-06' });
      expect(postsCounted()).toBe(1);
    } finally {
      sqs.restore();
    }
  });

  it('the operator rejects too (herald post reject), recorded as the operator', async () => {
    table.seed(postItem(WAITING));
    await cliReject({ orgId: ORG_ID, postId: WAITING.id, reason: 'Duplicate' });
    expect(stored()).toMatchObject({
      status: 'draft',
      decision: { outcome: 'rejected', by: 'operator', email: null },
    });
    expect(audit()[0]).toMatchObject({ actor: { kind: 'operator', user_id: null }, action: 'post_rejected' });
  });
});

describe('hidden characters in a reason', () => {
  it('refuses a rejection reason with a bidi override, changing nothing', async () => {
    table.seed(postItem(WAITING));
    const e = await actErrorOf(reject('Fine \u202Eevil'));
    expect(e).toMatchObject({ kind: 'invalid', message: expect.stringMatching(/invisible/) });
    expect(stored()).toMatchObject({ status: 'needs_approval' });
  });
});
