import { mapLimit } from '#core/concurrency';
import type { Choice, ChoicesContext } from '../types.ts';
import { Auth, call } from './client.ts';
import { linkedinError } from './errors.ts';

// The organizations the member administers (`organization`): GET /rest/organizationAcls
// (q=roleAssignee, role ADMINISTRATOR, state APPROVED; paged by start/count), then each one's name
// (GET /rest/organizations/{id}). Both need r_organization_admin (the Community Management API),
// which Herald asks for only when the operator's platform app has it: without it LinkedIn answers
// 403 and the list is empty with a note saying so. Each organization is connected as a channel of
// its own; the list says which ones this member could connect.

const COUNT = 100;
/** Names read at once, and organizations named at most (past that the list says it was cut). */
const CONCURRENCY = 4;
const MAX_ORGS = 100;

interface Acls {
  elements?: Array<{ organization?: string; role?: string; state?: string }>;
  paging?: { start?: number; count?: number; total?: number };
}

export async function choices(ctx: ChoicesContext): Promise<Record<string, Choice[]>> {
  const auth = new Auth(ctx);
  await auth.token();
  const urns: string[] = [];
  for (let start = 0; urns.length < MAX_ORGS; start += COUNT) {
    const q = `q=roleAssignee&role=ADMINISTRATOR&state=APPROVED&start=${start}&count=${COUNT}`;
    const res = await call<Acls>(auth, 'GET', `/rest/organizationAcls?${q}`);
    if (res.status === 403) {
      ctx.note?.({
        code: 'scope_not_granted',
        option: 'organization',
        scope: 'r_organization_admin',
        message:
          "LinkedIn lists the organizations a member administers only with r_organization_admin: the operator adds it (and w_organization_social) to the LinkedIn platform app's scopes (herald platform-app set --scopes), then the channel is connected again.",
      });
      return { organization: [] };
    }
    if (res.status !== 200) throw linkedinError(res, 'organizationAcls');
    const page = res.body.elements ?? [];
    for (const e of page) {
      if (typeof e.organization === 'string' && e.organization.startsWith('urn:li:organization:'))
        urns.push(e.organization);
    }
    const total = res.body.paging?.total;
    if (page.length < COUNT || (typeof total === 'number' && start + COUNT >= total)) break;
  }
  const unique = [...new Set(urns)];
  if (unique.length > MAX_ORGS)
    ctx.note?.({
      code: 'list_truncated',
      option: 'organization',
      message: `Only the first ${MAX_ORGS} organizations are listed.`,
    });
  const organization = await mapLimit(unique.slice(0, MAX_ORGS), CONCURRENCY, async (urn) => {
    const id = urn.split(':').at(-1) ?? '';
    const res = await call<{ localizedName?: string; vanityName?: string }>(
      auth,
      'GET',
      `/rest/organizations/${encodeURIComponent(id)}`,
    );
    if (res.status !== 200) throw linkedinError(res, 'organizations');
    return { value: urn, label: res.body.localizedName ?? res.body.vanityName ?? urn };
  });
  return { organization };
}
