import type { Context } from 'aws-lambda';
import { putAudit } from '#adapters/audit-log';
import { getChannel } from '#adapters/channels';
import { checkIdempotencyKey, idempotent } from '#adapters/idempotency';
import { appendReply, getInboxItem, ItemChangedError } from '#adapters/inbox-replies';
import { getOrg } from '#adapters/orgs';
import { canActOnPosts, type Org } from '#core/accounts';
import { ApiError, conflict, notFound, ValidationError } from '#core/errors';
import { isId, newId } from '#core/ids';
import { INBOX, type InboxItem, type InboxItemRecord, type InboxReply } from '#core/inbox';
import { hasRoom, newReply } from '#core/inbox-replies';
import { replyTextErrors, replyUnsupported } from '#core/inbox-reply-rules';
import { ActError, type Actor } from '#core/people';
import { auditEntry, authorizeAct, unmetered } from '#usecases/support/acts';
import { requireOrg } from '#usecases/support/post-writes';

/** A reply as the API shows it (the item's `replies` entries). */
export type Reply = InboxItem['replies'][number];

/** Tries of the read-decide-append step before a 409 (the item kept changing under other writers). */
const TRIES = 4;

const itemNotFound = () => notFound('inbox item');

const dangerousOpsDisabled = () =>
  new ApiError(
    'dangerous_ops_disabled',
    'Replying to inbox items publishes at once: it is off for this workspace until an owner turns on Dangerous AI operations.',
  );

interface QueueArgs {
  orgId: string;
  itemId: string;
  body: string;
  now: Date;
  /** Who asks (`key_…` or `usr_…`), kept on the reply. */
  by: string;
  /** The API key's callers need the dangerous-operations toggle; a person in the console their role. */
  needsToggle: boolean;
  /** The request's admission (the API's gate): awaited after the reads, before the write. */
  admitted: () => Promise<unknown>;
  /** The reply's id, when the caller minted it (the console's form): the same id twice is one reply. */
  replyId?: string | undefined;
}

/**
 * replyToInboxItem. Primary course: read the organization and the item together → the toggle
 * (API keys: 403 before 404, as every dangerous operation) → the item (404 for a missing one or
 * another organization's) → whether its platform can answer its kind (409 reply_unsupported) →
 * the text against the platform's limit (400, pointer `/body`) → its channel still connected
 * (409) → one conditional append of the reply, `queued`, at the item's version. The stream
 * relay sends the reply's message from that change (the outbox: a crash after the write loses
 * nothing) and the inbox reply worker sends it once. A refusal writes nothing.
 */
async function queueReply(a: QueueArgs): Promise<Reply> {
  // One id for every try of this request: an append whose answer was lost is recognised as ours.
  const reply = newReply(a.replyId ?? newId('reply', a.now.getTime()), a.body, a.by, a.now);
  let known: InboxItemRecord | null | undefined;
  for (let attempt = 1; ; attempt++) {
    const [org, item] = await Promise.all([
      a.needsToggle && attempt === 1 ? getOrg(a.orgId) : Promise.resolve<Org | null>(null),
      known !== undefined ? Promise.resolve(known) : readItem(a.orgId, a.itemId),
    ]);
    if (a.needsToggle && attempt === 1 && !requireOrg(org).settings.dangerous_ops)
      throw dangerousOpsDisabled();
    if (!item) throw itemNotFound();
    const mine = item.replies?.find((r) => r.id === reply.id);
    if (mine) return shown(mine);
    if (attempt === 1) await checkReplyable(item, a.body);
    if (!hasRoom(item))
      throw conflict(
        `The item holds ${item.replies.length} replies, the most one item keeps; answer the author's next comment or message instead.`,
      );
    if (attempt === 1) await a.admitted();
    try {
      return shown(findReply(await appendReply(item, reply, a.now), reply.id) ?? reply);
    } catch (err) {
      if (!(err instanceof ItemChangedError) || attempt >= TRIES) {
        if (err instanceof ItemChangedError)
          throw conflict('The inbox item changed while the reply was being added; retry.');
        throw err;
      }
      known = err.current;
    }
  }
}

async function readItem(orgId: string, itemId: string): Promise<InboxItemRecord | null> {
  // A malformed id reads nothing: it is a 404 (after the toggle).
  const item = isId('inbox', itemId) ? await getInboxItem(orgId, itemId) : null;
  // The key's organization only: an item is read under its own partition, so another's is missing.
  return item && item.org_id === orgId ? item : null;
}

