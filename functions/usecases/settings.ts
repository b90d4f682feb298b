import { updateOrgSettings } from '#adapters/orgs';
import { anyRole, canChangeSettings, type Org, type OrgSettings, settingsOf } from '#core/accounts';
import { landingOrigin } from '#core/connections';
import { ActError, type Actor } from '#core/people';
import { auditEntry, authorizeAct } from '#usecases/support/acts';

// The workspace settings: every member sees them, owners (and the operator) change them. They are
// read from the org item on every API and MCP request that depends on them (the request gate's
// org read, createChannelConnection), so a change applies from the very next request.

/** The settings and their version (what a form sends back, so a stale one is refused). */
export async function getSettings(a: {
  orgId: string;
  actor: Actor;
}): Promise<{ org: Org; settings: Required<OrgSettings>; version: number }> {
  const { org } = await authorizeAct(a.orgId, a.actor, anyRole, 'seeing the settings');
  return { org, settings: settingsOf(org), version: org.settings_version ?? 0 };
}

const STALE_SETTINGS =
  'The settings were changed meanwhile, by someone else or in another tab. Nothing was saved: here they are as they are now.';

/**
 * Changes the settings in `patch` (owners); the others stay. `landing_origins` replaces the list;
 * each entry must be an http(s) origin and is stored normalized, without duplicates. With
 * `version` (the console's form, which sends the whole state), refused as a conflict when the
 * settings changed since it was read; without it (the CLI's patch of the named settings), applied.
 */
export async function updateSettings(a: {
  orgId: string;
  actor: Actor;
  patch: Partial<OrgSettings>;
  version?: number;
  now: Date;
}): Promise<{ org_id: string; settings: Required<OrgSettings> }> {
  const by = await authorizeAct(a.orgId, a.actor, canChangeSettings, 'changing workspace settings');
  const patch = validPatch(a.patch);
  const version = a.version ?? null;
  if (version !== null && !(Number.isSafeInteger(version) && version >= 0))
    throw new ActError(STALE_SETTINGS, 'conflict');
  const audit = auditEntry({ ...by, orgId: a.orgId }, 'settings_changed', null, { ...patch }, a.now);
  if (!(await updateOrgSettings(a.orgId, patch, version, a.now.toISOString(), audit))) {
    // The org was read just now (authorizeAct): refused with a version, it is the version's doing.
    if (version !== null) throw new ActError(STALE_SETTINGS, 'conflict');
    throw new ActError(`no organization ${a.orgId}`, 'not_found');
  }
  return { org_id: a.orgId, settings: settingsOf({ settings: { ...by.org.settings, ...patch } }) };
}

/** Only the known settings, each of its type; at least one. */
function validPatch(given: Partial<OrgSettings>): Partial<OrgSettings> {
  const patch: Partial<OrgSettings> = {};
  for (const flag of ['dangerous_ops', 'approval_required'] as const) {
    const value = given[flag];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') throw new ActError(`${flag} is on or off (true or false)`);
    patch[flag] = value;
  }
  if (given.landing_origins !== undefined) {
    if (!Array.isArray(given.landing_origins)) throw new ActError('landing_origins is a list of origins');
    const origins = given.landing_origins.map((raw) => {
      const origin = typeof raw === 'string' ? landingOrigin(raw.trim()) : undefined;
      if (!origin)
        throw new ActError(
          `${String(raw)} is not an origin: give scheme, host and port only, like https://app.example.com`,
        );
      return origin;
    });
    patch.landing_origins = [...new Set(origins)];
  }
  const unknown = Object.keys(given).filter(
    (k) => !['dangerous_ops', 'approval_required', 'landing_origins'].includes(k),
  );
  if (unknown.length) throw new ActError(`no such setting: ${unknown.join(', ')}`);
  if (!Object.keys(patch).length)
    throw new ActError('nothing to set: give dangerous_ops, approval_required and/or landing_origins');
  return patch;
}
