import { loadPostContext } from '#adapters/posts';
import type { FieldError } from '#core/errors';
import { postInputIds, validatePostInput } from '#core/post-input';
import { resolveMode } from '#core/posts';
import type { CreatePostInput } from '#core/requests';
import { requireOrg } from '#usecases/support/post-writes';

// validatePost (docs/api/posts.md, "Checking a post before scheduling it"): createPost's checks,
// on the same read, without the write. Nothing here writes; the request counts as one api_requests
// call, as every request does, and no post.

/** A scheduled time closer than this is warned about: the post may start before anyone can change it. */
export const SOON_SECONDS = 60;

export interface PostCheck {
  pointer: string;
  code: string;
  detail: string;
}

const asCheck = (e: FieldError): PostCheck => ({ pointer: e.pointer, code: e.code, detail: e.message });

export async function validatePost(
  orgId: string,
  input: CreatePostInput,
  now: Date,
  admitted: () => Promise<unknown>,
): Promise<{ valid: boolean; errors: PostCheck[]; warnings: PostCheck[] }> {
  const { channelIds, mediaIds } = postInputIds(input);
  const [ctx] = await Promise.all([loadPostContext(orgId, channelIds, mediaIds), admitted()]);
  const org = requireOrg(ctx.org);
  const mode = resolveMode(input, now);
  const errors: FieldError[] = 'errors' in mode ? [...mode.errors] : [];
  if ('mode' in mode && mode.mode === 'publish' && !org.settings.dangerous_ops)
    errors.push({
      pointer: '/publish_now',
      code: 'dangerous_ops_disabled',
      message:
        'Publishing now is off for this workspace until an owner turns on Dangerous AI operations (createPost answers 403).',
    });
  errors.push(...validatePostInput(input, { ...ctx, now }));

  const warnings: PostCheck[] = [];
  if ('mode' in mode && mode.mode !== 'draft' && org.settings.approval_required)
    warnings.push({
      pointer: '',
      code: 'approval_required',
      detail:
        'This workspace requires approval: the post will wait as needs_approval until an owner or admin approves it.',
    });
  if ('mode' in mode && mode.mode === 'schedule' && input.scheduled_at) {
    const seconds = (Date.parse(input.scheduled_at) - now.getTime()) / 1000;
    if (seconds < SOON_SECONDS)
      warnings.push({
        pointer: '/scheduled_at',
        code: 'scheduled_soon',
        detail: `The time is ${Math.max(0, Math.round(seconds))} s away: the post may start publishing before it can be changed.`,
      });
  }
  input.variants.forEach((v, i) => {
    const channel = ctx.channels.get(v.channel_id);
    if (channel?.status === 'reauth_required')
      warnings.push({
        pointer: `/variants/${i}/channel_id`,
        code: 'channel_reauth_required',
        detail: `The ${channel.platform} channel ${channel.handle} needs reconnecting: its deliveries fail (auth_expired) until it is.`,
      });
    else if (channel?.status === 'error')
      warnings.push({
        pointer: `/variants/${i}/channel_id`,
        code: 'channel_error',
        detail: `The ${channel.platform} channel ${channel.handle} failed its last check${channel.last_error ? ` (${channel.last_error})` : ''}; deliveries to it may fail.`,
      });
  });
  return { valid: errors.length === 0, errors: errors.map(asCheck), warnings };
}
