import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import {
  AllowedMethods,
  CachePolicy,
  Distribution,
  HttpVersion,
  PriceClass,
  ViewerProtocolPolicy,
} from 'aws-cdk-lib/aws-cloudfront';
import { S3BucketOrigin } from 'aws-cdk-lib/aws-cloudfront-origins';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { Architecture, Code, LayerVersion } from 'aws-cdk-lib/aws-lambda';
import { BlockPublicAccess, Bucket, BucketEncryption, ObjectOwnership } from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { CARD_IMAGE_PREFIX } from '../../functions/core/link-cards.ts';
import { QUEUE_BODY_BUCKET_ENV, QUEUE_BODY_DAYS, QUEUE_BODY_PREFIX } from '../../functions/core/messages.ts';
import { stageFfmpegLayer, stagePdfReader } from '../ffmpeg-layer.ts';
import { REPO_ROOT } from '../herald-function.ts';
import type { Access } from '../operations.ts';

// Media: the upload bucket (clients PUT there with presigned URLs; never served; what is never
// completed expires after a day; it also keeps the queue messages sent by reference, under their
// own prefix and expiry: no bucket of their own, one resource fewer), the media bucket (probed copies and posters, private, served only
// through CloudFront with origin access control), and the ffmpeg/ffprobe layer of the probe function
// (which also carries its PDF reader).

/**
 * Architecture of the probe function. x86_64: its binaries are then the very ones the tests run on
 * a linux-x64 machine (CI); the layer is built for it whatever the host (lib/ffmpeg-layer.ts).
 */
export const PROBE_ARCHITECTURE = Architecture.X86_64;

/** The only media-bucket objects the probe function may write: posters (core/media.ts posterKeyOf). */
export const PROBE_POSTER_OBJECTS = 'orgs/*/media/*/_poster.jpg';

/** The only media-bucket objects the fit function may write: renditions (core/media-fit.ts renditionKeyOf). */
export const FIT_RENDITION_OBJECTS = 'orgs/*/media/*/_fit-*';

let stagedLayerDir: string | undefined;

/** Where the PDF reader's bundle is in the layer (adapters/media-tools.ts pdfRenderer). */
export const PDF_READER_PATH = '/opt/pdf/render.mjs';

/**
 * The layer's /opt: the two binaries for the probe's architecture, the PDF reader (pdf.js bundled,
 * its fonts, and @napi-rs/canvas with the architecture's skia binary) and their notices. Staged once
 * per process (every synth of it reads the same files) and removed when the process ends: the
 * synth has copied it into its assets by then, and 141 MB per synth would otherwise pile up.
 */
