import { EncryptCommand, KMSClient } from '@aws-sdk/client-kms';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '#adapters/keys';
import type { WebhookEndpointRecord } from '#core/webhooks';
import {
  createEndpointForPerson,
  deleteEndpointForPerson,
  editEndpointForPerson,
  enableEndpointForPerson,
  getEndpointForPerson,
  listEndpointsForPerson,
  rotateSecretForPerson,
  STALE_ENDPOINT,
  testEndpointForPerson,
  WebhookFieldError,
} from '#usecases/console-webhooks';
import * as send from '#usecases/support/webhook-send';
import { fixedId, OTHER_ORG_ID, orgItem, org as orgOf, webhookEndpoint } from '../../support/fixtures.ts';
import {
  ADMIN,
  actErrorOf,
  itemsOf,
  MEMBER,
  NOW,
  OWNER,
  person,
  usePeopleTable,
} from '../../support/people.ts';

// The console's webhook acts over the API's own use cases, in the in-memory table: the role is
// checked before anything is read or written, a refused URL stores nothing, a stale form changes
// nothing, re-enabling is the API's PATCH {enabled: true}, and every act leaves its audit entry
// (with the endpoint's host, never its URL's path, and never a secret).

vi.hoisted(() => {
  vi.stubEnv('HERALD_WEBHOOK_ALLOW_CIDRS', '');
  vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', undefined);
});
vi.mock('#usecases/support/webhook-send', () => ({
  activeSecrets: vi.fn(async () => ['whsec_x']),
  sendSigned: vi.fn(),
}));
afterAll(() => {
  vi.unstubAllEnvs();
});

const table = usePeopleTable();
const kms = mockClient(KMSClient);
const CURSOR_SECRET = 'unit-cursor-secret';
const ID = fixedId('webhook', 1);
const URL_OK = 'https://93.184.216.34/hooks/T000/SECRET-TOKEN';

beforeEach(() => {
  kms.reset();
  kms.on(EncryptCommand).resolves({ CiphertextBlob: Buffer.from('sealed') });
  vi.mocked(send.sendSigned).mockReset();
});

const putEndpoint = (patch: Partial<WebhookEndpointRecord> = {}) => {
  const rec = webhookEndpoint({ id: ID, url: URL_OK, version: 3, ...patch });
  table.seed({ ...keys.webhookEndpoint(rec.org_id, rec.id), ...rec });
  table.seed({ ...keys.webhookCount(rec.org_id), endpoints: 1 });
  return rec;
};
const stored = () => itemsOf(table, 'WHE#') as unknown as WebhookEndpointRecord[];
// Its own entries; a refused act's act_refused is tested with the audit log (settings-and-audit).
const audit = () => itemsOf(table, 'AUDIT#').filter((e) => e.action !== 'act_refused');
const form = (patch: Partial<{ url: string; description: string; eventTypes: string[] }> = {}) => ({
  url: URL_OK,
  description: 'CRM',
  eventTypes: ['post.failed', 'post.published'],
  ...patch,
});
const base = { now: NOW };

describe('listing and reading', () => {
  it('shows every member the endpoints with their latest delivery, and no secret', async () => {
    putEndpoint();

    const { endpoints, webhooks } = await listEndpointsForPerson({
      orgId: orgOf().id,
      actor: person(MEMBER),
      cursorSecret: CURSOR_SECRET,
    });

    expect(webhooks).toBe(true);
    expect(endpoints).toEqual([expect.objectContaining({ id: ID, url: URL_OK, last_delivery: null })]);
    expect(JSON.stringify(endpoints)).not.toContain('secret');
  });

  it('reads an endpoint with its version and, while a streak runs, when the ladder warns and disables', async () => {
    putEndpoint({
      failure: { consecutive_failures: 2, failing_since: '2030-06-10T08:00:00.000Z', last_status_code: 500 },
    });

    const d = await getEndpointForPerson({
      orgId: orgOf().id,
      actor: person(MEMBER),
      id: ID,
      cursorSecret: CURSOR_SECRET,
    });

    expect(d.version).toBe(3);
    expect(d.ladder).toEqual({ warn_at: '2030-06-11T08:00:00.000Z', disable_at: '2030-06-13T08:00:00.000Z' });
    expect(d.deliveries).toEqual({ data: [], has_more: false, next_cursor: null });
  });

  it("answers another organization's endpoint, or a malformed id, as not found", async () => {
    putEndpoint({ org_id: OTHER_ORG_ID });

    for (const id of [ID, 'nope']) {
      const err = await actErrorOf(
        getEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), id, cursorSecret: CURSOR_SECRET }),
      );
      expect(err.kind).toBe('not_found');
    }
  });
});

