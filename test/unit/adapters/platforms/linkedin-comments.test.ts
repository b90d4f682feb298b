import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LINKEDIN_VERSION } from '#adapters/platforms/linkedin/client';
import { connector } from '#adapters/platforms/linkedin/index';
import type { PublishContext, PublishResult } from '#adapters/platforms/types';
import { commentMaxText } from '#core/platforms';
import { createFake, type FakeLinkedIn } from '../../../fakes/linkedin.ts';
import { FAKE_APPS } from '../../../fakes/oauth.ts';
import { FakePlatforms } from '../../../fakes/server.ts';
import { failure, publishContext } from './context.ts';

// The LinkedIn first comment against the contract fake: POST /rest/socialActions/{post}/comments as
// the channel's author with the versioned headers, the checkpoint before it, reconcile of an
// interrupted one by the post's comments (outcome unknown when the app may not read them), and the
// refusals of a grant without w_member_social and of a post that does not exist.

let fakes: FakePlatforms;
let fake: FakeLinkedIn;
const AUTHOR = 'urn:li:person:8675309';
const TEXT = '#hiring #product (details in the job post)';

beforeAll(async () => {
  fakes = await new FakePlatforms([createFake()]).start();
  fake = fakes.fake<FakeLinkedIn>('linkedin');
  process.env.HERALD_PLATFORM_LINKEDIN_URL = fakes.url('linkedin');
});
afterAll(async () => {
  delete process.env.HERALD_PLATFORM_LINKEDIN_URL;
  await fakes.stop();
});
beforeEach(() => fakes.reset());

const channel = { id: 'ch_li', handle: 'acme', platform: 'linkedin' as const };

async function publishRoot(credentials = { access_token: 'token', account_id: AUTHOR }) {
  return connector.publish(publishContext({ channel, credentials, text: 'We are hiring' }).ctx);
}

function commentContext(root: PublishResult, over: Partial<PublishContext> = {}) {
  const ref = { externalId: root.externalId, url: root.url };
  return publishContext({
    channel,
    credentials: { access_token: 'token', account_id: AUTHOR },
    part: { kind: 'comment' },
    replyTo: { root: ref, parent: ref },
    text: TEXT,
    media: [],
    idempotencyKey: 'post_1.ch_li.c',
    ...over,
  });
}

/** A member token from the fake's consent and token endpoints, with exactly these scopes. */
async function memberToken(scopes: string[]): Promise<{ token: string; urn: string }> {
  const app = FAKE_APPS.linkedin;
  const redirect = 'https://api.example.com/oauth/callback/linkedin';
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: redirect,
    scope: scopes.join(' '),
    state: 's',
  });
  const consent = await fetch(`${fakes.url('linkedin')}/oauth/v2/authorization?${q}`, { redirect: 'manual' });
  const code = new URL(consent.headers.get('location') ?? '').searchParams.get('code') ?? '';
  const res = await fetch(`${fakes.url('linkedin')}/oauth/v2/accessToken`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirect,
      client_id: app.clientId,
      client_secret: app.clientSecret,
    }),
  });
  const token = ((await res.json()) as { access_token: string }).access_token;
  return { token, urn: `urn:li:person:${fake.oauth.user().id}` };
}

