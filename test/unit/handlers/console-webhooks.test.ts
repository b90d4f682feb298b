import { beforeEach, describe, expect, it, vi } from 'vitest';
import { ActError, type SignedIn } from '#core/people';
import { handler } from '#handlers/console-webhooks';
import type { HttpResult } from '#shared/envelope';
import * as sessions from '#usecases/console-sessions';
import type { EndpointDetail, EndpointListItem } from '#usecases/console-webhooks';
import * as cases from '#usecases/console-webhooks';
import * as settingsCases from '#usecases/settings';
import {
  call,
  consoleEvent,
  consoleOrg,
  formPost,
  mainText,
  ORG,
  person,
  sessionOf,
} from '../support/console.ts';

// The webhooks page's handler over mocked use cases: what it passes them (the session's org, the
// person as actor, the form's fields and version), what it renders (escaped; a secret only on the
// page answering create and rotate), and how refusals reach the person (a field error by its field,
// a stale form as the page as it is now, a member's act as the 403 page).

vi.mock('#usecases/console-sessions', () => ({ resolveSession: vi.fn(), signOut: vi.fn() }));
vi.mock('#usecases/settings', () => ({ getSettings: vi.fn(), updateSettings: vi.fn() }));
vi.mock('#usecases/console-webhooks', async (importOriginal) => {
  const real = await importOriginal<typeof cases>();
  return {
    STALE_ENDPOINT: real.STALE_ENDPOINT,
    WebhookFieldError: real.WebhookFieldError,
    listEndpointsForPerson: vi.fn(),
    getEndpointForPerson: vi.fn(),
    createEndpointForPerson: vi.fn(),
    editEndpointForPerson: vi.fn(),
    enableEndpointForPerson: vi.fn(),
    testEndpointForPerson: vi.fn(),
    rotateSecretForPerson: vi.fn(),
    deleteEndpointForPerson: vi.fn(),
  };
});

const OWNER = person('owner', 1, 'owner@example.com');
const ADMIN = person('admin', 2, 'admin@example.com');
const MEMBER = person('member', 3, 'member@example.com');
const ID = 'webhook_01JD0000000000000000000001';
const SETTINGS = { dangerous_ops: false, approval_required: false, landing_origins: [] };
const org = () => consoleOrg(SETTINGS);

const endpoint = (patch: Partial<EndpointListItem> = {}): EndpointListItem => ({
  id: ID,
  url: 'https://hooks.example.com/<b>x</b>',
  description: '<i>CRM</i>',
  event_types: ['post.published'],
  enabled: true,
  state: 'active',
  failure: {
    consecutive_failures: 0,
    failing_since: null,
    last_failure_at: null,
    last_status_code: null,
    last_error: null,
    warned_at: null,
    disabled_at: null,
  },
  created_at: '2030-01-01T00:00:00.000Z',
  updated_at: '2030-01-02T00:00:00.000Z',
  last_delivery: null,
  ...patch,
});

const detail = (
  patch: Partial<EndpointListItem> = {},
  more: Partial<EndpointDetail> = {},
): EndpointDetail => {
  const { last_delivery: _, ...e } = endpoint(patch);
  return {
    endpoint: e,
    version: 7,
    deliveries: {
      data: [
        {
          event_id: 'message_01',
          event_type: 'channel.connected',
          status: 'failed',
          attempts: [
            {
              attempt: 1,
              attempted_at: '2030-01-03T10:00:00.000Z',
              status_code: 500,
              duration_ms: 5,
              error: 'HTTP 500',
            },
          ],
          next_attempt_at: null,
          updated_at: '2030-01-03T10:00:00.000Z',
        },
      ],
      has_more: true,
      next_cursor: 'CURSOR/1',
    },
    ladder: null,
    webhooks: true,
    ...more,
  };
};

const asPerson = (who: SignedIn) => ({ kind: 'person', userId: who.user.id });
const get = (routeKey: string, who: SignedIn, opts: Parameters<typeof consoleEvent>[1] = {}) =>
  consoleEvent(routeKey, { cookies: sessionOf(who), ...opts });
const post = (
  routeKey: string,
  who: SignedIn,
  fields: Record<string, string | string[]> = {},
  params?: Record<string, string>,
) => formPost(routeKey, fields, { cookies: sessionOf(who), ...(params ? { params } : {}) });
const actOn = (act: string, who: SignedIn, fields: Record<string, string | string[]> = {}) =>
  post('POST /console/webhooks/{id}/{act}', who, fields, { id: ID, act });

function errorLinks(res: HttpResult): Record<string, string> {
  const summary = /<div class="error-summary"[\s\S]*?<\/div>/.exec(res.body ?? '')?.[0] ?? '';
  return Object.fromEntries(
    [...summary.matchAll(/<a href="#([^"]+)">([^<]*)<\/a>/g)].map((m) => [m[1], m[2]]),
  );
}

