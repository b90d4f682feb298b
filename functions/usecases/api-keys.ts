import type { Actor } from '#core/people';
import type { Scope } from '#lib/operations';

// STUB (foundation commit): replaced by the people work.

export interface ApiKeyView {
  id: string;
  name: string | null;
  scopes: Scope[];
  prefix: string;
  created_by: string;
  created_at: string;
  revoked_at: string | null;
  /** From the request gate's per-key window: the minute of the key's last admitted request. */
  last_used_at: string | null;
}

export async function listKeys(_a: { orgId: string; actor: Actor; now: Date }): Promise<ApiKeyView[]> {
  throw new Error('not implemented');
}

export async function mintKey(_a: {
  orgId: string;
  actor: Actor;
  scopes: string[];
  name?: string | undefined;
  now: Date;
}): Promise<{ id: string; key: string; scopes: Scope[]; name: string | null; created_at: string }> {
  throw new Error('not implemented');
}

export async function revokeKey(_a: {
  orgId: string;
  actor: Actor;
  keyId: string;
  now: Date;
}): Promise<ApiKeyView> {
  throw new Error('not implemented');
}
