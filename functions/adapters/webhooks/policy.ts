import { type CidrList, parseCidrs } from '#core/address-policy';
import { inLambda } from '#shared/config';

// Where webhooks may go. In AWS: https only, no exemptions. The local stack may deliver over http
// and exempt HERALD_WEBHOOK_ALLOW_CIDRS (e.g. 127.0.0.0/8 for loopback receivers in tests).

export interface AddressPolicy {
  requireHttps: boolean;
  allow: CidrList;
}

let policy: AddressPolicy | undefined;

export function webhookAddressPolicy(): AddressPolicy {
  policy ??= inLambda()
    ? { requireHttps: true, allow: [] }
    : { requireHttps: false, allow: parseCidrs(process.env.HERALD_WEBHOOK_ALLOW_CIDRS) };
  return policy;
}
