import { keys } from '#adapters/keys';
import { batchGet, fromItem, TABLE_NAME, type TransactItem, transactIf } from '#adapters/table';

// AI credits (docs/ai.md): the month's `ai_credits` meter on the request gate's usage item, and one
// reservation item per generation. Reserving adds the task's most to the meter, refused where it
// would pass the allowance, and writes the reservation `open` in the same transaction; settling
// moves the meter to what the model used and closes the reservation, refunding gives all of it
// back. Both are conditioned on the reservation still being open, so only one of them ever
// applies. An open reservation sits in the due-work index (GSI2) at its due time, past the
// function's timeout: the sweeper's watchdog refunds one whose function died before settling.
// Each of the three is ONE TransactWriteItems of two items: 4 write units (2 per item of ≤ 1 KB),
// plus 1 for the index entry the reservation adds or removes.

/** How long a closed reservation stays readable (then the table's TTL removes it). */
const RESERVATION_LIFETIME_SECONDS = 35 * 24 * 3600;

export interface Reservation {
  org_id: string;
  id: string;
  /** The month (YYYY-MM) whose meter the credits were added to. */
  period: string;
  credits: number;
  status: 'open' | 'settled' | 'refunded';
  /** Credits charged when settled. */
  used?: number;
  reserved_at: string;
  due_at: string;
}

const usageStep = (orgId: string, period: string, n: number, condition?: { room: number }): TransactItem => ({
  Update: {
    TableName: TABLE_NAME,
    Key: keys.usage(orgId, period),
    UpdateExpression: 'ADD ai_credits :n',
    ...(condition
      ? {
          ConditionExpression: 'attribute_not_exists(ai_credits) OR ai_credits <= :room',
          ExpressionAttributeValues: { ':n': n, ':room': condition.room },
        }
      : { ExpressionAttributeValues: { ':n': n } }),
  },
});

/**
 * Adds `credits` to the month's meter and writes the reservation `genId` (open, in the due-work
 * index at `dueAt`), all or nothing. False, nothing written, when the meter has no room for them
 * under `limit`.
 */
export async function reserveCredits(
  orgId: string,
  period: string,
  genId: string,
  credits: number,
  limit: number,
  dueAt: string,
  now: Date = new Date(),
): Promise<boolean> {
  // An absent meter passes the condition: a task larger than the whole allowance is refused here.
  if (credits > limit) return false;
  const item: Reservation & Record<string, unknown> = {
    org_id: orgId,
    id: genId,
    period,
    credits,
    status: 'open',
    reserved_at: now.toISOString(),
    due_at: dueAt,
  };
  return transactIf([
    usageStep(orgId, period, credits, { room: limit - credits }),
    {
      Put: {
        TableName: TABLE_NAME,
        Item: {
          ...keys.generation(orgId, genId),
          ...keys.dueWork(dueAt, orgId, genId),
          entity: 'generation',
          ...item,
          ttl: Math.ceil(now.getTime() / 1000) + RESERVATION_LIFETIME_SECONDS,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ]);
}

function close(
  orgId: string,
  period: string,
  genId: string,
  reserved: number,
  used: number,
  status: 'settled' | 'refunded',
): Promise<boolean> {
  return transactIf([
    usageStep(orgId, period, used - reserved),
    {
      Update: {
        TableName: TABLE_NAME,
        Key: keys.generation(orgId, genId),
        // Out of the due-work index: the sweeper never reads a closed reservation again.
        UpdateExpression: 'SET #s = :s, used = :used REMOVE gsi2pk, gsi2sk',
        ConditionExpression: '#s = :open',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':s': status, ':used': used, ':open': 'open' },
      },
    },
  ]);
}

/**
 * Moves the meter from the `reserved` credits to the `used` ones (never more than reserved: the
 * reservation is the task's most) and closes the reservation. False, nothing written, when it was
 * closed already (the sweeper refunded it).
 */
export function settleCredits(
  orgId: string,
  period: string,
  genId: string,
  reserved: number,
  used: number,
): Promise<boolean> {
  return close(orgId, period, genId, reserved, Math.min(used, reserved), 'settled');
}

/** Gives all `reserved` credits back and closes the reservation; false when it was closed already. */
export function refundCredits(
  orgId: string,
  period: string,
  genId: string,
  reserved: number,
): Promise<boolean> {
  return close(orgId, period, genId, reserved, 0, 'refunded');
}

/** The reservations of `refs` still open (missing and closed ones are left out). */
export async function openReservations(refs: Array<{ orgId: string; id: string }>): Promise<Reservation[]> {
  const items = await batchGet(refs.map((r) => keys.generation(r.orgId, r.id)));
  return items.flatMap((item) => (item?.status === 'open' ? [fromItem<Reservation>(item)] : []));
}
