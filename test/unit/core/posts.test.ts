import { describe, expect, it } from 'vitest';
import type { OrgSettings } from '#core/accounts';
import type { PostStatus } from '#core/constants';
import {
  changedSince,
  type DeliveryRecord,
  decideApprove,
  decideDelete,
  decidePublish,
  decideReject,
  decideReschedule,
  dueAt,
  type Mode,
  newPost,
  type PostRecord,
  pendingChannels,
  resolveMode,
  startPublishing,
} from '#core/posts';
import type { CreatePostInput } from '#core/requests';
import { apiErrorOf } from '../support/errors.ts';
import { fixedId, ORG_ID, post, variant } from '../support/fixtures.ts';

const NOW = new Date('2030-06-01T12:00:00.000Z');
const LATER = '2030-06-02T12:00:00.000Z';
const EARLIER = '2030-05-31T12:00:00.000Z';
const CH1 = fixedId('channel', 1);
const CH2 = fixedId('channel', 2);

const OFF: OrgSettings = { dangerous_ops: false, approval_required: false };
const DANGEROUS: OrgSettings = { dangerous_ops: true, approval_required: false };
const APPROVAL: OrgSettings = { dangerous_ops: true, approval_required: true };

const input = (overrides: Partial<CreatePostInput> = {}): CreatePostInput => ({
  variants: [
    { channel_id: CH1, body: 'one' },
    { channel_id: CH2, body: 'two' },
  ],
  ...overrides,
});

const delivery = (channel_id: string, stage: DeliveryRecord['stage'], round: number): DeliveryRecord => ({
  channel_id,
  stage,
  external_id: stage === 'published' ? `ext-${channel_id}` : null,
  url: null,
  error: stage === 'failed' ? 'boom' : null,
  error_category: stage === 'failed' ? 'platform_rejected' : null,
  attempts: 1,
  updated_at: EARLIER,
  round,
});

const twoChannelPost = (overrides: Partial<PostRecord> = {}) =>
  post({ variants: [variant(CH1, 1), variant(CH2, 2)], ...overrides });

describe('resolveMode', () => {
  it('asks for a mode with pointer "" (the whole body) when none is given', () => {
    // Act
    const result = resolveMode(input(), NOW);

    // Assert
    expect(result).toEqual({ errors: [expect.objectContaining({ pointer: '', code: 'mode_required' })] });
  });

  it('treats draft: false and publish_now: false as no mode', () => {
    expect(resolveMode(input({ draft: false, publish_now: false, scheduled_at: null }), NOW)).toEqual({
      errors: [expect.objectContaining({ code: 'mode_required' })],
    });
  });

  it('reports mode_conflict once per mode given, at each field', () => {
    // Act
    const all = resolveMode(input({ draft: true, scheduled_at: LATER, publish_now: true }), NOW);
    const two = resolveMode(input({ draft: true, publish_now: true }), NOW);

    // Assert
    expect(all).toEqual({
      errors: [
        expect.objectContaining({ pointer: '/draft', code: 'mode_conflict' }),
        expect.objectContaining({ pointer: '/scheduled_at', code: 'mode_conflict' }),
        expect.objectContaining({ pointer: '/publish_now', code: 'mode_conflict' }),
      ],
    });
    expect(two).toEqual({
      errors: [
        expect.objectContaining({ pointer: '/draft', code: 'mode_conflict' }),
        expect.objectContaining({ pointer: '/publish_now', code: 'mode_conflict' }),
      ],
    });
  });

  it.each<[Partial<CreatePostInput>, Mode]>([
    [{ draft: true }, 'draft'],
    [{ scheduled_at: LATER }, 'schedule'],
    [{ publish_now: true }, 'publish'],
  ])('resolves %o to %s', (mode, expected) => {
    expect(resolveMode(input(mode), NOW)).toEqual({ mode: expected });
  });

  it.each([EARLIER, NOW.toISOString()])('refuses scheduled_at %s as not_in_future', (at) => {
    expect(resolveMode(input({ scheduled_at: at }), NOW)).toEqual({
      errors: [expect.objectContaining({ pointer: '/scheduled_at', code: 'not_in_future' })],
    });
  });

  it('refuses a time more than 730 days ahead as too_far_in_future', () => {
    // Arrange
    const limit = new Date(NOW.getTime() + 730 * 86_400_000);
    const beyond = new Date(limit.getTime() + 1000).toISOString();

    // Act / Assert
    expect(resolveMode(input({ scheduled_at: limit.toISOString() }), NOW)).toEqual({ mode: 'schedule' });
    expect(resolveMode(input({ scheduled_at: beyond }), NOW)).toEqual({
      errors: [expect.objectContaining({ pointer: '/scheduled_at', code: 'too_far_in_future' })],
    });
  });

  it('allows empty variants only for drafts', () => {
    const empty = { variants: [] };
    expect(resolveMode({ ...empty, draft: true }, NOW)).toEqual({ mode: 'draft' });
    expect(resolveMode({ ...empty, scheduled_at: LATER }, NOW)).toEqual({
      errors: [expect.objectContaining({ pointer: '/variants', code: 'too_few_items' })],
    });
    expect(resolveMode({ ...empty, publish_now: true }, NOW)).toEqual({
      errors: [expect.objectContaining({ pointer: '/variants', code: 'too_few_items' })],
    });
  });
});

