import type { UnpublishContext } from './types.ts';

// What every connector's unpublish shares: the parts go one at a time, in the order given (last
// first, so no reply is orphaned by its parent going first), and a part the platform no longer has
// counts as removed. A failure stops there; the worker retries the whole list, and the parts
// removed already then answer "gone".

export type Part = UnpublishContext['parts'][number];

/** `remove` answers 'gone' when the platform says it has no such post (its 404 or equivalent). */
export async function removeParts(
  ctx: UnpublishContext,
  remove: (part: Part) => Promise<'removed' | 'gone'>,
): Promise<{ alreadyGone: string[] }> {
  const alreadyGone: string[] = [];
  for (const part of ctx.parts) if ((await remove(part)) === 'gone') alreadyGone.push(part.externalId);
  return { alreadyGone };
}
