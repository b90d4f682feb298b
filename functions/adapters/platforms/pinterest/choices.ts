import { OAuthTokens } from '../oauth.ts';
import type { Choice, ChoicesContext } from '../types.ts';
import { call } from './client.ts';
import { pinterestError } from './errors.ts';

// The boards a Pin may go to (`board_id`): GET /v5/boards, 250 a page (the most Pinterest allows),
// following `bookmark` until it is null. Secret boards are listed too (a Pin there is secret).

const PAGE = 250;
/** 2,500 boards: past that the list says it was cut rather than spend more of the rate limit. */
const MAX_PAGES = 10;

interface Board {
  id: string;
  name?: string;
  privacy?: string;
}

export async function choices(ctx: ChoicesContext): Promise<Record<string, Choice[]>> {
  const tokens = await OAuthTokens.open(ctx);
  const boards: Choice[] = [];
  let bookmark: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const q = new URLSearchParams({ page_size: String(PAGE) });
    if (bookmark) q.set('bookmark', bookmark);
    const res = await call<{ items?: Board[]; bookmark?: string | null }>(tokens, 'GET', `/v5/boards?${q}`);
    if (res.status !== 200) throw pinterestError(res, 'boards');
    for (const b of res.body.items ?? []) {
      const name = b.name || b.id;
      boards.push({ value: String(b.id), label: b.privacy === 'SECRET' ? `${name} (secret)` : name });
    }
    bookmark = res.body.bookmark ?? null;
    if (!bookmark) return { board_id: boards };
  }
  ctx.note?.({
    code: 'list_truncated',
    option: 'board_id',
    message: `Only the first ${PAGE * MAX_PAGES} boards are listed; any board id of the account is accepted.`,
  });
  return { board_id: boards };
}