describe('creating', () => {
  it('stores the endpoint, answers its secret once and audits the host, not the URL', async () => {
    const { endpoint, secret } = await createEndpointForPerson({
      orgId: orgOf().id,
      actor: person(ADMIN),
      form: form({ eventTypes: ['post.published', 'nonsense', 'post.failed'] }),
      ...base,
    });

    expect(secret).toMatch(/^whsec_/);
    expect(endpoint).not.toHaveProperty('secret');
    expect(stored()).toEqual([
      expect.objectContaining({
        url: URL_OK,
        event_types: ['post.published', 'post.failed'],
        state: 'active',
      }),
    ]);
    const [entry] = audit();
    expect(entry).toMatchObject({
      action: 'webhook_created',
      target: endpoint.id,
      actor: { kind: 'person', user_id: ADMIN.id },
      detail: { host: '93.184.216.34', event_types: ['post.published', 'post.failed'] },
    });
    expect(JSON.stringify(entry)).not.toContain('SECRET-TOKEN');
    expect(JSON.stringify(entry)).not.toContain('whsec_');
  });

  it('refuses a URL into private address space by its field, storing nothing', async () => {
    for (const url of ['https://10.0.0.1/hook', 'http://169.254.169.254/latest/meta-data/']) {
      const err = await actErrorOf(
        createEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), form: form({ url }), ...base }),
      );
      expect(err).toBeInstanceOf(WebhookFieldError);
      expect((err as WebhookFieldError).field).toBe('url');
      expect(err.message).toMatch(/^The URL names or resolves to an address webhooks may not reach/);
    }
    expect(stored()).toEqual([]);
    expect(audit()).toEqual([]);
    expect(kms.calls()).toHaveLength(0);
  });

  it('refuses an empty URL and no events by their fields', async () => {
    const noUrl = await actErrorOf(
      createEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), form: form({ url: ' ' }), ...base }),
    );
    const noEvents = await actErrorOf(
      createEndpointForPerson({
        orgId: orgOf().id,
        actor: person(OWNER),
        form: form({ eventTypes: ['bogus'] }),
        ...base,
      }),
    );

    expect((noUrl as WebhookFieldError).field).toBe('url');
    expect((noEvents as WebhookFieldError).field).toBe('event_types');
    expect(stored()).toEqual([]);
  });

  it('refuses a member, and a plan without webhooks, before reading the form', async () => {
    const member = await actErrorOf(
      createEndpointForPerson({ orgId: orgOf().id, actor: person(MEMBER), form: form({ url: '' }), ...base }),
    );
    table.seed(orgItem({ ...orgOf(), plan: 'free' }));
    const free = await actErrorOf(
      createEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), form: form(), ...base }),
    );

    expect(member.kind).toBe('forbidden');
    expect(free.kind).toBe('forbidden');
    expect(free.message).toContain('free plan does not include webhooks');
    expect(stored()).toEqual([]);
    expect(audit()).toEqual([]);
  });
});

describe('editing and re-enabling', () => {
  const edit = (
    version: number,
    patch: Partial<{ enabled: boolean; wasEnabled: boolean; url: string }> = {},
  ) =>
    editEndpointForPerson({
      orgId: orgOf().id,
      actor: person(ADMIN),
      id: ID,
      form: {
        ...form({ url: patch.url ?? 'https://93.184.216.35/new' }),
        enabled: true,
        wasEnabled: true,
        ...patch,
      },
      version,
      ...base,
    });

  it('saves the form at the version the page showed, and audits it', async () => {
    putEndpoint();

    const updated = await edit(3);

    expect(updated).toMatchObject({ url: 'https://93.184.216.35/new', description: 'CRM' });
    expect(stored()[0]).toMatchObject({ url: 'https://93.184.216.35/new', version: 4 });
    expect(audit()).toEqual([expect.objectContaining({ action: 'webhook_updated', target: ID })]);
  });

  it('refuses a stale form with a conflict that says so, changing nothing', async () => {
    putEndpoint();

    const err = await actErrorOf(edit(2));

    expect(err).toMatchObject({ kind: 'conflict', message: STALE_ENDPOINT });
    expect(stored()[0]).toMatchObject({ url: URL_OK, version: 3 });
    expect(audit()).toEqual([]);
  });

  it('refuses a private address on edit by its field, changing nothing', async () => {
    putEndpoint();

    const err = await actErrorOf(edit(3, { url: 'https://192.168.1.10/' }));

    expect((err as WebhookFieldError).field).toBe('url');
    expect(stored()[0]).toMatchObject({ url: URL_OK, version: 3 });
  });

  it('keeps an auto-disabled endpoint auto-disabled when only its URL changes', async () => {
    putEndpoint({ state: 'auto_disabled', enabled: false, failure: { consecutive_failures: 8 } });

    await edit(3, { enabled: false, wasEnabled: false });

    expect(stored()[0]).toMatchObject({ state: 'auto_disabled', failure: { consecutive_failures: 8 } });
  });

  it("re-enables an auto-disabled endpoint as the API's PATCH does: failures cleared, delivering", async () => {
    putEndpoint({
      state: 'auto_disabled',
      enabled: false,
      failure: {
        consecutive_failures: 8,
        failing_since: '2030-06-07T00:00:00.000Z',
        disabled_at: NOW.toISOString(),
      },
    });

    const updated = await enableEndpointForPerson({
      orgId: orgOf().id,
      actor: person(OWNER),
      id: ID,
      version: 3,
      ...base,
    });

    expect(updated).toMatchObject({
      state: 'active',
      enabled: true,
      failure: { consecutive_failures: 0, disabled_at: null },
    });
    expect(audit()).toEqual([
      expect.objectContaining({ action: 'webhook_enabled', detail: { previous_state: 'auto_disabled' } }),
    ]);
  });

  it('refuses to enable an endpoint already on, or from a stale page, and a member at all', async () => {
    putEndpoint();
    const on = await actErrorOf(
      enableEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), id: ID, version: 3, ...base }),
    );
    putEndpoint({ state: 'auto_disabled', enabled: false, version: 5 });
    const stale = await actErrorOf(
      enableEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), id: ID, version: 3, ...base }),
    );
    const member = await actErrorOf(
      enableEndpointForPerson({ orgId: orgOf().id, actor: person(MEMBER), id: ID, version: 5, ...base }),
    );

    expect(on).toMatchObject({ kind: 'conflict', message: expect.stringContaining('already on') });
    expect(stale).toMatchObject({ kind: 'conflict', message: STALE_ENDPOINT });
    expect(member.kind).toBe('forbidden');
    expect(stored()[0]).toMatchObject({ state: 'auto_disabled', version: 5 });
    expect(audit()).toEqual([]);
  });
});