describe('newPost', () => {
  const build = (mode: Mode, settings: OrgSettings, extra: Partial<CreatePostInput> = {}) =>
    newPost({
      id: fixedId('post', 9),
      orgId: ORG_ID,
      input: input(extra),
      mode,
      settings,
      variantIds: [fixedId('variant', 1), fixedId('variant', 2)],
      now: NOW,
    });

  it('saves a draft with no deliveries and round 0', () => {
    const p = build('draft', OFF, { draft: true });
    expect(p).toMatchObject({ status: 'draft', round: 0, version: 1, deliveries: {}, scheduled_at: null });
    expect(p.variants.map((v) => [v.id, v.channel_id])).toEqual([
      [fixedId('variant', 1), CH1],
      [fixedId('variant', 2), CH2],
    ]);
  });

  it('schedules at the normalised UTC time', () => {
    const p = build('schedule', OFF, { scheduled_at: '2030-06-02T14:00:00+02:00' });
    expect(p).toMatchObject({
      status: 'scheduled',
      scheduled_at: '2030-06-02T12:00:00.000Z',
      deliveries: {},
    });
  });

  it('starts publishing round 1 with every channel queued', () => {
    const p = build('publish', DANGEROUS, { publish_now: true });
    expect(p.status).toBe('publishing');
    expect(p.round).toBe(1);
    expect(pendingChannels(p)).toEqual([CH1, CH2]);
  });

  it('refuses publish_now without the dangerous-operations toggle', () => {
    const err = apiErrorOf(() => build('publish', OFF, { publish_now: true }));
    expect(err).toMatchObject({ code: 'dangerous_ops_disabled', status: 403 });
  });

  it.each<Mode>(['schedule', 'publish'])(
    'holds a %s request for approval when approval is required',
    (mode) => {
      const p = build(mode, APPROVAL, mode === 'schedule' ? { scheduled_at: LATER } : { publish_now: true });
      expect(p).toMatchObject({ status: 'needs_approval', approval: { mode }, deliveries: {}, round: 0 });
    },
  );

  it('saves a draft as draft even when approval is required', () => {
    expect(build('draft', APPROVAL, { draft: true }).status).toBe('draft');
  });
});

