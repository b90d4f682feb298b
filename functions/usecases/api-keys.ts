import { listApiKeys, putApiKey, revokeApiKey } from '#adapters/api-keys';
import { listUsers } from '#adapters/members';
import { lastAdmittedMinutes } from '#adapters/usage';
import { type ApiKeyRecord, anyRole, canMintKeys, generateApiKey, hashApiKey } from '#core/accounts';
import { newId } from '#core/ids';
import { ActError, type Actor } from '#core/people';
import { billingPeriod } from '#core/plans';
import { hiddenCharacterIn, hiddenCharacterMessage } from '#core/text';
import { SCOPES, type Scope } from '#core/vocabulary';
import { auditEntry, authorizeAct, issuerOf } from '#usecases/support/acts';

// An organization's API keys, for the console and the admin CLI: listed (never a secret) by every
// member, minted and revoked by owners and admins (and the operator).

export interface ApiKeyView {
  id: string;
  name: string | null;
  scopes: Scope[];
  prefix: string;
  created_by: string;
  /** The creator's e-mail while they are a member (null for the operator or a removed user). */
  created_by_email: string | null;
  created_at: string;
  revoked_at: string | null;
  /** From the request gate's per-key window: the minute of the key's last admitted request. */
  last_used_at: string | null;
}

/** Longest key name kept (a label in lists, not a document). */
const NAME_MAX = 100;

const minuteIso = (minute: number | undefined) =>
  minute === undefined ? null : new Date(minute * 60_000).toISOString();

/** The later of the gate's last use and the one kept at revocation. */
const lastUse = (rec: ApiKeyRecord, gateMinute: number | undefined): string | null => {
  const gate = minuteIso(gateMinute);
  const kept = rec.last_used_at ?? null;
  return gate && kept ? (gate > kept ? gate : kept) : (gate ?? kept);
};

const view = (rec: ApiKeyRecord, lastMinute: number | undefined, email: string | undefined): ApiKeyView => ({
  id: rec.id,
  name: rec.name,
  scopes: rec.scopes,
  prefix: rec.prefix,
  created_by: rec.created_by,
  created_by_email: email ?? null,
  created_at: rec.created_at,
  revoked_at: rec.revoked_at,
  last_used_at: lastUse(rec, lastMinute),
});

/**
 * The organization's keys, newest first, with when each was last used: read from the request
 * gate's items of this month and last month (which every admitted request already writes), so
 * knowing it costs no write per request. A key unused for longer shows null.
 */
export async function listKeys(a: { orgId: string; actor: Actor; now: Date }): Promise<ApiKeyView[]> {
  await authorizeAct(a.orgId, a.actor, anyRole, 'seeing API keys');
  const thisMonth = billingPeriod(a.now.getTime());
  const lastMonth = billingPeriod(Date.parse(thisMonth.startsAt) - 1);
  const [records, lastUsed, users] = await Promise.all([
    listApiKeys(a.orgId),
    lastAdmittedMinutes(a.orgId, [thisMonth.id, lastMonth.id]),
    listUsers(a.orgId),
  ]);
  const emails = new Map(users.map((u) => [u.id, u.email]));
  return records
    .sort((x, y) => (x.id < y.id ? 1 : x.id > y.id ? -1 : 0))
    .map((rec) => view(rec, lastUsed.get(rec.id), emails.get(rec.created_by)));
}

/**
 * The keys a person minted that still work (the removal page names them: removing a person leaves
 * their keys working unless they are revoked too). Seen by everyone who sees the keys.
 */
export async function activeKeysOf(a: {
  orgId: string;
  actor: Actor;
  userId: string;
  now: Date;
}): Promise<ApiKeyView[]> {
  return (await listKeys(a)).filter((k) => k.created_by === a.userId && !k.revoked_at);
}

/** Mints a key (owners and admins). The plaintext is returned this once; only its hash is stored. */
export async function mintKey(a: {
  orgId: string;
  actor: Actor;
  scopes: string[];
  name?: string | undefined;
  now: Date;
}): Promise<{ id: string; key: string; scopes: Scope[]; name: string | null; created_at: string }> {
  const by = await authorizeAct(a.orgId, a.actor, canMintKeys, 'minting API keys');
  const scopes = validScopes(a.scopes);
  const name = a.name?.trim() || null;
  if (name && name.length > NAME_MAX) throw new ActError(`a key's name has at most ${NAME_MAX} characters`);
  const hidden = name && hiddenCharacterIn(name);
  if (hidden) throw new ActError(hiddenCharacterMessage('The name', hidden));
  const key = generateApiKey();
  const rec: ApiKeyRecord = {
    id: newId('key', a.now.getTime()),
    org_id: a.orgId,
    name,
    scopes,
    created_by: issuerOf(by),
    created_at: a.now.toISOString(),
    revoked_at: null,
    prefix: key.slice(0, 13),
  };
  const audit = auditEntry({ ...by, orgId: a.orgId }, 'key_minted', rec.id, { name, scopes }, a.now);
  await putApiKey(hashApiKey(key), rec, audit);
  return { id: rec.id, key, scopes: rec.scopes, name: rec.name, created_at: rec.created_at };
}

/** At least one scope, each a known one; duplicates dropped, in the manifest's order. */
function validScopes(given: string[]): Scope[] {
  const unknown = given.filter((s) => !(SCOPES as readonly string[]).includes(s));
  if (unknown.length)
    throw new ActError(`unknown scope ${unknown.join(', ')}: the scopes are ${SCOPES.join(', ')}`);
  if (!given.length) throw new ActError(`choose at least one scope: ${SCOPES.join(', ')}`);
  return SCOPES.filter((s) => given.includes(s));
}

/**
 * Revokes a key (owners and admins): its next request is refused on every container (the request
 * gate, see revokeApiKey). Revoking it again changes nothing and says when it was revoked.
 */
export async function revokeKey(a: {
  orgId: string;
  actor: Actor;
  keyId: string;
  now: Date;
}): Promise<ApiKeyView> {
  const by = await authorizeAct(a.orgId, a.actor, canMintKeys, 'revoking API keys');
  const thisMonth = billingPeriod(a.now.getTime());
  const nextMonth = billingPeriod(Date.parse(thisMonth.endsAt));
  const lastMonth = billingPeriod(Date.parse(thisMonth.startsAt) - 1);
  // Read before the revocation replaces the gate's entry; a request admitted in between is at
  // most that same minute.
  const lastUsed = (await lastAdmittedMinutes(a.orgId, [thisMonth.id, lastMonth.id])).get(a.keyId);
  const lastUsedAt = minuteIso(lastUsed);
  const detail = { last_used_at: lastUsedAt };
  const audit = auditEntry({ ...by, orgId: a.orgId }, 'key_revoked', a.keyId, detail, a.now);
  const res = await revokeApiKey(
    a.orgId,
    a.keyId,
    a.now.toISOString(),
    [thisMonth.id, nextMonth.id],
    audit,
    lastUsedAt,
  );
  if (!res) throw new ActError(`no key ${a.keyId} in organization ${a.orgId}`, 'not_found');
  if (res.outcome === 'already_revoked')
    throw new ActError(
      `key ${a.keyId} is already revoked${res.key.revoked_at ? ` (since ${res.key.revoked_at})` : ''}`,
      'conflict',
    );
  // Its creator is not read back here.
  return view(res.key, undefined, undefined);
}
