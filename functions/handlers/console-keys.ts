import { canMintKeys } from '#core/accounts';
import { ActError } from '#core/people';
import { actorOf, consolePage, frameOf, inPeoplesWords, orgOf } from '#handlers/support/console';
import { keysPage, MINT_FIELDS, mintedPage, revokePage } from '#handlers/views/keys';
import { messageOf, withMessage } from '#handlers/views/layout';
import { pageAnswer, redirectAnswer } from '#shared/console';
import { listKeys, mintKey, revokeKey } from '#usecases/api-keys';

// API keys: list (everyone), mint and revoke (owners and admins — the use cases decide; a member's
// POST gets their 403). A minted key is rendered at once, never redirected to: it is shown once.

export const { handler } = consolePage('consoleKeys', {
  'GET /console/keys': {
    who: 'person',
    run: async ({ signedIn, query, now }) => {
      const [frame, keys] = await Promise.all([
        frameOf(signedIn),
        listKeys({ orgId: orgOf(signedIn), actor: actorOf(signedIn), now }),
      ]);
      const canMint = canMintKeys(signedIn.user.role);
      const revoking = query.get('revoke');
      if (revoking === null) return pageAnswer(keysPage({ frame, keys, canMint, message: messageOf(query) }));
      const key = keys.find((k) => k.id === revoking && !k.revoked_at);
      if (!key) throw new ActError('This workspace has no such key, or it is already revoked.', 'not_found');
      if (!canMint) throw new ActError('Only owners and admins revoke keys.', 'forbidden');
      return pageAnswer(revokePage({ frame, key }));
    },
  },
  'POST /console/keys': {
    who: 'person',
    run: async ({ signedIn, form, now }) => {
      const name = form.get('name')?.trim() || undefined;
      const scopes = form.getAll('scopes');
      const actor = actorOf(signedIn);
      try {
        const minted = await mintKey({ orgId: orgOf(signedIn), actor, scopes, name, now });
        return pageAnswer(mintedPage({ frame: await frameOf(signedIn), minted }), { status: 201 });
      } catch (err) {
        // A refused form is shown again, filled in, with the reason by the field it is about.
        if (!(err instanceof ActError && err.kind === 'invalid')) throw err;
        const field = /scope/i.test(err.message) ? MINT_FIELDS.scopes : MINT_FIELDS.name;
        const [frame, keys] = await Promise.all([
          frameOf(signedIn),
          listKeys({ orgId: orgOf(signedIn), actor, now }),
        ]);
        const errors = [{ field, message: err.message }];
        return pageAnswer(
          keysPage({ frame, keys, canMint: canMintKeys(signedIn.user.role), form: { name, scopes, errors } }),
          {
            status: 400,
          },
        );
      }
    },
  },
  'POST /console/keys/{id}/revoke': {
    who: 'person',
    run: async ({ signedIn, params, now }) => {
      await inPeoplesWords(
        {
          not_found: 'This workspace has no such API key.',
          conflict: 'This key is already revoked: nothing changed. Its revocation is in the list.',
        },
        () => revokeKey({ orgId: orgOf(signedIn), actor: actorOf(signedIn), keyId: params.id ?? '', now }),
      );
      return redirectAnswer(withMessage('/console/keys', 'key_revoked'));
    },
  },
});
