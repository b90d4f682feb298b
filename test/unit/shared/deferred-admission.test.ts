import { describe, expect, it } from 'vitest';
import type { Admission, AuthContext, PostsToCount } from '#core/accounts';
import { ApiError, notFound } from '#core/errors';
import { PLANS } from '#core/plans';
import { NoQuery } from '#core/requests';
import { type ApiInput, type ApiResult, apiHandlers, type RequestGate } from '#shared/http';
import { apiEvent, bearer, fixedId, lambdaContext, ORG_ID, problemOf } from '../support/fixtures.ts';

// The pipeline's admission when an operation defers it (apiHandler's `deferAdmission`): the
// operation starts it — asking the gate's write to count a post, or not — and a request that never
// does is still admitted, once, at its end. An admission refused only for the post it was asked to
// count is made again without it when the request counts no post after all. A stand-in gate
// records what it was asked; the gate's own rules are tested with the real one elsewhere.

const AUTH: AuthContext = {
  orgId: ORG_ID,
  keyId: fixedId('key', 1),
  scopes: new Set(['posts:write']),
  plan: 'team',
  limits: PLANS.team.limits,
};
const POSTS: PostsToCount = { period: '2030-06', limit: 3 };
const HEADERS = { 'x-ratelimit-limit': '120' };
const ADMITTED: Admission = { allowed: true, headers: HEADERS, apiRequests: 1, period: '2030-06' };
const refusal = (code: 'rate_limited' | 'quota_exhausted', postsRefused = false): Admission => ({
  allowed: false,
  headers: { ...HEADERS, 'retry-after': '7' },
  error: new ApiError(code, code, { headers: { 'retry-after': '7' } }),
  ...(postsRefused ? { postsRefused } : {}),
});

/** A gate that answers `answers` in turn (then ADMITTED), recording what each admission asked. */
function standIn(answers: Admission[] = []) {
  const asked: Array<PostsToCount | undefined> = [];
  let unmetered = 0;
  const gate: RequestGate = {
    authenticate: async () => AUTH,
    authorize: () => undefined,
    admit: async (_auth, _now, posts) => {
      asked.push(posts);
      const a = answers.shift() ?? ADMITTED;
      return a.allowed && posts ? { ...a, postCounted: true } : a;
    },
    unmeter: async () => {
      unmetered++;
    },
  };
  return { gate, asked, unmetered: () => unmetered };
}

type Impl = (input: ApiInput<undefined, Record<string, never>>) => Promise<ApiResult>;

function handlerOf(gate: RequestGate, impl: Impl, deferAdmission = true) {
  const { handler } = apiHandlers(gate)('publishPost', { query: NoQuery }, impl, { deferAdmission });
  return () =>
    handler(
      apiEvent('publishPost', {
        headers: bearer({ key: 'svc_live_x' } as never),
        pathParameters: { id: 'p' },
      }),
      lambdaContext('publishPost'),
    );
}

describe('a deferred admission', () => {
  it('starts when the operation asks, with the post to count, and not before', async () => {
    const g = standIn();
    let before = -1;
    const send = handlerOf(g.gate, async ({ admitted }) => {
      before = g.asked.length;
      const a = await admitted(POSTS);
      return { status: 202, body: { counted: a.allowed && a.postCounted } };
    });

    const res = await send();

    expect(before).toBe(0);
    expect(res.statusCode).toBe(202);
    expect(JSON.parse(res.body ?? '{}')).toEqual({ counted: true });
    expect(g.asked).toEqual([POSTS]);
    expect(res.headers?.['x-ratelimit-limit']).toBe('120');
  });

  it('is made at the end, once, for a request that never asked (a 404), and its refusal outranks the 404', async () => {
    const answered = standIn();
    const send = handlerOf(answered.gate, async () => {
      throw notFound('post');
    });
    expect((await send()).statusCode).toBe(404);
    expect(answered.asked).toEqual([undefined]);

    const refused = standIn([refusal('rate_limited')]);
    const res = await handlerOf(refused.gate, async () => {
      throw notFound('post');
    })();
    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('rate_limited');
    expect(refused.asked).toEqual([undefined]);
  });

  it('an eager admission starts before the operation runs', async () => {
    const g = standIn();
    let before = -1;
    const send = handlerOf(
      g.gate,
      async () => {
        before = g.asked.length;
        return { status: 200, body: {} };
      },
      false,
    );
    await send();
    expect(before).toBe(1);
  });
});

describe('refused only for the post it was asked to count', () => {
  it('answered with that refusal: 429, admitted once, nothing given back', async () => {
    const g = standIn([refusal('quota_exhausted', true)]);
    const send = handlerOf(g.gate, async ({ admitted }) => {
      await admitted(POSTS);
      return { status: 202, body: {} };
    });

    const res = await send();

    expect(res.statusCode).toBe(429);
    expect(res.headers?.['retry-after']).toBe('7');
    expect(g.asked).toEqual([POSTS]);
    expect(g.unmetered()).toBe(0);
  });

  it('the operation then counts no post: admitted again without it, once', async () => {
    const g = standIn([refusal('quota_exhausted', true)]);
    const send = handlerOf(g.gate, async ({ admitted }) => {
      void admitted(POSTS).catch(() => undefined); // in expectation, beside the read
      await admitted(); // decided: no post counts
      await admitted();
      return { status: 202, body: {} };
    });

    const res = await send();

    expect(res.statusCode).toBe(202);
    expect(g.asked).toEqual([POSTS, undefined]);
  });

  it('the operation ends otherwise (a 404) before deciding: admitted again without it at the end', async () => {
    const g = standIn([refusal('quota_exhausted', true)]);
    const send = handlerOf(g.gate, async ({ admitted }) => {
      void admitted(POSTS).catch(() => undefined);
      throw notFound('post');
    });

    const res = await send();

    expect(res.statusCode).toBe(404);
    expect(g.asked).toEqual([POSTS, undefined]);
  });

  it('a refusal of the request itself (the burst) is never made again', async () => {
    const g = standIn([refusal('rate_limited')]);
    const send = handlerOf(g.gate, async ({ admitted }) => {
      void admitted(POSTS).catch(() => undefined);
      await admitted();
      return { status: 202, body: {} };
    });

    const res = await send();

    expect(res.statusCode).toBe(429);
    expect(problemOf(res).code).toBe('rate_limited');
    expect(g.asked).toEqual([POSTS]);
  });
});