beforeEach(() => {
  vi.resetAllMocks();
  vi.mocked(sessions.resolveSession).mockImplementation(
    async (cookie) => [OWNER, ADMIN, MEMBER].find((p) => sessionOf(p)[0]?.endsWith(`=${cookie}`)) ?? null,
  );
  vi.mocked(settingsCases.getSettings).mockResolvedValue({ org: org(), settings: SETTINGS, version: 3 });
  vi.mocked(cases.listEndpointsForPerson).mockResolvedValue({
    endpoints: [endpoint()],
    webhooks: true,
    plan: 'team',
  });
  vi.mocked(cases.getEndpointForPerson).mockResolvedValue(detail());
});

describe('a receiver URL, which often carries its credential', () => {
  const secretUrl = 'https://hooks.example.com:8443/services/T0/B0/s3cretpath?token=s3cret#frag';

  it('is shown to members as its host only (list, heading, detail), to owners and admins in full', async () => {
    vi.mocked(cases.listEndpointsForPerson).mockResolvedValue({
      endpoints: [endpoint({ url: secretUrl })],
      webhooks: true,
      plan: 'team',
    });
    vi.mocked(cases.getEndpointForPerson).mockResolvedValue(detail({ url: secretUrl }));

    for (const who of [MEMBER]) {
      const list = await call(handler, get('GET /console/webhooks', who));
      const page = await call(handler, get('GET /console/webhooks/{id}', who, { params: { id: ID } }));
      for (const res of [list, page]) {
        expect(res.statusCode).toBe(200);
        expect(res.body).not.toMatch(/s3cret|services|T0\/B0/);
        expect(mainText(res)).toContain('https://hooks.example.com:8443/…?…');
      }
    }
    for (const who of [OWNER, ADMIN]) {
      const list = await call(handler, get('GET /console/webhooks', who));
      const page = await call(handler, get('GET /console/webhooks/{id}', who, { params: { id: ID } }));
      for (const res of [list, page]) expect(res.body).toContain('/services/T0/B0/s3cretpath?token=s3cret');
    }
  });
});

describe('the list', () => {
  it('shows each endpoint escaped, with its state in words; owners and admins get the create form', async () => {
    vi.mocked(cases.listEndpointsForPerson).mockResolvedValue({
      endpoints: [endpoint(), endpoint({ id: 'webhook_2', state: 'auto_disabled', enabled: false })],
      webhooks: true,
      plan: 'team',
    });

    const admin = await call(handler, get('GET /console/webhooks', ADMIN));
    const member = await call(handler, get('GET /console/webhooks', MEMBER));

    expect(admin.statusCode).toBe(200);
    expect(admin.body).toContain('https://hooks.example.com/&lt;b&gt;x&lt;/b&gt;');
    expect(admin.body).not.toContain('<b>x</b>');
    expect(mainText(admin)).toContain('Active');
    expect(mainText(admin)).toContain('Auto-disabled');
    expect(admin.body).toContain('name="event_types" type="checkbox" value="post.published"');
    expect(member.body).not.toContain('name="event_types"');
    expect(mainText(member)).toContain('Owners and admins add, change, test and delete endpoints.');
    expect(cases.listEndpointsForPerson).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(MEMBER),
      cursorSecret: expect.any(String),
    });
    // No inline script or style, no event handler attributes (the console's CSP).
    expect(admin.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(admin.body).not.toMatch(/\sstyle=|\son[a-z]+=|<style/);
  });

  it('says when the plan has no webhooks, and offers no form', async () => {
    vi.mocked(cases.listEndpointsForPerson).mockResolvedValue({
      endpoints: [],
      webhooks: false,
      plan: 'free',
    });

    const res = await call(handler, get('GET /console/webhooks', OWNER));

    expect(mainText(res)).toContain('The free plan does not include webhooks');
    expect(res.body).not.toContain('name="url"');
  });
});