describe('testing, rotating and deleting', () => {
  it('sends a test event and audits its outcome', async () => {
    putEndpoint();
    vi.mocked(send.sendSigned).mockResolvedValue({ statusCode: 204, durationMs: 12, error: null });

    const result = await testEndpointForPerson({ orgId: orgOf().id, actor: person(ADMIN), id: ID, ...base });

    expect(result).toMatchObject({ delivered: true, status_code: 204 });
    expect(audit()).toEqual([
      expect.objectContaining({ action: 'webhook_tested', detail: { delivered: true, status_code: 204 } }),
    ]);
  });

  it('rotates with the API’s 24-hour overlap, answering the new secret once and auditing no secret', async () => {
    const before = putEndpoint();

    const rotated = await rotateSecretForPerson({ orgId: orgOf().id, actor: person(OWNER), id: ID, ...base });

    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.previous_secret_expires_at).toBe('2030-06-11T09:30:00.000Z');
    expect(stored()[0]?.secret).toMatchObject({ previous: before.secret.current });
    expect(JSON.stringify(audit())).not.toContain('whsec_');
    expect(audit()).toEqual([expect.objectContaining({ action: 'webhook_secret_rotated' })]);
  });

  it('deletes, audits the host, and refuses a member and an unknown endpoint', async () => {
    putEndpoint();
    const member = await actErrorOf(
      deleteEndpointForPerson({ orgId: orgOf().id, actor: person(MEMBER), id: ID, ...base }),
    );
    expect(member.kind).toBe('forbidden');
    expect(stored()).toHaveLength(1);

    await deleteEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), id: ID, ...base });
    const again = await actErrorOf(
      deleteEndpointForPerson({ orgId: orgOf().id, actor: person(OWNER), id: ID, ...base }),
    );

    expect(stored()).toEqual([]);
    expect(again.kind).toBe('not_found');
    expect(audit()).toEqual([
      expect.objectContaining({ action: 'webhook_deleted', detail: { host: '93.184.216.34' } }),
    ]);
  });

  it('refuses a member every act, changing nothing and sending nothing', async () => {
    putEndpoint();
    const actor = person(MEMBER);
    const errs = await Promise.all([
      actErrorOf(testEndpointForPerson({ orgId: orgOf().id, actor, id: ID, ...base })),
      actErrorOf(rotateSecretForPerson({ orgId: orgOf().id, actor, id: ID, ...base })),
    ]);

    expect(errs.map((e) => e.kind)).toEqual(['forbidden', 'forbidden']);
    expect(send.sendSigned).not.toHaveBeenCalled();
    expect(kms.calls()).toHaveLength(0);
    expect(stored()[0]).toMatchObject({ version: 3 });
  });
});

describe('hidden characters in a description', () => {
  it('refuses a description with a bidi override by its field, adding nothing', async () => {
    const e = await actErrorOf(
      createEndpointForPerson({
        orgId: orgOf().id,
        actor: person(OWNER),
        form: form({ description: 'CRM \u202Eevil' }),
        ...base,
      }),
    );
    expect(e).toMatchObject({ field: 'description', message: expect.stringMatching(/invisible/) });
    expect(audit()).toEqual([]);
  });
});
