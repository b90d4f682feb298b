import { Duration, type RemovalPolicy, Size, type Stack } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { LayerVersion } from 'aws-cdk-lib/aws-lambda';
import { AI_ENV, INFERENCE_PROFILE_PREFIX, OPENAI_KEY_CONTEXT } from '../../functions/shared/ai-settings.ts';
import { INBOX_DISABLED_ENV, INBOX_RETENTION_ENV } from '../../functions/shared/inbox-settings.ts';
import { HeraldFunction } from '../herald-function.ts';
import type { Access } from '../operations.ts';
import type { AiSettings, BedrockSettings, StageConfig } from '../stage.ts';
import { type Alarms, addFunctionAlarm } from './alarms.ts';
import type { Data, Secrets } from './data.ts';
import { type Media, newFfmpegLayer, PDF_READER_PATH, PROBE_ARCHITECTURE } from './media.ts';

/**
 * One function of the manifest: an operation, a worker, the MCP server or the fallback all have
 * this shape, so their manifest entries are passed as they are.
 */
export interface FunctionOptions {
  readonly id: string;
  /** Handler module relative to the repository root. */
  readonly entry: string;
  readonly access: Access;
  /** @default DEFAULT_TIMEOUT_SECONDS (lib/operations.ts) */
  readonly timeoutSeconds?: number;
  /** @default 1024 */
  readonly memoryMb?: number;
  /** esbuild aliases of its bundle (the MCP server). */
  readonly bundleAliases?: Record<string, string>;
  /** Shell commands run after bundling (the console's assets copied next to the bundle). */
  readonly afterBundling?: (inputDir: string, outputDir: string) => string[];
}

export interface FunctionsProps {
  readonly config: StageConfig;
  readonly removalPolicy: RemovalPolicy;
  readonly data: Data;
  readonly secrets: Secrets;
  readonly media: Media;
  /** Each function gets its error-rate alarm from here. */
  readonly alarms: Alarms;
  /** The API's own origin (its custom domain when it has one), for every function. */
  readonly apiUrl: string;
}

/**
 * Makes every HeraldFunction of the app, each in the stack it is given, turning its manifest
 * `access` into grants and environment; each gets its error-rate alarm next to it.
 */
export class Functions {
  /** Every function made, keyed by manifest id, in the order made. */
  readonly all = new Map<string, HeraldFunction>();
  readonly #ffmpegLayers = new Map<Stack, LayerVersion>();

  constructor(private readonly props: FunctionsProps) {}

  get(id: string): HeraldFunction {
    const fn = this.all.get(id);
    if (!fn) throw new Error(`no function ${id}`);
    return fn;
  }

  make(
    stack: Stack,
    { id, entry, access, timeoutSeconds, memoryMb, bundleAliases, afterBundling }: FunctionOptions,
  ): HeraldFunction {
    if (this.all.has(id)) throw new Error(`function ${id} made twice`);
    const { config, removalPolicy, data, secrets, media, alarms, apiUrl } = this.props;
    const fn = new HeraldFunction(stack, id, {
      entry,
      ...(bundleAliases ? { bundleAliases } : {}),
      ...(afterBundling ? { afterBundling } : {}),
      ...(timeoutSeconds ? { timeout: Duration.seconds(timeoutSeconds) } : {}),
      ...(memoryMb ? { memorySize: memoryMb } : {}),
      logRemovalPolicy: removalPolicy,
      tracing: config.tracing,
      // Without a docsUrl the problem types point at the deployment's own /docs (HERALD_API_URL's).
      environment: { HERALD_API_URL: apiUrl, ...(config.docsUrl ? { HERALD_DOCS_URL: config.docsUrl } : {}) },
      // Only the probe and fit functions get the ffmpeg/ffprobe layer (and its architecture, and
      // /tmp room for a 1 GiB video plus its poster, or plus its rendition).
      ...(access.ffmpeg
        ? {
            layers: [this.#ffmpegLayer(stack)],
            architecture: PROBE_ARCHITECTURE,
            ephemeralStorageSize: Size.gibibytes(2),
          }
        : {}),
    });
    if (access.media) {
      media.grant(fn, access.media);
      for (const [k, v] of Object.entries(media.environment())) fn.addEnvironment(k, v);
    }
    if (access.queueBodies?.length) media.grantQueueBodies(fn, access.queueBodies);
    if (access.cardImages) media.grantCardImages(fn);
    if (access.ffmpeg) {
      fn.addEnvironment('HERALD_FFPROBE_PATH', '/opt/bin/ffprobe');
      fn.addEnvironment('HERALD_FFMPEG_PATH', '/opt/bin/ffmpeg');
      fn.addEnvironment('HERALD_PDF_RENDERER', PDF_READER_PATH);
    }
    if (access.table !== 'none') fn.bindTable(data.table, access.table);
    if (access.connectionSecrets?.length) {
      fn.addEnvironment('CONNECTION_SECRETS_KEY_ID', secrets.connectionSecretsKey.keyArn);
      secrets.connectionSecretsKey.grant(
        fn,
        ...access.connectionSecrets.map((use) => (use === 'seal' ? 'kms:GenerateDataKey' : 'kms:Decrypt')),
      );
    }
    if (config.publicUrl) fn.addEnvironment('HERALD_PUBLIC_URL', config.publicUrl);
    // The inbox's settings, only where set (the functions' defaults otherwise): the poller and the
    // channel's `inbox` state read them.
    if (access.table !== 'none' && config.inbox.retentionDays !== undefined)
      fn.addEnvironment(INBOX_RETENTION_ENV, String(config.inbox.retentionDays));
    if (access.table !== 'none' && config.inbox.disabledPlatforms.length)
      fn.addEnvironment(INBOX_DISABLED_ENV, config.inbox.disabledPlatforms.join(','));
    if (access.secrets?.length) {
      fn.addEnvironment('WEBHOOK_SECRETS_KEY_ID', secrets.webhookSecretsKey.keyArn);
      secrets.webhookSecretsKey.grant(
        fn,
        ...access.secrets.map((use) => (use === 'encrypt' ? 'kms:Encrypt' : 'kms:Decrypt')),
      );
    }
    if (access.email && config.notifySender) {
      fn.addEnvironment('HERALD_NOTIFY_FROM', config.notifySender);
      const identity = `arn:${stack.partition}:ses:${stack.region}:${stack.account}:identity`;
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['ses:SendEmail'],
          resources: [
            `${identity}/${config.notifySender}`,
            `${identity}/${config.notifySender.split('@')[1]}`,
          ],
        }),
      );
    }
    if (access.ai && config.ai) grantAi(stack, fn, config.ai, secrets);
    if (access.cursor) {
      // A CloudFormation dynamic reference ({{resolve:secretsmanager:…}}), resolved at deploy time
      // into the function's configuration. Acceptable because the secret only makes list cursors
      // tamper-evident (lib/constructs/data.ts); it saves a Secrets Manager call on every cold start.
      fn.addEnvironment('HERALD_CURSOR_SECRET', secrets.cursorSecret.secretValue.unsafeUnwrap());
    }
    addFunctionAlarm(stack, alarms, id, fn);
    this.all.set(id, fn);
    return fn;
  }

  /** One layer per stack that has an ffmpeg function (lib/constructs/media.ts says why). */
  #ffmpegLayer(stack: Stack): LayerVersion {
    let layer = this.#ffmpegLayers.get(stack);
    if (!layer) {
      layer = newFfmpegLayer(stack, this.props.removalPolicy);
      this.#ffmpegLayers.set(stack, layer);
    }
    return layer;
  }
}

