import { canActOnPosts, canApprovePosts } from '#core/accounts';
import { POST_STATUSES, type PostStatus } from '#core/constants';
import { ActError, type SignedIn } from '#core/people';
import { actorOf, consolePage, frameOf, orgOf } from '#handlers/support/console';
import { approvalsPage } from '#handlers/views/approvals';
import { type MessageCode, messageOf, withMessage } from '#handlers/views/layout';
import {
  deletePage,
  editPage,
  POST_FIELDS,
  POSTS_PATH,
  postPage,
  postPath,
  postsPage,
  rejectPage,
  unpublishPage,
  variantField,
} from '#handlers/views/posts';
import { requireEnv } from '#shared/config';
import { type ConsoleAnswer, pageAnswer, redirectAnswer } from '#shared/console';
import { approvePost, rejectPost, type Shown } from '#usecases/approvals';
import {
  EditRefused,
  editTexts,
  getPostDetails,
  listApprovals,
  listPostsOf,
  publishNow,
  remove,
  reschedule,
  unpublish,
} from '#usecases/post-acts';

// Posts and Approvals: the list, a post, the posts waiting for approval (every member), and the acts
// of owners and admins on one route, `POST /console/posts/{id}/{act}` — the use cases decide who may
// (a member's POST gets their 403) and refuse a post changed since its page (409: the page again,
// saying what changed).

const CURSOR_SECRET = requireEnv('HERALD_CURSOR_SECRET');

const ACTS = ['reschedule', 'publish', 'delete', 'approve', 'reject', 'edit', 'unpublish'] as const;
type Act = (typeof ACTS)[number];

const statusOf = (v: string | null): PostStatus | undefined =>
  v && (POST_STATUSES as readonly string[]).includes(v) ? (v as PostStatus) : undefined;

/** The version and status the page showed (hidden fields of every act's form). */
function shownOf(form: URLSearchParams): Shown {
  const version = Number(form.get('version'));
  if (!Number.isSafeInteger(version) || version < 1)
    throw new ActError('This form is incomplete; reload the page and try again.', 'invalid');
  return { version, status: statusOf(form.get('status')) };
}

/** A datetime-local value (UTC, as the page says) as an ISO time, or null when it is not one. */
export function scheduledAtOf(value: string): string | null {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?$/.exec(value.trim());
  if (!m) return null;
  const at = Date.parse(`${m[1]}T${m[2]}${m[3] ?? ':00'}Z`);
  return Number.isNaN(at) ? null : new Date(at).toISOString();
}

/** The edit form's texts: title and body (blank: none), and each variant's text by channel. */
function editedOf(form: URLSearchParams) {
  const variants = new Map<string, string>();
  for (const [name, value] of form) if (name.startsWith('variant:')) variants.set(name.slice(8), value);
  const text = (name: string) => (form.get(name) ?? '').trim();
  return {
    values: { title: form.get('title') ?? '', body: form.get('body') ?? '', variants },
    texts: { title: text('title') || null, body: text('body') || null, variants },
  };
}

/** The API's field errors (pointers) as the edit form's (field ids). */
function editErrors(fields: readonly { pointer: string; message: string }[]) {
  return fields.map((e) => {
    const variant = /^\/variants\/(\d+)/.exec(e.pointer);
    const field = variant
      ? variantField(Number(variant[1]))
      : e.pointer === '/title'
        ? POST_FIELDS.title
        : POST_FIELDS.body;
    return { field, message: e.message };
  });
}

const details = (signedIn: SignedIn, postId: string, now: Date) =>
  getPostDetails({ orgId: orgOf(signedIn), actor: actorOf(signedIn), postId, now });

/** The post's page again, as it is now, with why the act was refused (409); if it is gone, the 409 page. */
async function refusedPage(
  signedIn: SignedIn,
  postId: string,
  err: ActError,
  now: Date,
): Promise<ConsoleAnswer> {
  const [frame, found] = await Promise.all([
    frameOf(signedIn),
    details(signedIn, postId, now).catch((e: unknown) => {
      if (e instanceof ActError && e.kind === 'not_found') return null;
      throw e;
    }),
  ]);
  if (!found) throw err;
  return pageAnswer(
    postPage({ frame, details: found, canAct: canActOnPosts(signedIn.user.role), refused: err.message }),
    { status: 409 },
  );
}

