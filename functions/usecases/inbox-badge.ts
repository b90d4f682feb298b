import { countUnread } from '#adapters/inbox';
import { INBOX_UNREAD_CAP } from '#core/inbox';
import { hasFeature, type PlanName } from '#core/plans';
import { logger } from '#shared/logger';

// The console navigation's unread count, read for every signed-in page: kept apart from the inbox's
// other use cases so every console function's bundle carries only this one index read.

/**
 * Unread items of the organization, at most INBOX_UNREAD_CAP + 1 (so "99+" can be told from 99);
 * null where the plan has no inbox, and when the count could not be read: a badge is not worth
 * failing the page it sits on (the inbox page itself reads the items). The count is read while the
 * plan is (`plan`: the frame's own read of the organization), so it adds no round trip to the page.
 */
export async function unreadBadge(orgId: string, plan: Promise<PlanName>): Promise<number | null> {
  const count = countUnread(orgId, INBOX_UNREAD_CAP + 1).catch((err: unknown) => {
    logger.warn('inbox unread count not read', { error: err as Error, org_id: orgId });
    return null;
  });
  const [known, unread] = await Promise.all([plan, count]);
  return hasFeature(known, 'inbox') ? unread : null;
}
