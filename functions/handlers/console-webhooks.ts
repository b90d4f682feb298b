import { canManageWebhooks } from '#core/accounts';
import { ActError, type SignedIn } from '#core/people';
import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import { messageOf, withMessage } from '#handlers/views/layout';
import {
  confirmPage,
  createdPage,
  type EndpointFormValues,
  endpointPage,
  rotatedPage,
  WEBHOOK_FIELDS,
  WEBHOOKS_PATH,
  webhooksPage,
} from '#handlers/views/webhooks';
import { requireEnv } from '#shared/config';
import { type PersonRequest, pageAnswer, redirectAnswer } from '#shared/console';
import {
  createEndpointForPerson,
  deleteEndpointForPerson,
  editEndpointForPerson,
  enableEndpointForPerson,
  getEndpointForPerson,
  listEndpointsForPerson,
  rotateSecretForPerson,
  testEndpointForPerson,
  WebhookFieldError,
} from '#usecases/console-webhooks';

// Webhook endpoints: the list and the endpoint pages for everyone; create, edit, test, rotate,
// re-enable and delete for owners and admins (the use cases decide; a member's POST gets their
// 403). A new secret is rendered on the page the POST answers, never redirected to: it is shown once.

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

/** The acts of an endpoint's page, one route: `POST /console/webhooks/{id}/{act}`. */
const ACTS = ['edit', 'test', 'rotate', 'enable', 'delete'] as const;
type Act = (typeof ACTS)[number];
const CONFIRMED = ['delete', 'rotate'] as const;

const formOf = (form: URLSearchParams): EndpointFormValues => ({
  url: form.get('url') ?? '',
  description: form.get('description') ?? '',
  eventTypes: form.getAll('event_types'),
  errors: [],
});

const fieldErrors = (err: WebhookFieldError) => [{ field: WEBHOOK_FIELDS[err.field], message: err.message }];

async function listAnswer(signedIn: SignedIn, opts: { message?: string | null; form?: EndpointFormValues }) {
  const [frame, list] = await Promise.all([
    frameOf(signedIn),
    listEndpointsForPerson({ orgId: orgOf(signedIn), actor: actorOf(signedIn), cursorSecret: CURSOR_SECRET }),
  ]);
  return webhooksPage({
    frame,
    endpoints: list.endpoints,
    canManage: canManageWebhooks(signedIn.user.role),
    included: list.webhooks,
    plan: list.plan,
    message: opts.message ?? null,
    ...(opts.form ? { form: opts.form } : {}),
  });
}

async function endpointAnswer(
  signedIn: SignedIn,
  id: string,
  opts: { after?: string | null; message?: string | null; form?: EndpointFormValues } = {},
) {
  const [frame, detail] = await Promise.all([
    frameOf(signedIn),
    getEndpointForPerson({
      orgId: orgOf(signedIn),
      actor: actorOf(signedIn),
      id,
      after: opts.after ?? undefined,
      cursorSecret: CURSOR_SECRET,
    }),
  ]);
  return {
    frame,
    detail,
    page: endpointPage({
      frame,
      detail,
      canManage: canManageWebhooks(signedIn.user.role) && detail.webhooks,
      after: opts.after ?? null,
      message: opts.message ?? null,
      ...(opts.form ? { form: opts.form } : {}),
    }),
  };
}