function ffmpegLayerDir(): string {
  if (stagedLayerDir) return stagedLayerDir;
  const dir = mkdtempSync(join(tmpdir(), 'herald-ffmpeg-layer-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const arch = PROBE_ARCHITECTURE === Architecture.ARM_64 ? 'arm64' : 'x64';
  const resolve = { root: REPO_ROOT, cacheDir: join(REPO_ROOT, '.build', 'media-tools') };
  stageFfmpegLayer(arch, dir, resolve);
  stagePdfReader(arch, dir, resolve);
  copyFileSync(join(REPO_ROOT, 'NOTICE'), join(dir, 'licenses', 'NOTICE'));
  stagedLayerDir = dir;
  return dir;
}

/**
 * The ffmpeg/ffprobe layer, made in the stack of the function that uses it: a layer's ARN changes
 * with every new version, and a value another stack imports cannot change.
 */
export function newFfmpegLayer(scope: Construct, removalPolicy: RemovalPolicy): LayerVersion {
  return new LayerVersion(scope, 'FfmpegLayer', {
    description:
      'ffmpeg and ffprobe (from @ffmpeg-installer / @ffprobe-installer) in /opt/bin; the PDF reader (pdfjs-dist, @napi-rs/canvas) in /opt/pdf; notices in /opt/licenses',
    code: Code.fromAsset(ffmpegLayerDir()),
    compatibleArchitectures: [PROBE_ARCHITECTURE],
    removalPolicy,
  });
}

export class Media extends Construct {
  readonly uploadBucket: Bucket;
  readonly mediaBucket: Bucket;
  readonly distribution: Distribution;
  /** `https://<distribution domain>`: asset urls start with it. */
  readonly baseUrl: string;

  constructor(scope: Construct, id: string, props: { removalPolicy: RemovalPolicy }) {
    super(scope, id);
    const common = {
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: props.removalPolicy,
      // Dev only (DESTROY): emptied on stack deletion so a dev destroy completes.
      autoDeleteObjects: props.removalPolicy === RemovalPolicy.DESTROY,
    };
    this.uploadBucket = new Bucket(this, 'UploadBucket', {
      ...common,
      lifecycleRules: [
        // Completed uploads are deleted by completeMediaUpload; this removes the ones never completed.
        {
          id: 'expire-uploads',
          prefix: 'uploads/',
          expiration: Duration.days(1),
          abortIncompleteMultipartUploadAfter: Duration.days(1),
        },
        // Bodies of queue messages sent by reference, kept longer than any message can live.
        { id: 'expire-queue-bodies', prefix: QUEUE_BODY_PREFIX, expiration: Duration.days(QUEUE_BODY_DAYS) },
      ],
    });
    this.mediaBucket = new Bucket(this, 'MediaBucket', {
      ...common,
      lifecycleRules: [
        { id: 'abort-multipart', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        // Link cards' images stored for re-encoding (and their renditions): read once, then gone.
        { id: 'expire-card-images', prefix: CARD_IMAGE_PREFIX, expiration: Duration.days(1) },
      ],
    });
    this.distribution = new Distribution(this, 'MediaCdn', {
      comment: 'Herald media assets',
      httpVersion: HttpVersion.HTTP2_AND_3,
      priceClass: PriceClass.PRICE_CLASS_100,
      defaultBehavior: {
        origin: S3BucketOrigin.withOriginAccessControl(this.mediaBucket),
        viewerProtocolPolicy: ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
        allowedMethods: AllowedMethods.ALLOW_GET_HEAD,
        cachePolicy: CachePolicy.CACHING_OPTIMIZED,
        compress: false,
      },
    });
    this.baseUrl = `https://${this.distribution.distributionDomainName}`;
  }

  /** Environment every media-using function gets. */
  environment(): Record<string, string> {
    return {
      HERALD_UPLOAD_BUCKET: this.uploadBucket.bucketName,
      HERALD_MEDIA_BUCKET: this.mediaBucket.bucketName,
      HERALD_MEDIA_BASE_URL: this.baseUrl,
    };
  }

  /** Queue bodies by reference: the bucket's name, and the object actions on that prefix only. */
  grantQueueBodies(
    fn: IGrantable & { addEnvironment(k: string, v: string): unknown },
    uses: Access['queueBodies'] = [],
  ): void {
    const actions = uses.map((use) => (use === 'put' ? 's3:PutObject' : 's3:GetObject'));
    if (!actions.length) return;
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({ actions, resources: [`${this.uploadBucket.bucketArn}/${QUEUE_BODY_PREFIX}*`] }),
    );
    fn.addEnvironment(QUEUE_BODY_BUCKET_ENV, this.uploadBucket.bucketName);
  }

  /** Link cards' images, stored for the fit function to re-encode: PutObject on their prefix only. */
  grantCardImages(fn: IGrantable): void {
    fn.grantPrincipal.addToPrincipalPolicy(
      new PolicyStatement({
        actions: ['s3:PutObject'],
        resources: [`${this.mediaBucket.bucketArn}/${CARD_IMAGE_PREFIX}media/*`],
      }),
    );
  }

  /** Least privilege per the manifest's `media` access (object actions on the used prefixes only). */
  grant(fn: IGrantable, access: NonNullable<Access['media']>): void {
    const uploads = `${this.uploadBucket.bucketArn}/uploads/*`;
    const media = `${this.mediaBucket.bucketArn}/orgs/*`;
    const allow = (actions: string[], resources: string[]) =>
      fn.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
    if (access === 'presign') allow(['s3:PutObject'], [uploads]);
    if (access === 'RO') allow(['s3:GetObject'], [media]);
    if (access === 'probe') {
      allow(['s3:GetObject'], [uploads]);
      allow(['s3:PutObject'], [`${this.mediaBucket.bucketArn}/${PROBE_POSTER_OBJECTS}`]);
    }
    if (access === 'fit') {
      allow(['s3:GetObject'], [media]);
      // A rendition not made yet answers 404 (not 403) to its HeadObject.
      allow(['s3:ListBucket'], [this.mediaBucket.bucketArn]);
      // Renditions (multipart for large videos) and the marker of one in the making (removed once
      // it is made or refused).
      allow(
        ['s3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        [`${this.mediaBucket.bucketArn}/${FIT_RENDITION_OBJECTS}`],
      );
    }
    if (access === 'RW') {
      allow(['s3:GetObject', 's3:DeleteObject'], [uploads]);
      // Without ListBucket a missing object answers 403 instead of 404.
      allow(['s3:ListBucket'], [this.uploadBucket.bucketArn]);
      allow(['s3:PutObject'], [media]);
    }
    if (access === 'import') {
      // The fetched bytes go to uploads (multipart for large files), then as RW; a refused or
      // failed import removes its copy and poster.
      allow(['s3:PutObject', 's3:GetObject', 's3:DeleteObject', 's3:AbortMultipartUpload'], [uploads]);
      allow(['s3:ListBucket'], [this.uploadBucket.bucketArn]);
      allow(['s3:PutObject', 's3:DeleteObject'], [media]);
    }
    if (access === 'delete') {
      allow(['s3:DeleteObject'], [uploads]);
      allow(['s3:DeleteObject'], [media]);
    }
  }
}
