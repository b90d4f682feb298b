import { webhookAddressPolicy } from '#adapters/webhooks/policy';
import { ForbiddenAddressError, resolveChecked, WebhookRequestError } from '#adapters/webhooks/safe-http';
import { getEndpoint, updateEndpoint } from '#adapters/webhooks/store';
import { bareHostname, checkWebhookUrl, isIpLiteral, type WebhookUrlRefusal } from '#core/address-policy';
import { conflict, notFound, ValidationError } from '#core/errors';
import { isId } from '#core/ids';
import { type EventType, toWebhookEndpoint, type WebhookEndpointRecord } from '#core/webhooks';
import { type Admitted, unique } from './webhook-endpoints.ts';

// The operations that check a webhook URL against the address policy: update here, create in
// webhook-secrets.ts (through checkEndpointUrl).

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

/** A slow resolver must not hold an API request: past it the name counts as unresolved. */
const RESOLVE_BUDGET_MS = 3000;

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
      await resolveChecked(host, policy.allow, undefined, RESOLVE_BUDGET_MS);
    } catch (err) {
      if (err instanceof ForbiddenAddressError) throw urlError('forbidden_address');
      if (!(err instanceof WebhookRequestError)) throw err;
    }
  }
  return checked.url.href;
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
  // A refused URL touches nothing; after it, the first read runs alongside the admission (which
  // started with the request): one round trip before the write, not two.
  const url = body.url === undefined ? undefined : await checkEndpointUrl(body.url);
  const [, first] = await Promise.all([admitted(), getEndpoint(orgId, id)]);
  // The ladder and the delivery workers change `state` concurrently: apply only to the state read.
  for (let round = 0; round < 3; round++) {
    const current = round === 0 ? first : await getEndpoint(orgId, id);
    if (!current) throw notFound('webhook endpoint');
    const updated = await updateEndpoint(orgId, id, changes(current, body, url, now), {
      state: current.state,
    });
    if (updated) return toWebhookEndpoint(updated);
  }
  throw conflict('The endpoint kept changing while it was being updated; read it and try again.');
}