async function act(req: PersonRequest, act: Act, id: string) {
  const { signedIn, form, now } = req;
  const base = { orgId: orgOf(signedIn), actor: actorOf(signedIn), id, now };
  const path = `${WEBHOOKS_PATH}/${encodeURIComponent(id)}`;
  switch (act) {
    case 'edit': {
      const values = { ...formOf(form), enabled: form.get('enabled') === 'on' };
      try {
        await editEndpointForPerson({
          ...base,
          form: { ...values, wasEnabled: form.get('was_enabled') === 'true' },
          version: Number(form.get('version')),
        });
      } catch (err) {
        // A refused field: the form again, as filled in, with the reason by the field.
        if (err instanceof WebhookFieldError) {
          const { page } = await endpointAnswer(signedIn, id, {
            form: { ...values, errors: fieldErrors(err) },
          });
          return pageAnswer(page, { status: 400 });
        }
        // A stale page: the endpoint as it is now, saying so; nothing was changed.
        if (err instanceof ActError && err.kind === 'conflict') {
          const { page } = await endpointAnswer(signedIn, id, { message: err.message });
          return pageAnswer(page, { status: 409 });
        }
        throw err;
      }
      return redirectAnswer(withMessage(path, 'webhook_updated'));
    }
    case 'enable':
      try {
        await enableEndpointForPerson({ ...base, version: Number(form.get('version')) });
      } catch (err) {
        if (!(err instanceof ActError && err.kind === 'conflict')) throw err;
        const { page } = await endpointAnswer(signedIn, id, { message: err.message });
        return pageAnswer(page, { status: 409 });
      }
      return redirectAnswer(withMessage(path, 'webhook_enabled'));
    case 'test': {
      const result = await testEndpointForPerson(base);
      return redirectAnswer(
        `${withMessage(path, result.delivered ? 'webhook_test_delivered' : 'webhook_test_failed')}#deliveries`,
      );
    }
    case 'rotate': {
      const rotated = await rotateSecretForPerson(base);
      const { frame, detail } = await endpointAnswer(signedIn, id);
      return pageAnswer(
        rotatedPage({
          frame,
          endpoint: detail.endpoint,
          secret: rotated.secret,
          previousUntil: rotated.previous_secret_expires_at,
        }),
      );
    }
    case 'delete':
      await deleteEndpointForPerson(base);
      return redirectAnswer(withMessage(WEBHOOKS_PATH, 'webhook_deleted'));
  }
}

export const { handler } = consolePage('consoleWebhooks', {
  'GET /console/webhooks': {
    who: 'person',
    run: async ({ signedIn, query }) => pageAnswer(await listAnswer(signedIn, { message: messageOf(query) })),
  },
  'POST /console/webhooks': {
    who: 'person',
    run: async ({ signedIn, form, now }) => {
      const values = formOf(form);
      try {
        const created = await createEndpointForPerson({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          form: values,
          now,
        });
        return pageAnswer(createdPage({ frame: await frameOf(signedIn), ...created }), { status: 201 });
      } catch (err) {
        if (!(err instanceof WebhookFieldError)) throw err;
        const page = await listAnswer(signedIn, { form: { ...values, errors: fieldErrors(err) } });
        return pageAnswer(page, { status: 400 });
      }
    },
  },
  'GET /console/webhooks/{id}': {
    who: 'person',
    run: async ({ signedIn, params, query }) => {
      const id = params.id ?? '';
      const confirm = query.get('confirm');
      const { frame, detail, page } = await endpointAnswer(signedIn, id, {
        after: query.get('after'),
        message: messageOf(query),
      });
      if (confirm === null) return pageAnswer(page);
      if (!(CONFIRMED as readonly string[]).includes(confirm))
        throw new ActError('There is no such action on an endpoint.', 'not_found');
      if (!canManageWebhooks(signedIn.user.role))
        throw new ActError('Only owners and admins rotate secrets and delete endpoints.', 'forbidden');
      return pageAnswer(
        confirmPage({ frame, endpoint: detail.endpoint, act: confirm as (typeof CONFIRMED)[number] }),
      );
    },
  },
  'POST /console/webhooks/{id}/{act}': {
    who: 'person',
    run: async (req) => {
      const name = req.params.act ?? '';
      if (!(ACTS as readonly string[]).includes(name))
        throw new ActError('There is no such action on an endpoint.', 'not_found');
      return act(req, name as Act, req.params.id ?? '');
    },
  },
});
