import { type Pending, pendingContext } from '#adapters/channel-connections';
import { open, type Sealed, seal } from '#adapters/sealed';
import type { ConnectionRecord } from '#core/connections';

// A connection session's secrets while it is open (the PKCE verifier; the grant while the person
// picks an account), sealed under the session's own context. Apart from channel-connections.ts so that
// reading a session needs no key and no KMS client in its bundle.

export const sealPending = (
  rec: Pick<ConnectionRecord, 'org_id' | 'id'>,
  pending: Pending,
): Promise<Sealed> => seal(pendingContext(rec.org_id, rec.id), pending);

export async function openPending(
  rec: Pick<ConnectionRecord, 'org_id' | 'id'>,
  sealed: Sealed | null,
): Promise<Pending | null> {
  return sealed ? open<Pending>(pendingContext(rec.org_id, rec.id), sealed) : null;
}
