import type { SignedIn } from '#core/people';
import { actorOf, frameOf, orgOf } from '#handlers/support/console';
import { mediaItemPage } from '#handlers/views/media';
import { pageAnswer } from '#shared/console';
import { getMediaForPerson } from '#usecases/console-media';

// A media asset's page as the console answers it: for the media library's function and for
// "Suggest alt text" (in the suggestion function).

export async function mediaAnswer(
  signedIn: SignedIn,
  id: string,
  o: { message?: string | null; status?: number } = {},
) {
  const [frame, details] = await Promise.all([
    frameOf(signedIn),
    getMediaForPerson({ orgId: orgOf(signedIn), actor: actorOf(signedIn), id }),
  ]);
  return pageAnswer(
    mediaItemPage({ frame, details, message: o.message ?? null }),
    o.status ? { status: o.status } : {},
  );
}
