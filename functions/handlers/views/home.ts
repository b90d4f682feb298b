import { canChangeSettings, canMintKeys, type Role } from '#core/accounts';
import { html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#lib/operations';
import { type Frame, layout } from './layout.ts';

// The overview: the workspace, the person's role in words, and where to go from here.

const ROLE_SUMMARY: Record<Role, string> = {
  owner: 'As an owner you run everything here: keys, members, settings and the audit log.',
  admin: 'As an admin you mint and revoke API keys and approve posts.',
  member: 'As a member you see the workspace; owners and admins make the changes.',
};

export function homePage(o: { frame: Frame; role: Role; message?: string | null }): SafeHtml {
  const cards = [
    {
      href: `${CONSOLE_PATH}/keys`,
      title: 'API keys',
      text: canMintKeys(o.role)
        ? 'Mint keys for your applications, see when they were last used, revoke them.'
        : 'The keys your applications use, and when they were last used.',
    },
    {
      href: `${CONSOLE_PATH}/members`,
      title: 'Members',
      text:
        o.role === 'owner'
          ? 'Invite people, change their roles, remove them.'
          : 'The people of this workspace and their roles.',
    },
    {
      href: `${CONSOLE_PATH}/settings`,
      title: 'Settings',
      text: canChangeSettings(o.role)
        ? 'Dangerous AI operations, approvals and landing origins.'
        : 'The workspace rules the API applies.',
    },
    ...(o.role === 'owner'
      ? [{ href: `${CONSOLE_PATH}/audit`, title: 'Audit log', text: 'Who did what, and when.' }]
      : []),
    {
      href: `${CONSOLE_PATH}/passkeys`,
      title: 'Your passkeys',
      text: 'Add a passkey on another device, or remove one.',
    },
  ];
  return layout({
    title: 'Overview',
    frame: o.frame,
    section: 'home',
    message: o.message ?? null,
    body: html`<h1 class="heading">${o.frame.orgName ?? 'Your workspace'}</h1>
<p class="lead">${ROLE_SUMMARY[o.role]}</p>
<ul class="cards">${cards.map(
      (c) =>
        html`<li class="card"><h2 class="heading heading--s"><a href="${c.href}">${c.title}</a></h2><p>${c.text}</p></li>`,
    )}</ul>`,
  });
}
