import type { Org, OrgSettings } from '#core/accounts';
import type { Actor } from '#core/people';

// STUB (foundation commit): replaced by the people work.

export async function getSettings(_a: {
  orgId: string;
  actor: Actor;
}): Promise<{ org: Org; settings: Required<OrgSettings> }> {
  throw new Error('not implemented');
}

export async function updateSettings(_a: {
  orgId: string;
  actor: Actor;
  patch: Partial<OrgSettings>;
  now: Date;
}): Promise<{ org_id: string; settings: Required<OrgSettings> }> {
  throw new Error('not implemented');
}
