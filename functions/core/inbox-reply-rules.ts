import { ApiError, type FieldError } from './errors.ts';
import { INBOX, type InboxKind, MESSAGE_MAX_TEXT } from './inbox.ts';
import { checkComment, commentMaxText, PLATFORM_RULES, type Platform, textLength } from './platforms.ts';

// What replyToInboxItem lets through (docs/api/inbox.md "Replying"): the kinds each platform can
// answer, and how long an answer may be, counted as the platform counts. Pure.

/** The platform cannot answer this kind of item (TikTok, Pinterest; a YouTube or LinkedIn message). */
export function replyUnsupported(platform: Platform, kind: InboxKind): ApiError {
  const support = INBOX[platform];
  const detail = support.replies.length
    ? `${platform} lets an app answer ${support.replies.map((k) => `${k}s`).join(' and ')}, not ${kind}s: nothing was sent.`
    : `${platform} offers apps no way to answer comments, mentions or messages: nothing was sent.`;
  return new ApiError('reply_unsupported', detail);
}

/**
 * A Mastodon reply as it is posted: the author's mention first (`@user@host`), unless the text
 * already names them — a status reaches only the accounts it mentions. Its length counts.
 */
export function mastodonReplyText(authorHandle: string, text: string): string {
  const mention = authorHandle.startsWith('@') ? authorHandle : `@${authorHandle}`;
  const user = mention.split('@')[1] ?? '';
  const named = new RegExp(`(^|\\s)@${user.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(@|\\b)`, 'i');
  return named.test(text) ? text : `${mention} ${text}`;
}

/** A Mastodon reply's text as the instance counts it: a mention's domain does not count. */
function mastodonCounted(authorHandle: string, body: string): string {
  if (mastodonReplyText(authorHandle, body) === body) return body;
  const user = authorHandle.replace(/^@/, '').split('@')[0] ?? '';
  return `@${user} ${body}`;
}

/** The longest reply to an item of `kind` on `platform` (a reply to a comment or mention is a comment). */
export function replyMaxText(platform: Platform, kind: InboxKind): number {
  return kind === 'message'
    ? (MESSAGE_MAX_TEXT[platform] ?? PLATFORM_RULES[platform].maxText)
    : commentMaxText(platform);
}

/**
 * Field errors of a reply's text (pointer `/body`): not empty, and within the platform's limit as
 * it counts — a comment's (commentMaxText) for comments and mentions, a direct message's
 * (MESSAGE_MAX_TEXT) for messages. A message is counted in characters (graphemes), except on
 * Mastodon, where a direct message is a status and counted as one, with the author's mention.
 */
export function replyTextErrors(
  platform: Platform,
  kind: InboxKind,
  body: string,
  authorHandle: string,
): FieldError[] {
  if (body.trim() === '') return [{ pointer: '/body', code: 'too_short', message: 'A reply needs text.' }];
  // On Mastodon the author's mention goes first, and counts as Mastodon counts one: `@user`.
  const posted = platform === 'mastodon' ? mastodonCounted(authorHandle, body) : body;
  if (kind !== 'message') return checkComment(platform, posted, '/body');
  const max = replyMaxText(platform, kind);
  const counter = platform === 'mastodon' ? PLATFORM_RULES.mastodon.counter : 'graphemes';
  const length = textLength(counter, posted);
  if (length <= max) return [];
  return [
    {
      pointer: '/body',
      code: 'text_too_long',
      message: `${platform} allows ${max} characters in a direct message as it counts them; this text is ${length}.`,
    },
  ];
}
