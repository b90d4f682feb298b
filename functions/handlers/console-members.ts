import { ActError } from '#core/people';
import { actorOf, consolePage, frameOf, inPeoplesWords, orgOf } from '#handlers/support/console';
import { messageOf, withMessage } from '#handlers/views/layout';
import { INVITE_FIELDS, invitedPage, membersPage, removePage } from '#handlers/views/members';
import { pageAnswer, redirectAnswer } from '#shared/console';
import { activeKeysOf } from '#usecases/api-keys';
import { changeMemberRole, inviteMember, listMembers, removeMember } from '#usecases/members';

// Members: the list (everyone); invite, change a role, remove (owners — the use cases decide). An
// invitation's link is rendered at once, never redirected to: it is shown once.

const NO_MEMBER = { not_found: 'This workspace has no such member: they may have been removed meanwhile.' };

export const { handler } = consolePage('consoleMembers', {
  'GET /console/members': {
    who: 'person',
    run: async ({ signedIn, query }) => {
      const [frame, members] = await Promise.all([
        frameOf(signedIn),
        listMembers({ orgId: orgOf(signedIn), actor: actorOf(signedIn) }),
      ]);
      const isOwner = signedIn.user.role === 'owner';
      const removing = query.get('remove');
      if (removing === null)
        return pageAnswer(membersPage({ frame, members, isOwner, message: messageOf(query) }));
      const member = members.find((m) => m.id === removing);
      if (!member) throw new ActError('This workspace has no such member.', 'not_found');
      if (!isOwner) throw new ActError('Only owners remove members.', 'forbidden');
      const keys = await activeKeysOf({
        orgId: orgOf(signedIn),
        actor: actorOf(signedIn),
        userId: member.id,
        now: new Date(),
      });
      return pageAnswer(removePage({ frame, member, keys }));
    },
  },
  'POST /console/members': {
    who: 'person',
    run: async ({ signedIn, form, site, now }) => {
      const email = form.get('email')?.trim() ?? '';
      const role = form.get('role') ?? '';
      const actor = actorOf(signedIn);
      try {
        const invited = await inviteMember({
          orgId: orgOf(signedIn),
          actor,
          email,
          role,
          consoleUrl: site.origin,
          now,
        });
        const frame = await frameOf(signedIn);
        return pageAnswer(
          invitedPage({
            frame,
            email: invited.user.email,
            role: invited.user.role,
            enrollment: invited.enrollment,
            emailed: invited.emailed,
          }),
          {
            status: 201,
          },
        );
      } catch (err) {
        // A refused form is shown again, filled in, with the reason by the field it is about.
        if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
        const field = /role/i.test(err.message) ? INVITE_FIELDS.role : INVITE_FIELDS.email;
        const [frame, members] = await Promise.all([
          frameOf(signedIn),
          listMembers({ orgId: orgOf(signedIn), actor }),
        ]);
        const errors = [{ field, message: err.message }];
        return pageAnswer(
          membersPage({
            frame,
            members,
            isOwner: signedIn.user.role === 'owner',
            form: { email, role, errors },
          }),
          { status: 400 },
        );
      }
    },
  },
  'POST /console/members/{id}/role': {
    who: 'person',
    run: async ({ signedIn, params, form, now }) => {
      const role = form.get('role') ?? '';
      await inPeoplesWords(NO_MEMBER, () =>
        changeMemberRole({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          userId: params.id ?? '',
          role,
          now,
        }),
      );
      return redirectAnswer(withMessage('/console/members', 'role_changed'));
    },
  },
  'POST /console/members/{id}/remove': {
    who: 'person',
    run: async ({ signedIn, params, form, now }) => {
      await inPeoplesWords(NO_MEMBER, () =>
        removeMember({
          orgId: orgOf(signedIn),
          actor: actorOf(signedIn),
          userId: params.id ?? '',
          revokeKeys: form.get('revoke_keys') === 'on',
          now,
        }),
      );
      return redirectAnswer(withMessage('/console/members', 'member_removed'));
    },
  },
});