describe('publishPost transitions', () => {
  it.each<PostStatus>(['draft', 'scheduled', 'failed'])('moves %s to publishing', (status) => {
    // Arrange
    const p = twoChannelPost({ status });

    // Act
    const decision = decidePublish(p, DANGEROUS, NOW);

    // Assert
    expect('change' in decision && decision.change.status).toBe('publishing');
  });

  it('accepts a publishing post as-is, with no change', () => {
    const p = twoChannelPost({ status: 'publishing', round: 1 });
    expect(decidePublish(p, DANGEROUS, NOW)).toEqual({ unchanged: p });
  });

  it.each<PostStatus>(['published', 'needs_approval'])('answers 409 for a %s post', (status) => {
    const err = apiErrorOf(() => decidePublish(post({ status }), DANGEROUS, NOW));
    expect(err).toMatchObject({ code: 'resource_conflict', status: 409 });
  });

  it('answers 409 for a draft without variants', () => {
    const err = apiErrorOf(() => decidePublish(post({ variants: [] }), DANGEROUS, NOW));
    expect(err.code).toBe('resource_conflict');
  });

  it('holds a draft for approval when approval is required', () => {
    const decision = decidePublish(post(), APPROVAL, NOW);
    expect(decision).toEqual({
      change: expect.objectContaining({ status: 'needs_approval', approval: { mode: 'publish' } }),
    });
  });

  it('republishes a failed post to the channels that did not publish only, in a new round', () => {
    // Arrange: round 1 published to CH1 and failed on CH2.
    const failed = twoChannelPost({
      status: 'failed',
      round: 1,
      deliveries: { [CH1]: delivery(CH1, 'published', 1), [CH2]: delivery(CH2, 'failed', 1) },
    });

    // Act
    const decision = decidePublish(failed, DANGEROUS, NOW);

    // Assert
    if (!('change' in decision)) throw new Error('expected a change');
    const next = decision.change;
    expect(next.round).toBe(2);
    expect(next.deliveries[CH1]).toEqual(failed.deliveries[CH1]);
    expect(next.deliveries[CH2]).toMatchObject({ stage: 'queued', round: 2, attempts: 0, error: null });
    expect(pendingChannels(next)).toEqual([CH2]);
  });
});

describe('pendingChannels', () => {
  it('lists the queued deliveries of the current round only', () => {
    const p = twoChannelPost({
      status: 'publishing',
      round: 2,
      deliveries: { [CH1]: delivery(CH1, 'queued', 1), [CH2]: delivery(CH2, 'queued', 2) },
    });
    expect(pendingChannels(p)).toEqual([CH2]);
  });

  it('skips deliveries that are already sending or published', () => {
    const p = twoChannelPost({
      status: 'publishing',
      round: 1,
      deliveries: { [CH1]: delivery(CH1, 'sending', 1), [CH2]: delivery(CH2, 'published', 1) },
    });
    expect(pendingChannels(p)).toEqual([]);
  });

  it('re-queues every unpublished channel when a publishing post starts a new round', () => {
    const first = startPublishing(twoChannelPost(), NOW);
    const second = startPublishing(first, NOW);
    expect([first.round, second.round]).toEqual([1, 2]);
    expect(pendingChannels(second)).toEqual([CH1, CH2]);
  });
});

describe('reschedulePost transitions', () => {
  it.each<PostStatus>(['draft', 'scheduled', 'failed'])('moves %s to scheduled at the new time', (status) => {
    // Act
    const next = decideReschedule(post({ status, scheduled_at: EARLIER }), LATER, OFF, NOW);

    // Assert
    expect(next).toMatchObject({ status: 'scheduled', scheduled_at: LATER, updated_at: NOW.toISOString() });
  });

  it.each<PostStatus>(['published', 'publishing', 'needs_approval'])(
    'answers 409 for a %s post',
    (status) => {
      const err = apiErrorOf(() => decideReschedule(post({ status }), LATER, OFF, NOW));
      expect(err).toMatchObject({ code: 'resource_conflict', status: 409 });
    },
  );

  it('answers 409 for a draft that has no variants yet', () => {
    const err = apiErrorOf(() => decideReschedule(post({ variants: [] }), LATER, OFF, NOW));
    expect(err.code).toBe('resource_conflict');
  });

  it('holds a draft for approval when approval is required, but not an already scheduled post', () => {
    expect(decideReschedule(post(), LATER, APPROVAL, NOW)).toMatchObject({
      status: 'needs_approval',
      approval: { mode: 'schedule' },
    });
    expect(decideReschedule(post({ status: 'scheduled' }), LATER, APPROVAL, NOW).status).toBe('scheduled');
  });
});

