import { describe, expect, it, vi } from 'vitest';
import {
  channelStatusChanged,
  deliveryFailed,
  deliveryPublished,
  deliveryRetrying,
  metricMembers,
  platformAppRefused,
  webhookDelivered,
} from '#shared/metrics';
import { captureLines, emfOf, emfProblems } from '../support/emf.ts';

// The outcome lines: one JSON line each that is also its CloudWatch metrics (EMF), written at
// INFO even when the functions log at WARN (as the local stack does).

vi.hoisted(() => {
  process.env.POWERTOOLS_LOG_LEVEL = 'WARN';
});

const lines = captureLines();
const FACTS = { orgId: 'org_1', postId: 'post_1', channelId: 'ch_1', platform: 'mastodon', attempt: 2 };
const only = () => {
  expect(lines.metrics()).toHaveLength(1);
  return lines.metrics()[0] as Record<string, unknown>;
};

describe('outcome lines', () => {
  it('a publication is an INFO line even at WARN, with its count and lateness per platform and in total', () => {
    deliveryPublished(FACTS, 12.5);

    const line = only();
    expect(emfProblems(line)).toEqual([]);
    expect(line).toMatchObject({
      level: 'INFO',
      message: 'delivery published',
      service: 'herald',
      outcome: 'published',
      org_id: 'org_1',
      post_id: 'post_1',
      channel_id: 'ch_1',
      platform: 'mastodon',
      attempt: 2,
      lateness_seconds: 12.5,
    });
    expect(emfOf(line)).toEqual({
      dimensions: [['platform'], []],
      metrics: {
        DeliveryPublished: { unit: 'Count', value: 1 },
        PublishLateness: { unit: 'Seconds', value: 12.5 },
      },
    });
  });

  it('a publication whose due time is unknown counts without a lateness; one early by a clock skew is 0 late', () => {
    deliveryPublished(FACTS, null);
    deliveryPublished(FACTS, -0.4);

    const [unknown, early] = lines.metrics();
    expect(emfOf(unknown as Record<string, unknown>).metrics).toEqual({
      DeliveryPublished: { unit: 'Count', value: 1 },
    });
    expect(unknown).not.toHaveProperty('lateness_seconds');
    expect(early).toMatchObject({ PublishLateness: 0, lateness_seconds: 0 });
  });

  it('a retry counts per platform, with its reason: a category or pacing', () => {
    deliveryRetrying(FACTS, { category: 'rate_limited', error: 'slow down' }, '2030-01-01T00:00:30.000Z');
    deliveryRetrying(FACTS, { paced: 'media per hour' }, undefined);

    const [failed, paced] = lines.metrics();
    for (const l of [failed, paced]) {
      expect(emfProblems(l as Record<string, unknown>)).toEqual([]);
      expect(emfOf(l as Record<string, unknown>)).toEqual({
        dimensions: [['platform'], []],
        metrics: { DeliveryRetried: { unit: 'Count', value: 1 } },
      });
    }
    expect(failed).toMatchObject({
      level: 'INFO',
      message: 'delivery retrying',
      category: 'rate_limited',
      error: 'slow down',
      next_attempt_at: '2030-01-01T00:00:30.000Z',
    });
    expect(paced).toMatchObject({ paced: 'media per hour' });
  });

  it('a failure for good is a WARN line counted per platform and category, per platform, and in total', () => {
    deliveryFailed(FACTS, 'auth_expired', 'token revoked');

    const line = only();
    expect(emfProblems(line)).toEqual([]);
    expect(line).toMatchObject({
      level: 'WARN',
      message: 'delivery failed',
      category: 'auth_expired',
      error: 'token revoked',
    });
    expect(emfOf(line)).toEqual({
      dimensions: [['platform', 'category'], ['platform'], []],
      metrics: { DeliveryFailed: { unit: 'Count', value: 1 } },
    });
  });

  it('webhook attempts count by outcome; channel transitions by platform and status', () => {
    const hook = {
      orgId: 'org_1',
      endpointId: 'we_1',
      eventId: 'msg_1',
      eventType: 'post.published',
      attempt: 1,
    };
    webhookDelivered('delivered', { ...hook, statusCode: 200 });
    webhookDelivered('failed', { ...hook, statusCode: 500, error: 'HTTP 500' });
    channelStatusChanged({
      orgId: 'org_1',
      channelId: 'ch_1',
      platform: 'x',
      from: 'live',
      status: 'reauth_required',
    });

    const [delivered, failed, channel] = lines.metrics() as Array<Record<string, unknown>>;
    expect(emfOf(delivered as Record<string, unknown>)).toEqual({
      dimensions: [['outcome'], []],
      metrics: { WebhookDelivery: { unit: 'Count', value: 1 } },
    });
    expect(delivered).toMatchObject({
      level: 'INFO',
      outcome: 'delivered',
      status_code: 200,
      org_id: 'org_1',
    });
    expect(failed).toMatchObject({ level: 'WARN', outcome: 'failed', error: 'HTTP 500' });
    expect(emfOf(channel as Record<string, unknown>)).toEqual({
      dimensions: [['platform', 'status'], []],
      metrics: { ChannelStatusChanged: { unit: 'Count', value: 1 } },
    });
    expect(channel).toMatchObject({
      platform: 'x',
      status: 'reauth_required',
      from: 'live',
      channel_id: 'ch_1',
    });
    for (const l of lines.metrics()) expect(emfProblems(l)).toEqual([]);
  });

  it('no dimension set names an organization, post, channel or endpoint', () => {
    deliveryPublished(FACTS, 1);
    deliveryRetrying(FACTS, { paced: 'x' }, undefined);
    deliveryFailed(FACTS, 'system', 'crash');
    webhookDelivered('retried', {
      orgId: 'o',
      endpointId: 'e',
      eventId: 'm',
      eventType: 't',
      attempt: 1,
      statusCode: null,
    });
    channelStatusChanged({ orgId: 'o', channelId: 'c', platform: 'x', from: 'live', status: 'error' });
    platformAppRefused('x', 3, 'invalid_client');

    expect(lines.metrics()).toHaveLength(6);
    const named = lines.metrics().flatMap((l) => emfOf(l).dimensions.flat());
    for (const id of ['org_id', 'post_id', 'channel_id', 'endpoint_id', 'event_id'])
      expect(named).not.toContain(id);
  });

  it('the platform app refusal stays an ERROR line counting the refused channels', () => {
    platformAppRefused('linkedin', 4, 'invalid_client');

    const line = only();
    expect(emfProblems(line)).toEqual([]);
    expect(line).toMatchObject({ level: 'ERROR', platform: 'linkedin', channels: 4, PlatformAppRefused: 4 });
    expect(emfOf(line).dimensions).toEqual([['platform'], []]);
  });
});

describe('metricMembers', () => {
  it('refuses a dimension without a value, a value that is not a finite number, and a set over 30 names', () => {
    const one = [{ name: 'M', value: 1, unit: 'Count' as const }];
    expect(() => metricMembers(one, {}, [['platform']])).toThrow('Dimension platform has no value.');
    expect(() => metricMembers([{ name: 'M', value: Number.NaN, unit: 'Count' }], {}, [])).toThrow(
      'Metric M needs a finite value, not NaN.',
    );
    const many = Array.from({ length: 31 }, (_, i) => `d${i}`);
    expect(() => metricMembers(one, Object.fromEntries(many.map((d) => [d, 'v'])), [many])).toThrow(
      'A dimension set has at most 30 names.',
    );
  });
});
