import type { SignedIn } from '#core/people';
import { actorOf, frameOf, orgOf } from '#handlers/support/console';
import { mediaItemPage } from '#handlers/views/media';
import { pageAnswer } from '#shared/console';
import { getMediaForPerson } from '#usecases/console-media';
import type { AltTextSuggestion } from '#usecases/console-suggest';

// A media asset's page as the console answers it: for the media library's function and for
// "Suggest alt text" (the suggestion function).

export async function mediaAnswer(
  signedIn: SignedIn,
  id: string,
  o: { message?: string | null; refused?: string; suggested?: AltTextSuggestion; status?: number } = {},
) {
  const [frame, details] = await Promise.all([
    frameOf(signedIn),
    getMediaForPerson({ orgId: orgOf(signedIn), actor: actorOf(signedIn), id }),
  ]);
  return pageAnswer(
    mediaItemPage({
      frame,
      details,
      message: o.message ?? null,
      ...(o.refused ? { refused: o.refused } : {}),
      ...(o.suggested ? { suggested: o.suggested } : {}),
    }),
    o.status ? { status: o.status } : {},
  );
}