describe('deletePost transitions', () => {
  it.each<PostStatus>(['draft', 'scheduled', 'published', 'failed', 'needs_approval'])(
    'allows deleting a %s post with the toggle on',
    (status) => {
      expect(() => decideDelete(post({ status }), DANGEROUS)).not.toThrow();
    },
  );

  it('answers 409 for a publishing post', () => {
    const err = apiErrorOf(() => decideDelete(post({ status: 'publishing' }), DANGEROUS));
    expect(err).toMatchObject({ code: 'resource_conflict', status: 409 });
  });

  it('answers 403 dangerous_ops_disabled before looking at the status', () => {
    const err = apiErrorOf(() => decideDelete(post({ status: 'publishing' }), OFF));
    expect(err).toMatchObject({ code: 'dangerous_ops_disabled', status: 403 });
  });
});

describe('approval', () => {
  it('moves an approved schedule with a future time to scheduled', () => {
    const held = post({ status: 'needs_approval', scheduled_at: LATER, approval: { mode: 'schedule' } });
    expect(decideApprove(held, NOW)).toMatchObject({
      status: 'scheduled',
      scheduled_at: LATER,
      approval: null,
    });
  });

  it('publishes an approved schedule whose time has passed', () => {
    const held = post({ status: 'needs_approval', scheduled_at: EARLIER, approval: { mode: 'schedule' } });
    const next = decideApprove(held, NOW);
    expect(next).toMatchObject({ status: 'publishing', round: 1, approval: null });
    expect(pendingChannels(next)).toEqual([held.variants[0]?.channel_id]);
  });

  it('publishes an approved publish request', () => {
    const held = post({ status: 'needs_approval', approval: { mode: 'publish' } });
    expect(decideApprove(held, NOW)).toMatchObject({ status: 'publishing', scheduled_at: null });
  });

  it.each<PostStatus>(['draft', 'scheduled', 'publishing', 'published', 'failed'])(
    'answers 409 for a %s post',
    (status) => {
      expect(apiErrorOf(() => decideApprove(post({ status }), NOW)).code).toBe('resource_conflict');
    },
  );
});

describe('rejection', () => {
  it('sends a waiting post back to draft with no schedule, so nothing ever dispatches it', () => {
    const held = post({ status: 'needs_approval', scheduled_at: LATER, approval: { mode: 'schedule' } });
    const next = decideReject(held, NOW);
    expect(next).toMatchObject({ status: 'draft', scheduled_at: null, approval: null, counted_period: null });
    expect(dueAt(next)).toBeNull();
  });

  it.each<PostStatus>(['draft', 'scheduled', 'publishing', 'published', 'failed'])(
    'answers 409 for a %s post',
    (status) => {
      expect(apiErrorOf(() => decideReject(post({ status }), NOW)).code).toBe('resource_conflict');
    },
  );
});

describe('changedSince', () => {
  const now = (overrides: Partial<PostRecord>) => post(overrides);
  const decided = (outcome: 'approved' | 'rejected') => ({
    outcome,
    by: 'operator',
    email: null,
    at: NOW.toISOString(),
    reason: null,
  });

  it.each<[string, string | undefined, PostRecord | null, string]>([
    ['deleted', 'scheduled', null, 'This post was deleted meanwhile.'],
    [
      'approved',
      'needs_approval',
      now({ status: 'scheduled', decision: decided('approved') }),
      'This post was approved meanwhile.',
    ],
    [
      'rejected',
      'needs_approval',
      now({ status: 'draft', decision: decided('rejected') }),
      'This post was rejected meanwhile.',
    ],
    ['published', 'scheduled', now({ status: 'published' }), 'This post was published meanwhile.'],
    ['failed', 'publishing', now({ status: 'failed' }), 'This post failed meanwhile.'],
    ['changed in place', 'scheduled', now({ status: 'scheduled' }), 'This post was changed meanwhile.'],
  ])('says what happened to a post that was %s', (_what, shown, current, said) => {
    expect(changedSince(shown, current)).toBe(said);
  });
});