const findReply = (item: InboxItemRecord, id: string) => item.replies?.find((r) => r.id === id);

/** What the platform lets an app answer, the text's length, and the channel it goes out on. */
async function checkReplyable(item: InboxItemRecord, body: string): Promise<void> {
  if (!INBOX[item.platform].replies.includes(item.kind)) throw replyUnsupported(item.platform, item.kind);
  const errors = replyTextErrors(item.platform, item.kind, body, item.author.handle);
  if (errors.length) throw new ValidationError(errors);
  const channel = await getChannel(item.org_id, item.channel_id);
  if (!channel || channel.status === 'disconnected')
    throw conflict(
      "The item's channel was disconnected: connect its account again (createChannelConnection with its channel_id), then reply.",
    );
  if (channel.status === 'reauth_required')
    throw conflict(
      `The ${channel.platform} channel ${channel.handle} needs reconnecting (the platform refuses its grant): reconnect it in place, then reply.`,
    );
}

const shown = (r: InboxReply): Reply => ({
  id: r.id,
  text: r.text,
  stage: r.stage,
  external_id: r.external_id,
  url: r.url,
  error: r.error,
  created_at: r.created_at,
});

/** Recorded as JSON text, so a replay is byte for byte the first answer. */
const queueReplyIdempotent = idempotent<{ item_id: string; body: string }, { args: QueueArgs }>(
  'replyToInboxItem',
  async (call) => ({
    status: 202,
    json: JSON.stringify(await queueReply(call.context.args)),
  }),
);

/**
 * replyToInboxItem as the API runs it (an API key, directly or through MCP): it needs the
 * Dangerous AI operations toggle. With an Idempotency-Key, once per key (a retry gets the first
 * answer byte for byte, `replayed`), the item's id part of what the key stands for; without one,
 * every call queues a reply.
 */
export async function replyToInboxItemByKey(a: {
  orgId: string;
  keyId: string;
  itemId: string;
  body: string;
  idempotencyKey: string | undefined;
  now: Date;
  admitted: () => Promise<unknown>;
  lambda: Context;
}): Promise<{ status: number; json: string; replayed?: boolean }> {
  const key = checkIdempotencyKey(a.idempotencyKey);
  const args: QueueArgs = {
    orgId: a.orgId,
    itemId: a.itemId,
    body: a.body,
    now: a.now,
    by: a.keyId,
    needsToggle: true,
    admitted: a.admitted,
  };
  if (key === undefined) return { status: 202, json: JSON.stringify(await queueReply(args)) };
  // Admitted before the idempotency record is written: a refused request writes nothing.
  await a.admitted();
  return queueReplyIdempotent(
    { org_id: a.orgId, key, body: { item_id: a.itemId, body: a.body }, context: { args } },
    a.lambda,
  );
}

/**
 * A person's reply from the console (owners and admins), or the operator's: the API's checks
 * except the toggle, which gates API keys and agents, unmetered, audited. The API's refusals come
 * back as ActErrors in a person's words.
 */
export async function replyToInboxItem(a: {
  orgId: string;
  itemId: string;
  body: string;
  actor: Actor;
  now?: Date;
  /** A reply id the console's form carries (minted with its page): a form sent twice queues one reply. */
  replyId?: string | undefined;
}): Promise<Reply> {
  const now = a.now ?? new Date();
  const by = await authorizeAct(a.orgId, a.actor, canActOnPosts, 'replying to inbox items');
  let reply: Reply;
  try {
    reply = await queueReply({
      orgId: a.orgId,
      itemId: a.itemId,
      body: a.body,
      now,
      by: by.user?.id ?? 'operator',
      needsToggle: false,
      admitted: unmetered,
      replyId: a.replyId && isId('reply', a.replyId) ? a.replyId : undefined,
    });
  } catch (err) {
    throw err instanceof ApiError ? asActError(err) : err;
  }
  await putAudit(
    auditEntry({ ...by, orgId: a.orgId }, 'inbox_replied', a.itemId, { reply_id: reply.id }, now),
  );
  return reply;
}

function asActError(err: ApiError): ActError {
  switch (err.code) {
    case 'validation_failed':
      return new ActError(err.errors?.[0]?.message ?? err.message, 'invalid');
    case 'resource_not_found':
      return new ActError('This workspace has no such inbox item (it may have expired).', 'not_found');
    default:
      return new ActError(err.message, 'conflict');
  }
}