describe('creating', () => {
  it('shows the new secret once, on the page the POST answers, passing the form as typed', async () => {
    const { last_delivery: _, ...created } = endpoint();
    vi.mocked(cases.createEndpointForPerson).mockResolvedValue({ endpoint: created, secret: 'whsec_SECRET' });

    const res = await call(
      handler,
      post('POST /console/webhooks', ADMIN, {
        url: 'https://hooks.example.com/h',
        description: 'CRM',
        event_types: ['post.failed', 'post.published'],
      }),
    );

    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('value="whsec_SECRET"');
    expect(res.body).toContain('data-copy="webhook-secret"');
    expect(cases.createEndpointForPerson).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(ADMIN),
      form: {
        url: 'https://hooks.example.com/h',
        description: 'CRM',
        eventTypes: ['post.failed', 'post.published'],
        errors: [],
      },
      now: expect.any(Date),
    });
  });

  it('shows a refused URL by its field, the form as filled in', async () => {
    vi.mocked(cases.createEndpointForPerson).mockRejectedValue(
      new cases.WebhookFieldError('url', 'The URL names or resolves to an address webhooks may not reach.'),
    );

    const res = await call(
      handler,
      post('POST /console/webhooks', OWNER, { url: 'https://10.0.0.1/"><b>', event_types: ['post.failed'] }),
    );

    expect(res.statusCode).toBe(400);
    expect(errorLinks(res)).toEqual({
      'webhook-url': 'The URL names or resolves to an address webhooks may not reach.',
    });
    expect(res.body).toContain('value="https://10.0.0.1/&quot;&gt;&lt;b&gt;"');
    expect(res.body).toMatch(/value="post.failed" checked/);
    expect(res.body).toContain('<title>Error: Webhooks');
  });

  it("answers a member's create with the 403 page of the use case's refusal", async () => {
    vi.mocked(cases.createEndpointForPerson).mockRejectedValue(
      new ActError('managing webhook endpoints needs the owner or admin role', 'forbidden'),
    );

    const res = await call(handler, post('POST /console/webhooks', MEMBER, { url: 'https://x.test/' }));

    expect(res.statusCode).toBe(403);
    expect(mainText(res)).toContain('needs the owner or admin role');
    expect(res.body).not.toContain('whsec_');
  });
});

describe('an endpoint', () => {
  it('shows its state, the delivery log paged, and the edit form carrying its version', async () => {
    const res = await call(handler, get('GET /console/webhooks/{id}', OWNER, { params: { id: ID } }));

    expect(res.statusCode).toBe(200);
    expect(mainText(res)).toContain('channel.connected');
    expect(mainText(res)).toContain('HTTP 500');
    expect(res.body).toContain(`href="/console/webhooks/${ID}?after=CURSOR%2F1#deliveries"`);
    expect(res.body).toContain('name="version" value="7"');
    expect(res.body).toContain(`action="/console/webhooks/${ID}/edit"`);
    expect(res.body).toContain(`hx-get="/console/webhooks/${ID}"`);
    expect(res.body).toContain('&lt;i&gt;CRM&lt;/i&gt;');
  });

  it('tells the ladder’s story of an auto-disabled endpoint and offers re-enabling; members only read', async () => {
    vi.mocked(cases.getEndpointForPerson).mockResolvedValue(
      detail({
        state: 'auto_disabled',
        enabled: false,
        failure: {
          ...endpoint().failure,
          consecutive_failures: 8,
          failing_since: '2030-01-01T00:00:00.000Z',
          disabled_at: '2030-01-04T00:00:00.000Z',
          last_status_code: 500,
        },
      }),
    );

    const owner = await call(handler, get('GET /console/webhooks/{id}', OWNER, { params: { id: ID } }));
    const member = await call(handler, get('GET /console/webhooks/{id}', MEMBER, { params: { id: ID } }));

    expect(mainText(owner)).toContain('Turned off by the failure ladder at 2030-01-04 00:00 UTC');
    expect(mainText(owner)).toContain('8 failed attempts in a row, the last answered HTTP 500');
    expect(owner.body).toContain(`action="/console/webhooks/${ID}/enable"`);
    expect(member.body).not.toContain('/enable"');
    expect(member.body).not.toContain('/edit"');
    expect(member.body).not.toContain('?confirm=');
    expect(mainText(member)).toContain('Auto-disabled');
  });

  it('asks before rotating and deleting; a member asking gets the 403 page', async () => {
    const rotate = await call(
      handler,
      get('GET /console/webhooks/{id}', ADMIN, { params: { id: ID }, query: 'confirm=rotate' }),
    );
    const del = await call(
      handler,
      get('GET /console/webhooks/{id}', ADMIN, { params: { id: ID }, query: 'confirm=delete' }),
    );
    const member = await call(
      handler,
      get('GET /console/webhooks/{id}', MEMBER, { params: { id: ID }, query: 'confirm=delete' }),
    );

    expect(rotate.body).toContain(`action="/console/webhooks/${ID}/rotate"`);
    expect(del.body).toContain(`action="/console/webhooks/${ID}/delete"`);
    expect(mainText(del)).toContain('This cannot be undone.');
    expect(member.statusCode).toBe(403);
  });

  it('answers an unknown endpoint with the 404 page', async () => {
    vi.mocked(cases.getEndpointForPerson).mockRejectedValue(new ActError('no such endpoint', 'not_found'));

    const res = await call(
      handler,
      get('GET /console/webhooks/{id}', OWNER, { params: { id: 'webhook_x' } }),
    );

    expect(res.statusCode).toBe(404);
  });
});

