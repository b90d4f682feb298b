import type { OAuthConnect } from '../connect.ts';
import { pageConnect } from '../meta/connect.ts';

// Facebook Pages: Facebook Login (no PKCE, client secret as a form field); the grant covers the
// Pages the person manages (GET /me/accounts), each with its own Page token, which is what a channel
// keeps (long-lived: it does not expire). Only the person can renew it (reconnect), and revoking
// needs the user token Herald does not keep: disconnecting erases the Page token; removing the app
// is done in the person's Facebook settings (Business Integrations).

interface Page {
  id: string;
  name?: string;
  access_token?: string;
  picture?: { data?: { url?: string } };
  followers_count?: number;
  fan_count?: number;
}

export const connect: OAuthConnect = pageConnect<Page, Page>('facebook', {
  // The first comment and replies as the Page: pages_manage_engagement, with pages_read_user_content
  // to read the comments people leave and who left them (the Pages API comments guide); the inbox's
  // Messenger conversations: pages_messaging and pages_manage_metadata (Page Conversations
  // reference). A person may decline any of them and still post.
  scopes: [
    'pages_show_list',
    'pages_manage_posts',
    'pages_read_engagement',
    'pages_manage_engagement',
    'pages_read_user_content',
    'pages_messaging',
    'pages_manage_metadata',
  ],
  required: ['pages_show_list', 'pages_manage_posts'],
  pageFields: 'id,name,access_token,picture{url},followers_count,fan_count',
  profileFields: 'id,name,picture{url},followers_count,fan_count',
  accountsOf: (p) => (typeof p.access_token === 'string' ? [{ account: p, token: p.access_token }] : []),
  account: (page) => ({
    id: page.id,
    type: 'page',
    handle: page.name ?? page.id,
    name: page.name,
    avatar: page.picture?.data?.url,
    followers: page.followers_count ?? page.fan_count,
  }),
});
