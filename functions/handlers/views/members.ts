import { ROLES, type Role } from '#core/accounts';
import { attrs, html, type SafeHtml } from '#core/html';
import { CONSOLE_PATH } from '#core/vocabulary';
import type { ApiKeyView } from '#usecases/api-keys';
import type { EnrollmentLink, MemberView } from '#usecases/members';
import { choices, copyable, errorSummary, type FieldError, textInput } from './forms.ts';
import { type Frame, layout, when } from './layout.ts';
import { dataTable } from './table.ts';

// Members: the people of the workspace and their roles; for owners, the invitation form, a role
// change per person, removal after a confirmation, and the invitation link shown once.

const MEMBERS_PATH = `${CONSOLE_PATH}/members`;

const ROLE_HINTS: Record<Role, string> = {
  owner: 'Everything, including settings, members and the audit log.',
  admin: 'Mints and revokes API keys and approves posts.',
  member: 'Sees the workspace and changes nothing.',
};

export const INVITE_FIELDS = { email: 'invite-email', role: 'invite-role-owner' } as const;

export interface InviteForm {
  email?: string | undefined;
  role?: string | undefined;
  errors: readonly FieldError[];
}

export function membersPage(o: {
  frame: Frame;
  members: readonly MemberView[];
  isOwner: boolean;
  message?: string | null;
  form?: InviteForm;
}): SafeHtml {
  const form = o.form ?? { errors: [] };
  return layout({
    title: o.form?.errors.length ? 'Error: Members' : 'Members',
    frame: o.frame,
    section: 'members',
    message: o.message ?? null,
    body: html`${errorSummary(form.errors)}
<h1 class="heading">Members</h1>
<p class="lead">The people of this workspace. Each signs in with their own passkeys.</p>
${memberList(o.members, o.isOwner, o.frame.signedIn?.user.id)}
${o.isOwner ? inviteForm(form) : html`<p class="inset">Owners invite people, change roles and remove members.</p>`}`,
  });
}

function memberList(members: readonly MemberView[], isOwner: boolean, me: string | undefined): SafeHtml {
  return dataTable({
    id: 'members',
    caption: 'People of this workspace',
    columns: [
      { label: 'Email' },
      { label: 'Role' },
      { label: 'Passkeys' },
      { label: 'Member since' },
      ...(isOwner ? [{ label: 'Actions', hidden: true }] : []),
    ],
    rows: members.map((m) => [
      html`${m.email}${m.id === me && html` <span class="muted">(you)</span>`}`,
      isOwner ? roleForm(m) : m.role,
      m.passkeys === 0 ? html`<span class="tag tag--grey">Not enrolled</span>` : m.passkeys,
      when(m.created_at),
      ...(isOwner
        ? [
            html`<a href="${MEMBERS_PATH}?remove=${encodeURIComponent(m.id)}">Remove<span class="visually-hidden"> ${m.email}</span></a>`,
          ]
        : []),
    ]),
  });
}

function roleForm(m: MemberView): SafeHtml {
  const id = `role-${m.id}`;
  return html`<form method="post" action="${MEMBERS_PATH}/${encodeURIComponent(m.id)}/role" class="inline-form">
<label class="visually-hidden" for="${id}">Role of ${m.email}</label>
<select class="select" id="${id}" name="role">${ROLES.map(
    (r) => html`<option${attrs({ value: r, selected: r === m.role })}>${r}</option>`,
  )}</select>
<button type="submit" class="button button--secondary button--small">Change<span class="visually-hidden"> the role of ${m.email}</span></button>
</form>`;
}

function inviteForm(form: InviteForm): SafeHtml {
  return html`<h2 class="heading heading--m">Invite someone</h2>
<form method="post" action="${MEMBERS_PATH}" novalidate>
${textInput({
  id: INVITE_FIELDS.email,
  name: 'email',
  type: 'email',
  label: 'Email address',
  hint: 'They get a link to register a passkey; it works once, for 30 minutes.',
  value: form.email,
  autocomplete: 'off',
  errors: form.errors,
})}
${choices({
  kind: 'radio',
  idPrefix: 'invite-role',
  name: 'role',
  legend: 'Role',
  items: ROLES.map((r) => ({
    value: r,
    label: r,
    hint: ROLE_HINTS[r],
    checked: (form.role ?? 'member') === r,
  })),
  errors: form.errors,
})}
<button type="submit" class="button">Invite</button>
</form>`;
}

export function invitedPage(o: {
  frame: Frame;
  email: string;
  role: string;
  enrollment: EnrollmentLink;
  emailed: boolean;
}): SafeHtml {
  return layout({
    title: 'Invitation link',
    frame: o.frame,
    section: 'members',
    body: html`<div class="panel">
<h1 class="heading">${o.email} is invited as ${o.role}</h1>
<p class="lead">${o.emailed ? 'We e-mailed them this link. ' : ''}Give them this link: it works once, until ${when(o.enrollment.expires_at)}, and is shown only this once.</p>
</div>
${copyable({ id: 'enrollment-link', label: 'Enrollment link', value: o.enrollment.url })}
<p>If it expires before they use it, the operator can issue a fresh one (<code>herald user enroll</code>).</p>
<p><a href="${MEMBERS_PATH}">Back to members</a></p>`,
  });
}

export function removePage(o: {
  frame: Frame;
  member: MemberView;
  /** The API keys they minted that still work: removing them does not stop those. */
  keys: readonly Pick<ApiKeyView, 'id' | 'name' | 'prefix'>[];
}): SafeHtml {
  return layout({
    title: 'Remove this member?',
    frame: o.frame,
    section: 'members',
    body: html`<h1 class="heading">Remove ${o.member.email}?</h1>
<p class="lead">They are signed out at once and can no longer sign in.</p>
<form method="post" action="${MEMBERS_PATH}/${encodeURIComponent(o.member.id)}/remove">
${
  o.keys.length > 0 &&
  html`<p>The API keys they minted still work after they are removed, unless you revoke them:</p>
<ul class="plain">${o.keys.map((k) => html`<li>${k.name ?? 'Unnamed key'} (<code>${k.prefix}…</code>)</li>`)}</ul>
${choices({
  kind: 'checkbox',
  idPrefix: 'remove',
  name: 'revoke_keys',
  legend: 'Their API keys',
  items: [
    {
      value: 'on',
      label: o.keys.length === 1 ? 'Revoke this key too' : `Revoke these ${o.keys.length} keys too`,
      checked: true,
    },
  ],
})}`
}
<div class="actions">
<button type="submit" class="button button--warning">Remove member</button>
<a href="${MEMBERS_PATH}" class="link">Cancel</a>
</div>
</form>`,
  });
}