describe('the acts', () => {
  it('saves an edit with the form’s version and whether it was on, then redirects with a message', async () => {
    const res = await call(
      handler,
      actOn('edit', ADMIN, {
        url: 'https://hooks.example.com/new',
        description: '',
        event_types: ['post.failed'],
        version: '7',
        was_enabled: 'true',
      }),
    );

    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/console/webhooks/${ID}?msg=webhook_updated`);
    expect(cases.editEndpointForPerson).toHaveBeenCalledWith({
      orgId: ORG,
      actor: asPerson(ADMIN),
      id: ID,
      now: expect.any(Date),
      version: 7,
      form: {
        url: 'https://hooks.example.com/new',
        description: '',
        eventTypes: ['post.failed'],
        errors: [],
        enabled: false,
        wasEnabled: true,
      },
    });
  });

  it('shows a stale edit as the page as it is now, saying so (409), and a refused field by the field (400)', async () => {
    vi.mocked(cases.editEndpointForPerson)
      .mockRejectedValueOnce(new ActError(cases.STALE_ENDPOINT, 'conflict'))
      .mockRejectedValueOnce(
        new cases.WebhookFieldError('event_types', 'Choose at least one event to send.'),
      );

    const stale = await call(handler, actOn('edit', OWNER, { url: 'https://a.test/', version: '6' }));
    const bad = await call(handler, actOn('edit', OWNER, { url: 'https://a.test/', version: '7' }));

    expect(stale.statusCode).toBe(409);
    expect(mainText(stale)).toContain(
      'This endpoint changed after you opened the page, so nothing was saved.',
    );
    expect(stale.body).toContain('name="version" value="7"');
    expect(bad.statusCode).toBe(400);
    expect(errorLinks(bad)).toEqual({ 'webhook-event-post-published': 'Choose at least one event to send.' });
    expect(bad.body).toContain('value="https://a.test/"');
  });

  it('re-enables, tests (the outcome in the message) and deletes, each redirecting', async () => {
    vi.mocked(cases.testEndpointForPerson)
      .mockResolvedValueOnce({
        event_id: 'm',
        delivered: true,
        status_code: 200,
        duration_ms: 3,
        error: null,
      })
      .mockResolvedValueOnce({
        event_id: 'm',
        delivered: false,
        status_code: 500,
        duration_ms: 3,
        error: 'HTTP 500',
      });

    const enable = await call(handler, actOn('enable', OWNER, { version: '7' }));
    const ok = await call(handler, actOn('test', OWNER));
    const failed = await call(handler, actOn('test', OWNER));
    const del = await call(handler, actOn('delete', OWNER));

    expect(enable.headers.location).toBe(`/console/webhooks/${ID}?msg=webhook_enabled`);
    expect(cases.enableEndpointForPerson).toHaveBeenCalledWith(
      expect.objectContaining({ id: ID, version: 7 }),
    );
    expect(ok.headers.location).toBe(`/console/webhooks/${ID}?msg=webhook_test_delivered#deliveries`);
    expect(failed.headers.location).toBe(`/console/webhooks/${ID}?msg=webhook_test_failed#deliveries`);
    expect(del.headers.location).toBe('/console/webhooks?msg=webhook_deleted');
  });

  it('shows a rotated secret once with when the previous one stops signing', async () => {
    vi.mocked(cases.rotateSecretForPerson).mockResolvedValue({
      id: ID,
      secret: 'whsec_NEW',
      previous_secret_expires_at: '2030-01-02T10:00:00.000Z',
    });

    const res = await call(handler, actOn('rotate', ADMIN));

    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toContain('value="whsec_NEW"');
    expect(mainText(res)).toContain('Until 2030-01-02 10:00 UTC');
  });

  it("answers a member's act with the 403 page, and an unknown act with the 404 page, running nothing", async () => {
    vi.mocked(cases.enableEndpointForPerson).mockRejectedValue(
      new ActError('managing webhook endpoints needs the owner or admin role', 'forbidden'),
    );

    const member = await call(handler, actOn('enable', MEMBER, { version: '7' }));
    const unknown = await call(handler, actOn('explode', OWNER));

    expect(member.statusCode).toBe(403);
    expect(unknown.statusCode).toBe(404);
    for (const f of [cases.deleteEndpointForPerson, cases.rotateSecretForPerson, cases.testEndpointForPerson])
      expect(f).not.toHaveBeenCalled();
  });

  it('refuses a post from another site before any use case runs', async () => {
    const res = await call(
      handler,
      formPost(
        'POST /console/webhooks/{id}/{act}',
        {},
        {
          cookies: sessionOf(OWNER),
          params: { id: ID, act: 'delete' },
          headers: { origin: 'https://evil.example' },
        },
      ),
    );

    expect(res.statusCode).toBe(403);
    expect(cases.deleteEndpointForPerson).not.toHaveBeenCalled();
  });
});
