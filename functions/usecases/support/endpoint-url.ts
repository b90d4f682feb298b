import { webhookAddressPolicy } from '#adapters/webhooks/policy';
import { ForbiddenAddressError, resolveChecked, WebhookRequestError } from '#adapters/webhooks/safe-http';
import { bareHostname, checkWebhookUrl, isIpLiteral, type WebhookUrlRefusal } from '#core/address-policy';
import { ValidationError } from '#core/errors';

// The address checks of a webhook URL at create and update (delivery checks again: safe-http).

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
