import { OAuthTokens } from '../oauth.ts';
import type { Choice, ChoicesContext } from '../types.ts';
import { api } from './client.ts';

// What this creator may post (`privacy_level`) and the limits TikTok sets them: POST
// /v2/post/publish/creator_info/query/ (scope video.publish; 20 requests a minute per token). TikTok
// asks apps to show exactly these before a Direct Post, so they are read live, not assumed.

interface CreatorInfo {
  privacy_level_options?: string[];
  comment_disabled?: boolean;
  duet_disabled?: boolean;
  stitch_disabled?: boolean;
  max_video_post_duration_sec?: number;
}

const LABELS: Record<string, string> = {
  PUBLIC_TO_EVERYONE: 'Everyone',
  MUTUAL_FOLLOW_FRIENDS: 'Friends (followers you follow back)',
  FOLLOWER_OF_CREATOR: 'Followers',
  SELF_ONLY: 'Only me',
};

export async function choices(ctx: ChoicesContext): Promise<Record<string, Choice[]>> {
  const tokens = await OAuthTokens.open(ctx);
  const info = await api<CreatorInfo>(tokens, '/v2/post/publish/creator_info/query/');
  if (typeof info.max_video_post_duration_sec === 'number')
    ctx.limit?.('max_video_post_duration_sec', info.max_video_post_duration_sec);
  for (const k of ['comment_disabled', 'duet_disabled', 'stitch_disabled'] as const) {
    if (typeof info[k] === 'boolean') ctx.limit?.(k, info[k]);
  }
  return {
    privacy_level: (info.privacy_level_options ?? []).map((v) => ({ value: v, label: LABELS[v] ?? v })),
  };
}