describe('linkedin first comment', () => {
  it('comments on the post as the author, with the versioned headers, after a checkpoint', async () => {
    const root = await publishRoot();
    const { ctx, checkpoints } = commentContext(root);

    const result = await connector.publish(ctx);

    expect(fake.comments).toHaveLength(1);
    const c = fake.comments[0]!;
    // Plain text: the comment's reserved characters are not escaped as a post's little text is.
    expect(c).toMatchObject({ post: root.externalId, actor: AUTHOR, text: TEXT });
    expect(result).toEqual({
      externalId: c.urn,
      url: `https://www.linkedin.com/feed/update/${root.externalId}?commentUrn=${encodeURIComponent(c.urn)}`,
    });
    const call = fakes.requests('linkedin').find((r) => r.method === 'POST' && r.path.endsWith('/comments'));
    expect(call?.path).toBe(`/rest/socialActions/${encodeURIComponent(root.externalId)}/comments`);
    expect(call?.headers['linkedin-version']).toBe(LINKEDIN_VERSION);
    expect(call?.headers['x-restli-protocol-version']).toBe('2.0.0');
    expect(call?.json).toEqual({ actor: AUTHOR, object: root.externalId, message: { text: TEXT } });
    expect(checkpoints).toEqual([expect.objectContaining({ stage: 'commenting', parent: root.externalId })]);
  });

  it('an organization channel comments as the organization', async () => {
    const org = 'urn:li:organization:2414183';
    const root = await publishRoot({ access_token: 'token', account_id: org });
    await connector.publish(
      commentContext(root, { credentials: { access_token: 'token', account_id: org } }).ctx,
    );
    expect(fake.comments[0]?.actor).toBe(org);
  });

  it('an interrupted comment (504 after LinkedIn made it) is found by reconcile, once', async () => {
    const root = await publishRoot();
    fake.loseNextCommentResponse = true;
    const first = commentContext(root);
    const err = await failure(connector.publish(first.ctx));
    expect(err.maybeCarriedOut).toBe(true);

    const found = await connector.reconcile(
      commentContext(root, { checkpoint: first.checkpoints[0] ?? null }).ctx,
    );

    expect(fake.comments).toHaveLength(1);
    expect(found?.externalId).toBe(fake.comments[0]?.urn);
  });

  it('reconcile: null without a checkpoint or without a matching comment; unknown when comments cannot be read', async () => {
    const root = await publishRoot();
    expect(await connector.reconcile(commentContext(root).ctx)).toBeNull();
    const cp = { stage: 'commenting', parent: root.externalId, sentAt: new Date().toISOString() };
    expect(await connector.reconcile(commentContext(root, { checkpoint: cp }).ctx)).toBeNull();

    fake.canReadPosts = false;
    const err = await failure(connector.reconcile(commentContext(root, { checkpoint: cp }).ctx));
    expect(err.opts.unknownOutcome).toBe(true);
    expect(err.retryable).toBe(false);
  });

  it('a grant without w_member_social is refused (403 ACCESS_DENIED → platform_rejected)', async () => {
    const root = await publishRoot();
    const member = await memberToken(['openid', 'profile']);
    const { ctx } = commentContext(root, {
      credentials: { access_token: member.token, account_id: member.urn },
    });
    const err = await failure(connector.publish(ctx));
    expect(err.category).toBe('platform_rejected');
    expect(err.message).toContain('ACCESS_DENIED');
    expect(fake.comments).toHaveLength(0);
  });

  it('a comment on a post that does not exist is user_content (404); an over-long text too (422)', async () => {
    const missing = { externalId: 'urn:li:share:404', url: null };
    expect((await failure(connector.publish(commentContext(missing).ctx))).category).toBe('user_content');
    const root = await publishRoot();
    const long = await failure(connector.publish(commentContext(root, { text: 'x'.repeat(1251) }).ctx));
    expect(long.category).toBe('user_content');
    expect(fake.comments).toHaveLength(0);
  });

  it('throttling (429) is rate_limited', async () => {
    const root = await publishRoot();
    fakes.failNext('linkedin', {
      path: /\/comments$/,
      status: 429,
      body: { status: 429, message: 'Resource level throttle limit for calls to this resource is reached.' },
    });
    expect((await failure(connector.publish(commentContext(root).ctx))).category).toBe('rate_limited');
  });

  it('takes a comment of the comment limit (commentMaxText) and refuses one more (user_content)', async () => {
    const max = commentMaxText('linkedin');
    const root = await publishRoot();
    await connector.publish(commentContext(root, { text: 'é'.repeat(max) }).ctx);
    const over = await failure(connector.publish(commentContext(root, { text: 'é'.repeat(max + 1) }).ctx));
    expect(over.category).toBe('user_content');
    expect(fake.comments).toHaveLength(1);
  });
});
