import { type EndpointConfig, getEndpoint, updateEndpointConfig } from '#adapters/webhook-endpoints';
import { conflict, notFound } from '#core/errors';
import { isId } from '#core/ids';
import { type EventType, toWebhookEndpoint, type WebhookEndpointRecord } from '#core/webhooks';
import { checkEndpointUrl } from '#usecases/support/endpoint-url';
import { type Admitted, unique } from '#usecases/support/webhook-endpoint-input';

const CLEAN = { consecutive_failures: 0 };

/** What a PATCH sets, given the endpoint as last read. */
function changes(
  current: WebhookEndpointRecord,
  body: { url?: string; event_types?: EventType[]; description?: string | null; enabled?: boolean },
  url: string | undefined,
  now: string,
): EndpointConfig {
  const set: EndpointConfig = { updated_at: now };
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

/** The endpoint is no longer at the version a console form showed (another person or tab changed it). */
export const staleEndpoint = (read: number, now: number) =>
  conflict(`The endpoint changed since version ${read} was read; it is at version ${now} now.`);

/**
 * updateWebhookEndpoint. `ifVersion` (the console's forms): apply only to that version of the
 * endpoint's configuration, else a conflict (the ladder's bookkeeping does not count as a change).
 */
export async function updateWebhookEndpoint(
  orgId: string,
  id: string,
  body: { url?: string; event_types?: EventType[]; description?: string | null; enabled?: boolean },
  now: string,
  admitted: Admitted,
  ifVersion?: number,
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
    if (ifVersion !== undefined && current.version !== ifVersion)
      throw staleEndpoint(ifVersion, current.version);
    const updated = await updateEndpointConfig(
      orgId,
      id,
      changes(current, body, url, now),
      current.state,
      ifVersion,
    );
    if (updated) return toWebhookEndpoint(updated);
  }
  throw conflict('The endpoint kept changing while it was being updated; read it and try again.');
}