/**
 * What InvokeModel is granted on for the Bedrock setting (`region`: where it is called): a
 * foundation model there; or an inference profile there and its foundation model in every
 * destination region, which Bedrock authorizes the routed request against; a `global.` profile
 * routes to any commercial region, for which Bedrock checks the region-less model ARN instead.
 */
export function bedrockInvokeResources(
  bedrock: Pick<BedrockSettings, 'modelId' | 'regions'>,
  region: string,
): Array<{ region: string; inAccount: boolean; resource: string }> {
  const model = bedrock.modelId.replace(INFERENCE_PROFILE_PREFIX, '');
  const foundation = (r: string) => ({ region: r, inAccount: false, resource: `foundation-model/${model}` });
  if (!INFERENCE_PROFILE_PREFIX.test(bedrock.modelId)) return [foundation(region)];
  const profile = { region, inAccount: true, resource: `inference-profile/${bedrock.modelId}` };
  if (bedrock.modelId.startsWith('global.')) return [profile, foundation(region), foundation('')];
  return [profile, ...bedrock.regions.map(foundation)];
}

/**
 * The generation engine's environment and grants: InvokeModel on exactly the configured model
 * (an inference profile: the profile, and its foundation model in every destination region, which
 * the profile's requests are authorized against), ApplyGuardrail on the guardrail (Converse with
 * guardrailConfig applies it under the caller's role), or Decrypt of the OpenAI-compatible key
 * under its own encryption context only.
 */
function grantAi(stack: Stack, fn: HeraldFunction, ai: AiSettings, secrets: Secrets): void {
  fn.addEnvironment(AI_ENV.images, String(ai.images));
  if (ai.timeoutMs !== undefined) fn.addEnvironment(AI_ENV.timeoutMs, String(ai.timeoutMs));
  const { bedrock, openai } = ai;
  if (bedrock) {
    const region = bedrock.region ?? stack.region;
    const arn = (r: string, account: string, resource: string) =>
      `arn:${stack.partition}:bedrock:${r}:${account}:${resource}`;
    fn.addEnvironment(AI_ENV.bedrockModelId, bedrock.modelId);
    if (bedrock.region) fn.addEnvironment(AI_ENV.bedrockRegion, bedrock.region);
    fn.addToRolePolicy(
      new PolicyStatement({
        actions: ['bedrock:InvokeModel'],
        resources: bedrockInvokeResources(bedrock, region).map((r) =>
          arn(r.region, r.inAccount ? stack.account : '', r.resource),
        ),
      }),
    );
    if (bedrock.guardrail) {
      fn.addEnvironment(AI_ENV.bedrockGuardrailId, bedrock.guardrail.id);
      fn.addEnvironment(AI_ENV.bedrockGuardrailVersion, bedrock.guardrail.version);
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['bedrock:ApplyGuardrail'],
          resources: [arn(region, stack.account, `guardrail/${bedrock.guardrail.id}`)],
        }),
      );
    }
  }
  if (openai) {
    fn.addEnvironment(AI_ENV.openAiBaseUrl, openai.baseUrl);
    fn.addEnvironment(AI_ENV.openAiModel, openai.model);
    if (openai.keyCiphertext) {
      fn.addEnvironment(AI_ENV.openAiKeyCiphertext, openai.keyCiphertext);
      fn.addToRolePolicy(
        new PolicyStatement({
          actions: ['kms:Decrypt'],
          resources: [secrets.connectionSecretsKey.keyArn],
          conditions: { StringEquals: { 'kms:EncryptionContext:herald': OPENAI_KEY_CONTEXT.herald } },
        }),
      );
    }
  }
}
