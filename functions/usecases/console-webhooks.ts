import type * as z from 'zod/mini';
import { putAudit } from '#adapters/audit-log';
import { getEndpoint } from '#adapters/webhook-endpoints';
import { anyRole, canManageWebhooks } from '#core/accounts';
import { ApiError, ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import { ActError, type Actor, type AuditAction, type AuditEntry } from '#core/people';
import { hasFeature } from '#core/plans';
import { CreateWebhookEndpointBody, UpdateWebhookEndpointBody } from '#core/requests';
import { hiddenCharacterIn, hiddenCharacterMessage } from '#core/text';
import {
  EVENT_TYPES,
  type EventType,
  ladderDeadlines,
  MAX_ENDPOINTS_PER_ORG,
  toWebhookEndpoint,
  type WebhookEndpointRecord,
} from '#core/webhooks';
import { timeScale } from '#shared/config';
import { createWebhookEndpoint } from '#usecases/create-webhook-endpoint';
import { deleteWebhookEndpoint } from '#usecases/delete-webhook-endpoint';
import { listWebhookDeliveries } from '#usecases/list-webhook-deliveries';
import { listWebhookEndpoints } from '#usecases/list-webhook-endpoints';
import { rotateWebhookSecret } from '#usecases/rotate-webhook-secret';
import { type Authorized, auditEntry, authorizeAct, unmetered } from '#usecases/support/acts';
import { testWebhookEndpoint } from '#usecases/test-webhook-endpoint';
import { updateWebhookEndpoint } from '#usecases/update-webhook-endpoint';

// The console's webhook endpoints: the API's own use cases (the same address checks, ladder rules,
// secret sealing and rotation overlap), with the person's role checked first and each act recorded
// in the audit log right after it (the API's writes are not transactions this could join; a crash
// between the two loses the entry, never the act). A person looking is not an API request: nothing
// here is metered. Secrets are answered only by create and rotate, to owners and admins.

/** Admits the API use cases without counting them: the console is not an API client. */

export type EndpointView = ReturnType<typeof toWebhookEndpoint>;
export type DeliveryView = Awaited<ReturnType<typeof listWebhookDeliveries>>['data'][number];

/** The form fields a refusal can be about. */
export type WebhookField = 'url' | 'event_types' | 'description';

/** A refused form field: the console shows the message by the field, and nothing was stored. */
export class WebhookFieldError extends ActError {
  constructor(
    readonly field: WebhookField,
    message: string,
  ) {
    super(message, 'invalid');
    this.name = 'WebhookFieldError';
  }
}

const WHAT = 'managing webhook endpoints';

/** Owners and admins, on a plan that has webhooks (the API's feature gate, as a person reads it). */
async function authorizeManage(orgId: string, actor: Actor): Promise<Authorized> {
  const by = await authorizeAct(orgId, actor, canManageWebhooks, WHAT);
  if (!hasFeature(by.org.plan, 'webhooks'))
    throw new ActError(
      `The ${by.org.plan} plan does not include webhooks; the operator can move the workspace to a plan that does.`,
      'forbidden',
    );
  return by;
}

const STATUS_KIND: Record<number, ActError['kind']> = {
  400: 'invalid',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  429: 'rate_limited',
};

const FIELD_MESSAGES: Record<WebhookField, string> = {
  url: 'Enter the address Herald should send events to, like https://hooks.example.com/herald (at most 2,048 characters).',
  event_types: 'Choose at least one event to send.',
  description: 'A description has at most 500 characters.',
};

/** The API's refusals in a person's words: a field's by the field, the rest as their status page. */
function asPersonError(err: unknown): unknown {
  if (err instanceof ValidationError) {
    const first = err.errors?.[0];
    const field = (first?.pointer.split('/')[1] ?? 'url') as WebhookField;
    // The address checks' words ("Must be an https URL.") are about the URL.
    const message =
      field === 'url' && first
        ? `The URL ${first.message.charAt(0).toLowerCase()}${first.message.slice(1)}`
        : FIELD_MESSAGES[field];
    return new WebhookFieldError(field in FIELD_MESSAGES ? field : 'url', message);
  }
  if (err instanceof ApiError) {
    if (err.code === 'resource_not_found')
      return new ActError(
        'This workspace has no such webhook endpoint; it may have been deleted.',
        'not_found',
      );
    return new ActError(err.message, STATUS_KIND[err.status] ?? 'invalid');
  }
  return err;
}

/** A console form's version is no longer the endpoint's (another person or tab changed it). */
export const STALE_ENDPOINT =
  'This endpoint changed after you opened the page, so nothing was saved. Below is how it is now; make your change again if you still want it.';

/** updateWebhookEndpoint at the form's version: its conflicts are a stale page, in a person's words. */
async function updateAtVersion(...args: Parameters<typeof updateWebhookEndpoint>) {
  try {
    return await updateWebhookEndpoint(...args);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'resource_conflict')
      throw new ActError(STALE_ENDPOINT, 'conflict');
    throw asPersonError(err);
  }
}

