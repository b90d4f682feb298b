import { webhookAddressPolicy } from '#adapters/webhooks/policy';
import { ForbiddenAddressError, resolveChecked, WebhookRequestError } from '#adapters/webhooks/safe-http';
import { sealSecret } from '#adapters/webhooks/secrets';
import {
  createEndpoint,
  deleteEndpoint,
  EndpointLimitError,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  updateEndpoint,
} from '#adapters/webhooks/store';
import { bareHostname, checkWebhookUrl, isIpLiteral, type WebhookUrlRefusal } from '#core/address-policy';
import { conflict, notFound, ValidationError } from '#core/errors';
import { isId, newId } from '#core/ids';
import {
  type EventType,
  MAX_ENDPOINTS_PER_ORG,
  newSigningSecret,
  SECRET_OVERLAP_MS,
  toWebhookDelivery,
  toWebhookEndpoint,
  type WebhookEndpointRecord,
} from '#core/webhooks';

// The webhook endpoint operations. `admitted` resolves once the rate limiter admitted the request;
// every write waits for it, so a refused request changes nothing.

type Admitted = () => Promise<unknown>;

const REFUSALS: Record<WebhookUrlRefusal, string> = {
  invalid_url: 'Must be an absolute URL.',
  scheme_not_allowed: 'Must be an http or https URL.',
  https_required: 'Must be an https URL.',
  userinfo_not_allowed: 'Must not contain a user name or password.',
  invalid_port: 'Has an invalid port.',
  missing_host: 'Must name a host.',
  forbidden_address:
    'Names or resolves to an address webhooks may not reach (private, loopback, link-local, shared, multicast, reserved or cloud metadata).',
};

const urlError = (code: WebhookUrlRefusal) =>
  new ValidationError([{ pointer: '/url', code, message: REFUSALS[code] }]);

/**
 * The address checks at create and update: the URL's syntax and literal host, then every address
 * its name resolves to. A name that does not resolve (yet) is accepted: it is checked again, with
 * its then-current answers, at every delivery.
 */
export async function checkEndpointUrl(raw: string): Promise<string> {
  const policy = webhookAddressPolicy();
  const checked = checkWebhookUrl(raw, policy);
  if (!checked.ok) throw urlError(checked.reason);
  const host = bareHostname(checked.url);
  if (!isIpLiteral(host)) {
    try {
      await resolveChecked(host, policy.allow);
    } catch (err) {
      if (err instanceof ForbiddenAddressError) throw urlError('forbidden_address');
      if (!(err instanceof WebhookRequestError)) throw err;
    }
  }
  return checked.url.href;
}

const unique = (types: readonly EventType[]) => [...new Set(types)];

export async function listWebhookEndpoints(orgId: string) {
  const endpoints = await listEndpoints(orgId);
  return { data: endpoints.map(toWebhookEndpoint), has_more: false, next_cursor: null };
}

export async function createWebhookEndpoint(
  orgId: string,
  body: { url: string; event_types: EventType[]; description?: string | null; enabled?: boolean },
  now: string,
  admitted: Admitted,
) {
  const url = await checkEndpointUrl(body.url);
  const id = newId('webhook', Date.parse(now));
  const secret = newSigningSecret();
  const enabled = body.enabled ?? true;
  const [sealed] = await Promise.all([sealSecret(orgId, id, secret), admitted()]);
  const rec: WebhookEndpointRecord = {
    entity: 'webhook_endpoint',
    id,
    org_id: orgId,
    url,
    description: body.description ?? null,
    event_types: unique(body.event_types),
    enabled,
    state: enabled ? 'active' : 'disabled',
    failure: { consecutive_failures: 0 },
    secret: { current: sealed },
    created_at: now,
    updated_at: now,
    version: 1,
  };
  try {
    await createEndpoint(rec);
  } catch (err) {
    if (err instanceof EndpointLimitError)
      throw conflict(`A workspace has at most ${MAX_ENDPOINTS_PER_ORG} webhook endpoints; delete one first.`);
    throw err;
  }
  return { ...toWebhookEndpoint(rec), secret };
}

const CLEAN = { consecutive_failures: 0 };

/** What a PATCH sets, given the endpoint as last read. */
function changes(
  current: WebhookEndpointRecord,
  body: { url?: string; event_types?: EventType[]; description?: string | null; enabled?: boolean },
  url: string | undefined,
  now: string,
): Record<string, unknown> {
  const set: Record<string, unknown> = { updated_at: now };
  if (url !== undefined) set.url = url;
  if (body.event_types !== undefined) set.event_types = unique(body.event_types);
  if (body.description !== undefined) set.description = body.description;
  if (body.enabled === false) {
    set.enabled = false;
    set.state = 'disabled';
  } else if (body.enabled === true) {
    set.enabled = true;
    // Re-enabling a stopped endpoint starts over: no streak, no ladder, deliveries resume.
    if (current.state === 'auto_disabled' || current.state === 'disabled') {
      set.state = 'active';
      set.failure = CLEAN;
    }
  }
  return set;
}

export async function updateWebhookEndpoint(
  orgId: string,
  id: string,
  body: { url?: string; event_types?: EventType[]; description?: string | null; enabled?: boolean },
  now: string,
  admitted: Admitted,
) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const [url] = await Promise.all([
    body.url === undefined ? undefined : checkEndpointUrl(body.url),
    admitted(),
  ]);
  // The ladder and the delivery workers change `state` concurrently: apply only to the state read.
  for (let round = 0; round < 3; round++) {
    const current = await getEndpoint(orgId, id);
    if (!current) throw notFound('webhook endpoint');
    const updated = await updateEndpoint(orgId, id, changes(current, body, url, now), {
      state: current.state,
    });
    if (updated) return toWebhookEndpoint(updated);
  }
  throw conflict('The endpoint kept changing while it was being updated; read it and try again.');
}

export async function deleteWebhookEndpoint(orgId: string, id: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  await admitted();
  if (!(await deleteEndpoint(orgId, id))) throw notFound('webhook endpoint');
  return { id, deleted: true as const };
}

export async function rotateWebhookSecret(orgId: string, id: string, now: string, admitted: Admitted) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const secret = newSigningSecret();
  const [current, sealed] = await Promise.all([
    getEndpoint(orgId, id),
    sealSecret(orgId, id, secret),
    admitted(),
  ]);
  if (!current) throw notFound('webhook endpoint');
  const previousUntil = new Date(Date.parse(now) + SECRET_OVERLAP_MS).toISOString();
  const updated = await updateEndpoint(
    orgId,
    id,
    {
      secret: { current: sealed, previous: current.secret.current, previous_until: previousUntil },
      updated_at: now,
    },
    { 'secret.current': current.secret.current },
  );
  if (!updated) {
    if (!(await getEndpoint(orgId, id))) throw notFound('webhook endpoint');
    throw conflict('The secret was rotated concurrently; rotate again if you need a new one.');
  }
  return { id, secret, previous_secret_expires_at: previousUntil };
}

export async function listWebhookDeliveries(orgId: string, id: string) {
  if (!isId('webhook', id)) throw notFound('webhook endpoint');
  const [endpoint, deliveries] = await Promise.all([getEndpoint(orgId, id), listDeliveries(orgId, id)]);
  if (!endpoint) throw notFound('webhook endpoint');
  return { data: deliveries.map(toWebhookDelivery) };
}
