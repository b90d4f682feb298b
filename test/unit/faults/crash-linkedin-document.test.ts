import { describe, expect, it } from 'vitest';
import type { DeliveryMessage } from '#core/messages';
import { type DeliveryRecord, type PostRecord, startPublishing } from '#core/posts';
import { handler as worker } from '#handlers/delivery-worker';
import { s3 } from '#shared/s3';
import type { FakeLinkedIn } from '../../fakes/linkedin.ts';
import { makePdf } from '../../support/media-samples.ts';
import { fixedId, mediaAsset, mediaItem, ORG_ID, org, orgItem, post, postItem } from '../support/fixtures.ts';
import { POST_WRITES } from './support/dynamo.ts';
import { FakeS3 } from './support/s3.ts';
import { visibilityMs } from './support/sqs.ts';
import {
  connected,
  DELIVERY_QUEUE,
  drain,
  platformRequests,
  storedPost,
  T0,
  useWorld,
  whenPlatformAnswers,
} from './support/world.ts';

// A LinkedIn document post through the real delivery worker, killed between the upload and the post:
// the PDF is up (initializeUpload, PUT) and its URN checkpointed; from LinkedIn's first status answer
// on, every write of the worker fails (as if its Lambda died there), so no POST /rest/posts is made
// and the delivery stays `sending`. The redelivery after the lease must reuse the document — no
// second initializeUpload or PUT — and make exactly one post.

const world = useWorld();
const { table, sqs } = world;
const bucket = new FakeS3();
bucket.install(s3);
const MEDIA_BUCKET = process.env.HERALD_MEDIA_BUCKET as string;

function seedDocumentDelivery() {
  const pdf = makePdf(3);
  const asset = mediaAsset({
    id: fixedId('media', 7),
    status: 'ready',
    kind: 'document',
    filename: 'deck.pdf',
    content_type: 'application/pdf',
    size_bytes: pdf.length,
    ...({ page_count: 3 } as object),
  });
  bucket.put(MEDIA_BUCKET, asset.object_key, pdf, 'application/pdf');
  const ch = connected(1, 'linkedin', { access_token: 'token', account_id: 'urn:li:person:8675309' });
  const p: PostRecord = startPublishing(
    post({
      id: fixedId('post', 7),
      variants: [
        {
          id: fixedId('variant', 7),
          channel_id: ch.channel.id,
          body: 'Our deck, crash-tested',
          media: [{ url: asset.url, type: 'document', alt: '' }],
          options: { format: 'document', document_title: 'The deck' },
        },
      ],
    }),
    new Date(Date.now() - 1000),
  );
  table.seed(orgItem(org()), ...ch.items, mediaItem(asset), postItem(p));
  const msg: DeliveryMessage = { org_id: ORG_ID, post_id: p.id, channel_id: ch.channel.id, round: p.round };
  sqs.put(DELIVERY_QUEUE, msg);
  return {
    pdf,
    delivery: () => storedPost(table, p.id).deliveries[ch.channel.id] as DeliveryRecord,
  };
}

describe('a LinkedIn document post killed between the upload and the post', () => {
  it('the redelivery reuses the checkpointed document and posts once', async () => {
    // Arrange
    const fake = world.fakes.fake<FakeLinkedIn>('linkedin');
    const k = seedDocumentDelivery();
    let dead = false;
    whenPlatformAnswers(world.fakes, 'linkedin', (req) => {
      if (req.method === 'GET' && req.path.startsWith('/rest/documents/')) dead = true;
    });
    table.fail({ op: POST_WRITES, kind: 'ECONNRESET', times: Number.POSITIVE_INFINITY, match: () => dead });

    // Act 1: the first receive uploads the PDF, saves its URN, and dies before the post.
    const first = await drain(sqs, DELIVERY_QUEUE, worker, { horizonMs: 0 });

    // Assert 1
    expect(first.map((r) => r.failed.length)).toEqual([1]);
    expect(fake.posts).toHaveLength(0);
    const checkpoint = k.delivery().checkpoint as { stage?: string; document?: string } | null;
    expect(checkpoint).toMatchObject({
      stage: 'document',
      document: expect.stringMatching(/^urn:li:document:/),
    });
    expect(k.delivery()).toMatchObject({ stage: 'sending', external_id: null });

    // Act 2: the worker comes back; SQS redelivers after the visibility timeout.
    dead = false;
    table.heal();
    const after = await drain(sqs, DELIVERY_QUEUE, worker);

    // Assert 2: the same document, one upload, one post, recorded.
    expect(after[0]?.at).toBe(T0.getTime() + visibilityMs('delivery'));
    expect(platformRequests(world.fakes, 'linkedin', 'POST', /^\/rest\/documents$/)).toHaveLength(1);
    expect(platformRequests(world.fakes, 'linkedin', 'PUT', /^\/dms-uploads\/document\//)).toHaveLength(1);
    expect(platformRequests(world.fakes, 'linkedin', 'POST', /^\/rest\/posts$/)).toHaveLength(1);
    expect(fake.posts).toHaveLength(1);
    expect(fake.posts[0]?.document).toEqual({ urn: checkpoint?.document, title: 'The deck' });
    expect(Buffer.compare(fake.posts[0]?.media[0]?.bytes ?? Buffer.alloc(0), k.pdf)).toBe(0);
    expect(k.delivery()).toMatchObject({ stage: 'published', external_id: fake.posts[0]?.urn, error: null });
    expect(sqs.waiting(DELIVERY_QUEUE)).toEqual([]);
  });
});
