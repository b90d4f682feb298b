import type { RequestGate } from '#shared/http';
import { admit, unmeter } from '#usecases/support/admission';
import { authenticate, authorize, forgetKey } from '#usecases/support/authenticate';

/** The API pipeline's questions about a request's key, answered by the use cases. */
export const requestGate: RequestGate = {
  authenticate: (headers) => authenticate(headers),
  authorize,
  admit: async (auth, nowMs, posts) => {
    const a = await admit(auth, nowMs, posts);
    // A key the gate found revoked leaves this container's cache at once.
    if (!a.allowed && a.error.code === 'invalid_api_key') forgetKey(auth.keyId);
    return a;
  },
  unmeter,
};