export const { handler } = consolePage('consolePosts', {
  'GET /console/posts': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const filters = {
        status: statusOf(query.get('status')),
        channel: query.get('channel') || undefined,
      };
      const cursor = query.get('cursor') || undefined;
      const [frame, list] = await Promise.all([
        frameOf(signedIn),
        listPostsOf({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          status: filters.status,
          channelId: filters.channel,
          cursor,
          cursorSecret: CURSOR_SECRET,
        }),
      ]);
      return pageAnswer(
        postsPage({ frame, list, filters, paged: cursor !== undefined, message: messageOf(query) }),
      );
    },
  },
  'GET /console/posts/{id}': {
    who: 'person',
    run: async ({ signedIn, params, query, now }) => {
      const [frame, found] = await Promise.all([frameOf(signedIn), details(signedIn, params.id ?? '', now)]);
      const act = query.get('act');
      const canAct = canActOnPosts(signedIn.user.role);
      if (act === 'unpublish') {
        if (!canAct) throw new ActError('Only owners and admins act on posts.', 'forbidden');
        return pageAnswer(unpublishPage({ frame, details: found }));
      }
      if (act === 'reject' || act === 'delete' || act === 'edit') {
        if (!canAct) throw new ActError('Only owners and admins act on posts.', 'forbidden');
        return pageAnswer(
          act === 'reject'
            ? rejectPage({ frame, details: found })
            : act === 'edit'
              ? editPage({ frame, details: found })
              : deletePage({ frame, details: found }),
        );
      }
      return pageAnswer(postPage({ frame, details: found, canAct, message: messageOf(query) }));
    },
  },
  'GET /console/approvals': {
    who: 'person',
    run: async ({ signedIn, query, now }) => {
      const cursor = query.get('cursor') || undefined;
      const [frame, approvals] = await Promise.all([
        frameOf(signedIn),
        listApprovals({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          cursor,
          cursorSecret: CURSOR_SECRET,
          now,
        }),
      ]);
      return pageAnswer(
        approvalsPage({
          frame,
          approvals,
          canApprove: canApprovePosts(signedIn.user.role),
          paged: cursor !== undefined,
          now,
          message: messageOf(query),
        }),
      );
    },
  },
  'POST /console/posts/{id}/{act}': {
    who: 'person',
    run: async ({ signedIn, params, form, now }) => {
      const act = params.act as Act;
      if (!(ACTS as readonly string[]).includes(act))
        throw new ActError('There is no such action on a post.', 'not_found');
      const postId = params.id ?? '';
      const shown = shownOf(form);
      const base = { orgId: orgOf(signedIn), actor: actorOf(signedIn), postId, shown, now };
      const done = (code: MessageCode, path = postPath(postId)) => redirectAnswer(withMessage(path, code));
      try {
        switch (act) {
          case 'approve':
            await approvePost(base);
            return done('post_approved');
          case 'reject': {
            const reason = form.get('reason') ?? '';
            try {
              await rejectPost({ ...base, reason });
            } catch (err) {
              if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
              const [frame, found] = await Promise.all([frameOf(signedIn), details(signedIn, postId, now)]);
              const errors = [{ field: POST_FIELDS.reason, message: err.message }];
              return pageAnswer(rejectPage({ frame, details: found, reason, errors }), { status: 400 });
            }
            return done('post_rejected');
          }
          case 'reschedule': {
            const value = form.get('scheduled_at') ?? '';
            const scheduledAt = scheduledAtOf(value);
            try {
              await reschedule({ ...base, scheduledAt });
            } catch (err) {
              if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
              const [frame, found] = await Promise.all([frameOf(signedIn), details(signedIn, postId, now)]);
              const errors = [{ field: POST_FIELDS.scheduledAt, message: err.message }];
              return pageAnswer(
                postPage({
                  frame,
                  details: found,
                  canAct: canActOnPosts(signedIn.user.role),
                  reschedule: { value, errors },
                }),
                { status: 400 },
              );
            }
            return done('post_rescheduled');
          }
          case 'edit': {
            const { values, texts } = editedOf(form);
            try {
              await editTexts({ ...base, texts });
            } catch (err) {
              if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
              const [frame, found] = await Promise.all([frameOf(signedIn), details(signedIn, postId, now)]);
              const errors =
                err instanceof EditRefused
                  ? editErrors(err.fields)
                  : [{ field: POST_FIELDS.body, message: err.message }];
              return pageAnswer(editPage({ frame, details: found, values, errors }), { status: 400 });
            }
            return done('post_edited');
          }
          case 'publish':
            await publishNow(base);
            return done('post_publishing');
          case 'delete':
            await remove(base);
            return done('post_deleted', POSTS_PATH);
          case 'unpublish':
            await unpublish(base);
            return done('post_unpublishing');
        }
      } catch (err) {
        if (err instanceof ActError && err.kind === 'conflict')
          return refusedPage(signedIn, postId, err, now);
        throw err;
      }
    },
  },
});