async function personal<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw asPersonError(err);
  }
}

/** The form's fields checked with the API's own request schema; the first refusal by its field. */
function checked<S extends z.ZodMiniType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const key = String(parsed.error.issues[0]?.path[0] ?? 'url');
  const field: WebhookField = key in FIELD_MESSAGES ? (key as WebhookField) : 'url';
  throw new WebhookFieldError(field, FIELD_MESSAGES[field]);
}

/** What a person typed: the event types they ticked that exist, in the API's order. */
const eventTypesOf = (given: readonly string[]): EventType[] => EVENT_TYPES.filter((t) => given.includes(t));

/**
 * The audit log keeps an endpoint's host, not its URL: receivers' URLs often carry a token in their
 * path (chat hooks), and the log must never hold a secret.
 */
const hostOf = (url: string) => {
  try {
    return new URL(url).host;
  } catch {
    return null;
  }
};

async function audited(
  by: Authorized,
  orgId: string,
  action: AuditAction,
  target: string,
  detail: AuditEntry['detail'],
  now: Date,
) {
  await putAudit(auditEntry({ ...by, orgId }, action, target, detail, now));
}

export interface EndpointListItem extends EndpointView {
  /** The most recently attempted delivery, if the log has any. */
  last_delivery: DeliveryView | null;
}

/**
 * The workspace's endpoints (at most MAX_ENDPOINTS_PER_ORG: one page), newest first, each with its
 * latest delivery. Every member. `webhooks`: whether the plan includes them (acts need it).
 */
export async function listEndpointsForPerson(a: {
  orgId: string;
  actor: Actor;
  cursorSecret: string;
}): Promise<{ endpoints: EndpointListItem[]; webhooks: boolean; plan: string }> {
  const [by, page] = await Promise.all([
    authorizeAct(a.orgId, a.actor, anyRole, 'seeing webhook endpoints'),
    listWebhookEndpoints(a.orgId, { limit: MAX_ENDPOINTS_PER_ORG }, a.cursorSecret),
  ]);
  const endpoints = await Promise.all(
    page.data.map(async (e) => {
      // Deleted meanwhile: listed as it was read, without a log.
      const log = await listWebhookDeliveries(a.orgId, e.id, { limit: 1 }, a.cursorSecret).catch(
        (err: unknown) => {
          if (err instanceof ApiError && err.code === 'resource_not_found') return { data: [] };
          throw err;
        },
      );
      return { ...e, last_delivery: log.data[0] ?? null };
    }),
  );
  return { endpoints, webhooks: hasFeature(by.org.plan, 'webhooks'), plan: by.org.plan };
}

export interface EndpointDetail {
  endpoint: EndpointView;
  /** The configuration's version: the edit and enable forms carry it (stale pages are refused). */
  version: number;
  deliveries: Awaited<ReturnType<typeof listWebhookDeliveries>>;
  /** While a failure streak runs: when the ladder warns and when it turns the endpoint off. */
  ladder: { warn_at: string; disable_at: string } | null;
  webhooks: boolean;
}

/** One endpoint with a page of its delivery log (most recently attempted first). Every member. */
export async function getEndpointForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  after?: string | undefined;
  cursorSecret: string;
}): Promise<EndpointDetail> {
  const [by, deliveries, rec] = await personal(() =>
    Promise.all([
      authorizeAct(a.orgId, a.actor, anyRole, 'seeing webhook endpoints'),
      listWebhookDeliveries(a.orgId, a.id, { after: a.after }, a.cursorSecret),
      getEndpoint(a.orgId, a.id),
    ]),
  );
  if (!rec) throw asPersonError(new ApiError('resource_not_found', 'gone'));
  return {
    endpoint: toWebhookEndpoint(rec),
    version: rec.version,
    deliveries,
    ladder: ladderOf(rec),
    webhooks: hasFeature(by.org.plan, 'webhooks'),
  };
}

function ladderOf(rec: WebhookEndpointRecord): EndpointDetail['ladder'] {
  const since = rec.failure.failing_since;
  if (!since || (rec.state !== 'active' && rec.state !== 'warning')) return null;
  return ladderDeadlines(since, timeScale());
}

export interface EndpointForm {
  url: string;
  description: string;
  eventTypes: readonly string[];
}

/** The form's description; one with a hidden format character is refused by its field. */
function describedAs(text: string): string | null {
  const hidden = hiddenCharacterIn(text);
  if (hidden) throw new WebhookFieldError('description', hiddenCharacterMessage('The description', hidden));
  return text.trim() || null;
}

