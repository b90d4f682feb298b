import type { OAuthConnect } from '../connect.ts';
import { pageConnect } from '../meta/connect.ts';

// Instagram professional accounts through Facebook Login (Instagram API with Facebook Login): the
// grant covers the Instagram business accounts linked to the person's Pages
// (GET /me/accounts?fields=instagram_business_account{…}); a channel keeps the Page's token (it
// does not expire) and the Instagram account id. Like Facebook, only the person can renew it.

interface IgAccount {
  id: string;
  username?: string;
  name?: string;
  profile_picture_url?: string;
  followers_count?: number;
}
interface Page {
  id: string;
  access_token?: string;
  instagram_business_account?: IgAccount;
}

const IG_FIELDS = 'id,username,name,profile_picture_url,followers_count';

export const connect: OAuthConnect = pageConnect<Page, IgAccount>('instagram', {
  // instagram_manage_comments: the first comment (POST /{ig-media-id}/comments), and the inbox's
  // comments and tags; instagram_manage_messages with pages_manage_metadata: its messages (the Page
  // Conversations reference, platform=instagram). A person may decline them and still post.
  scopes: [
    'instagram_basic',
    'instagram_content_publish',
    'pages_show_list',
    'pages_read_engagement',
    'instagram_manage_comments',
    'instagram_manage_messages',
    'pages_manage_metadata',
  ],
  required: ['instagram_basic', 'instagram_content_publish', 'pages_show_list'],
  pageFields: `id,access_token,instagram_business_account{${IG_FIELDS}}`,
  profileFields: IG_FIELDS,
  accountsOf: (p) =>
    p.instagram_business_account && p.access_token
      ? [{ account: p.instagram_business_account, token: p.access_token }]
      : [],
  account: (ig) => ({
    id: ig.id,
    type: 'business_account',
    handle: ig.username ?? ig.id,
    name: ig.name,
    avatar: ig.profile_picture_url,
    followers: ig.followers_count,
  }),
});
