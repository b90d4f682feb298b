import { describe, expect, it } from 'vitest';
import { mastodonReplyText, replyTextErrors } from '#core/inbox-reply-rules';

// The reply checks as the platform counts: on Mastodon the author's mention is posted first, so it
// counts against the instance's 500 characters (as Mastodon counts a mention: the username only).

describe('replyTextErrors', () => {
  it('counts the mention Herald puts before a Mastodon reply', () => {
    const body = 'x'.repeat(494);
    // "@ana " is five more: 499 fits; a body of 496 with it is 501.
    expect(replyTextErrors('mastodon', 'comment', body, '@ana@other.example')).toEqual([]);
    const over = replyTextErrors('mastodon', 'comment', 'x'.repeat(496), '@ana@other.example');
    expect(over).toEqual([expect.objectContaining({ pointer: '/body', code: 'text_too_long' })]);
    // A direct message is a status too.
    expect(replyTextErrors('mastodon', 'message', 'x'.repeat(496), 'ana@other.example')).toHaveLength(1);
  });

  it('adds no mention when the reply already names the author', () => {
    expect(mastodonReplyText('@ana@other.example', '@ana thanks!')).toBe('@ana thanks!');
    expect(mastodonReplyText('ana@other.example', 'thanks!')).toBe('@ana@other.example thanks!');
    expect(replyTextErrors('mastodon', 'comment', `@ana ${'x'.repeat(494)}`, '@ana@other.example')).toEqual(
      [],
    );
  });

  it('leaves other platforms’ texts as they are, and refuses an empty one', () => {
    expect(replyTextErrors('bluesky', 'comment', 'x'.repeat(300), 'ana.bsky.social')).toEqual([]);
    expect(replyTextErrors('bluesky', 'comment', 'x'.repeat(301), 'ana.bsky.social')).toHaveLength(1);
    expect(replyTextErrors('x', 'message', '  ', 'ana')).toEqual([
      expect.objectContaining({ pointer: '/body', code: 'too_short' }),
    ]);
  });
});
