import { checkIfMatch, etagOf, parseIfMatch } from '#core/etag';
import { ReschedulePostBody } from '#core/requests';
import { apiHandler } from '#handlers/support/api';
import { reschedulePost } from '#usecases/reschedule-post';

export const { handler, impl } = apiHandler(
  'reschedulePost',
  { body: ReschedulePostBody },
  async ({ auth, params, body, headers, now, admitted }) => {
    const ifMatch = parseIfMatch(headers['if-match']);
    let version: number | undefined;
    const post = await reschedulePost(
      auth.orgId,
      params.id ?? '',
      body.scheduled_at,
      now,
      { admitted, postsPerMonth: auth.limits.posts_per_month },
      // On the post as read; the write is conditioned on that read's version (usecases/support/post-writes.ts).
      (read) => checkIfMatch(ifMatch, read.version),
      (v) => {
        version = v;
      },
    );
    return {
      status: 200,
      body: post,
      headers: version ? { etag: etagOf(version) } : ({} as Record<string, string>),
    };
  },
  // Admitted after the read: the gate's write carries the post's count (usecases/reschedule-post.ts).
  { deferAdmission: true },
);