/** Creates an endpoint (owners and admins); its signing secret is answered this once. */
export async function createEndpointForPerson(a: {
  orgId: string;
  actor: Actor;
  form: EndpointForm;
  now: Date;
}): Promise<{ endpoint: EndpointView; secret: string }> {
  const by = await authorizeManage(a.orgId, a.actor);
  const body = checked(CreateWebhookEndpointBody(), {
    url: a.form.url.trim(),
    event_types: eventTypesOf(a.form.eventTypes),
    description: describedAs(a.form.description),
  });
  const { secret, ...endpoint } = await personal(() =>
    createWebhookEndpoint(a.orgId, body, a.now.toISOString(), unmetered),
  );
  await audited(
    by,
    a.orgId,
    'webhook_created',
    endpoint.id,
    { host: hostOf(endpoint.url), event_types: endpoint.event_types },
    a.now,
  );
  return { endpoint, secret };
}

/**
 * Changes an endpoint's URL, events, description and whether it is on (owners and admins), only if
 * it is still at `version` — the one the person's page showed. `enabled` is sent only when the person
 * changed it, so saving a new URL does not turn an auto-disabled endpoint into a disabled one.
 */
export async function editEndpointForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  form: EndpointForm & { enabled: boolean; wasEnabled: boolean };
  version: number;
  now: Date;
}): Promise<EndpointView> {
  const by = await authorizeManage(a.orgId, a.actor);
  const body = checked(UpdateWebhookEndpointBody(), {
    url: a.form.url.trim(),
    event_types: eventTypesOf(a.form.eventTypes),
    description: describedAs(a.form.description),
    ...(a.form.enabled !== a.form.wasEnabled ? { enabled: a.form.enabled } : {}),
  });
  const updated = await updateAtVersion(
    a.orgId,
    a.id,
    body,
    a.now.toISOString(),
    unmetered,
    versionOf(a.version),
  );
  await audited(
    by,
    a.orgId,
    'webhook_updated',
    a.id,
    {
      host: hostOf(updated.url),
      event_types: updated.event_types,
      enabled: updated.enabled,
      state: updated.state,
    },
    a.now,
  );
  return updated;
}

/** A form's version that is not a positive integer can match no endpoint: a stale-page conflict. */
const versionOf = (v: number) => (Number.isSafeInteger(v) && v > 0 ? v : 0);

/**
 * Re-enables an endpoint the ladder (or a person) turned off, exactly as the API's
 * `PATCH {enabled: true}`: the failure streak is cleared and deliveries resume. An endpoint that is
 * already on, or changed since the page was shown, is a conflict.
 */
export async function enableEndpointForPerson(a: {
  orgId: string;
  actor: Actor;
  id: string;
  version: number;
  now: Date;
}): Promise<EndpointView> {
  const by = await authorizeManage(a.orgId, a.actor);
  const before = await personal(async () => {
    const rec = isId('webhook', a.id) ? await getEndpoint(a.orgId, a.id) : null;
    if (!rec) throw new ApiError('resource_not_found', 'gone');
    return rec;
  });
  if (before.state === 'active' || before.state === 'warning')
    throw new ActError(
      'This endpoint is already on: it receives deliveries. Nothing was changed.',
      'conflict',
    );
  const updated = await updateAtVersion(
    a.orgId,
    a.id,
    { enabled: true },
    a.now.toISOString(),
    unmetered,
    versionOf(a.version),
  );
  await audited(by, a.orgId, 'webhook_enabled', a.id, { previous_state: before.state }, a.now);
  return updated;
}

/** Sends one signed `webhook.test` now (owners and admins); the result is in the delivery log too. */
export async function testEndpointForPerson(a: { orgId: string; actor: Actor; id: string; now: Date }) {
  const by = await authorizeManage(a.orgId, a.actor);
  const result = await personal(() => testWebhookEndpoint(a.orgId, a.id, unmetered));
  await audited(
    by,
    a.orgId,
    'webhook_tested',
    a.id,
    { delivered: result.delivered, status_code: result.status_code },
    a.now,
  );
  return result;
}

/**
 * A new signing secret (owners and admins), answered this once; the previous one keeps signing
 * (a second signature) until `previous_secret_expires_at`, as the API's rotation does.
 */
export async function rotateSecretForPerson(a: { orgId: string; actor: Actor; id: string; now: Date }) {
  const by = await authorizeManage(a.orgId, a.actor);
  const rotated = await personal(() => rotateWebhookSecret(a.orgId, a.id, a.now.toISOString(), unmetered));
  await audited(
    by,
    a.orgId,
    'webhook_secret_rotated',
    a.id,
    { previous_secret_expires_at: rotated.previous_secret_expires_at },
    a.now,
  );
  return rotated;
}

/** Deletes an endpoint (owners and admins); deliveries still pending find it gone and stop. */
export async function deleteEndpointForPerson(a: { orgId: string; actor: Actor; id: string; now: Date }) {
  const by = await authorizeManage(a.orgId, a.actor);
  const rec = isId('webhook', a.id) ? await getEndpoint(a.orgId, a.id) : null;
  await personal(() => deleteWebhookEndpoint(a.orgId, a.id, unmetered));
  await audited(by, a.orgId, 'webhook_deleted', a.id, { host: rec ? hostOf(rec.url) : null }, a.now);
}
