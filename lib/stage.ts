import { RemovalPolicy, Token } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';
import { PLATFORMS, type Platform } from '../functions/core/constants.ts';
import { INFERENCE_PROFILE_PREFIX } from '../functions/shared/ai-settings.ts';

// Per-stage settings, read and validated here once; the stack and the app only see a typed
// StageConfig. They live in `cdk.json` under `context.stages.<stage>` (reviewed like code), so a
// deploy cannot drop one by forgetting a `-c` flag: the passkeys' relying-party id and the OAuth
// callbacks registered with the platforms are bound to the public host, and a missing alarm email
// silently deletes the alarm subscription. docs/operator/settings.md is the operator's side of this.

export const DEFAULT_STAGE = 'dev';
/** Where the settings live, for error messages. */
export const SETTINGS_FILE = 'cdk.json';

/** The keys a stage's entry may hold; anything else is a typo and refused. */
export const SETTING_KEYS = [
  'publicUrl',
  'alarmEmail',
  'notifySender',
  'docsUrl',
  'mcpAllowedOrigins',
  'domainName',
  'certificateArn',
  'hostedZoneId',
  'deliveryConcurrency',
  'webhookConcurrency',
  'dispatcherConcurrency',
  'fanoutConcurrency',
  'channelSyncConcurrency',
  'engagementSyncConcurrency',
  'unpublishConcurrency',
  'mediaImportConcurrency',
  'inboxReplyConcurrency',
  'throttleRateLimit',
  'throttleBurstLimit',
  'tracing',
  'importTable',
  'ticketEmail',
  'inboxRetentionDays',
  'inboxDisabledPlatforms',
  'inboxPollConcurrency',
  'ai',
] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

const STAGE_PATTERN = /^[a-z0-9][a-z0-9-]{0,15}$/;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const CERTIFICATE_ARN = /^arn:aws[a-z-]*:acm:([a-z]{2}(?:-[a-z]+)+-\d):\d{12}:certificate\/[0-9a-f-]{36}$/;
const HOSTED_ZONE_ID = /^Z[A-Z0-9]{1,31}$/;

/**
 * The scale knobs: each setting raises or lowers one queue worker's maximum concurrency (its event
 * source mapping's, in batches at once); unset, the manifest's value (lib/operations.ts) stands.
 */
export const CONCURRENCY_SETTINGS = {
  deliveryConcurrency: 'deliveryWorker',
  webhookConcurrency: 'webhookDelivery',
  dispatcherConcurrency: 'scheduleDispatcher',
  fanoutConcurrency: 'webhookFanout',
  channelSyncConcurrency: 'channelSyncWorker',
  engagementSyncConcurrency: 'engagementSyncWorker',
  unpublishConcurrency: 'unpublishWorker',
  mediaImportConcurrency: 'mediaImportWorker',
  inboxReplyConcurrency: 'inboxReplyWorker',
  inboxPollConcurrency: 'inboxPollWorker',
} as const satisfies Partial<Record<SettingKey, string>>;
type ConcurrencySetting = keyof typeof CONCURRENCY_SETTINGS;

/** SQS event sources accept a maximum concurrency of 2 to 1000. */
export const MAX_CONCURRENCY_RANGE = { min: 2, max: 1000 } as const;
/** The `$default` stage's throttle when the stage sets none (requests per second, burst). */
export const DEFAULT_THROTTLE = { rateLimit: 100, burstLimit: 200 } as const;

/** A table restored from a backup or point in time, which the data stack uses instead of creating one. */
export interface ImportedTable {
  readonly tableName: string;
  /** The restored table's stream (enabled on it by hand: a restore does not carry the stream over). */
  readonly tableStreamArn: string;
}

export interface StageDomain {
  /** The hostname people and platforms use, e.g. herald.example.org. */
  readonly name: string;
  /** A regional ACM certificate for `name`, in the stack's region (an HTTP API regional domain). */
  readonly certificateArn: string;
  /** The Route 53 public hosted zone to put the alias record in; without it, the operator adds the DNS record. */
  readonly hostedZoneId?: string;
}

export interface StageConfig {
  /** Lowercase alphanumerics and dashes, 1–16 characters; part of the stack name. */
  readonly stage: string;
  /** Outside `dev`, data is protected: deletion protection on, resources retained on stack delete. */
  readonly protectData: boolean;
  /**
   * Base URL of the API guide when it is not the deployment's own `/docs`; problem `type` URIs are
   * `{docsUrl}/api/problems/{code}`. Undefined: the deployment serves the guide itself.
   */
  readonly docsUrl: string | undefined;
  /** Where alarm notifications go; no subscription when absent (dev only: required elsewhere). */
  readonly alarmEmail: string | undefined;
  /** Where the ticket alarms go (look today, not now); `alarmEmail` when absent. */
  readonly ticketEmail: string | undefined;
  /**
   * A verified SES identity (email address) the webhook warning emails are sent from; without it
   * the warning shows only as the endpoint's `warning` state and `warned_at`, and in the logs.
   */
  readonly notifySender: string | undefined;
  /** Browser origins the MCP endpoint accepts (comma-separated https origins); none by default. */
  readonly mcpAllowedOrigins: string[];
  /**
   * The deployment's public https origin when it is not the API's own endpoint (a custom domain):
   * platforms send people back to `{publicUrl}/oauth/callback/{platform}`. Without it, each request's
   * own host (dev only: required elsewhere). With a domain, `https://<domain name>`.
   */
  readonly publicUrl: string | undefined;
  /** A custom domain for the API (and so the console); undefined: the execute-api endpoint only. */
  readonly domain: StageDomain | undefined;
  /** Queue workers' maximum concurrency by worker id, where the stage sets one (else the manifest's). */
  readonly concurrency: Readonly<Record<string, number>>;
  /** The API's `$default` stage throttle. */
  readonly throttle: { readonly rateLimit: number; readonly burstLimit: number };
  /** X-Ray active tracing on the functions and the state machine (off unless set). */
  readonly tracing: boolean;
  /** Use this existing table (a restore) instead of creating one; protected stages only. */
  readonly importTable: ImportedTable | undefined;
  /**
   * The inbox: days an item is kept after it was received (undefined: the functions' default, 90),
   * and the platforms whose inbox is not polled at all (X bills every read).
   */
  readonly inbox: { readonly retentionDays: number | undefined; readonly disabledPlatforms: Platform[] };
  /** The generation engine (issue 37); undefined: the rule-based engine, no model is called. */
  readonly ai: AiSettings | undefined;
}

/** Amazon Bedrock: a foundation model, or an inference profile and the regions it routes to. */
export interface BedrockSettings {
  /** `anthropic.claude-…` (a foundation model) or `eu.anthropic.claude-…` (an inference profile). */
  readonly modelId: string;
  /** Where Bedrock is called (the profile's source region); the stack's region when unset. */
  readonly region: string | undefined;
  /** An inference profile's destination regions (its foundation model is invoked in each); [] for a model. */
  readonly regions: string[];
  readonly guardrail: { readonly id: string; readonly version: string } | undefined;
}

/** Any OpenAI-compatible chat endpoint. */
export interface OpenAiSettings {
  readonly baseUrl: string;
  readonly model: string;
  /** The key, encrypted with the connection-secrets key under `herald=ai-openai-key` (base64). */
  readonly keyCiphertext: string | undefined;
}

export interface AiSettings {
  /** Exactly one of the two. */
  readonly bedrock: BedrockSettings | undefined;
  readonly openai: OpenAiSettings | undefined;
  /** The model reads images (alt text is then asked of it). */
  readonly images: boolean;
  /** The model call's deadline, ms; the functions' default (20 s) when unset. */
  readonly timeoutMs: number | undefined;
}

export function parseStage(raw: unknown): string {
  const stage = raw === undefined || raw === null || raw === '' ? DEFAULT_STAGE : raw;
  if (typeof stage !== 'string' || !STAGE_PATTERN.test(stage)) {
    throw new Error(
      `invalid stage ${JSON.stringify(stage)}: use 1-16 lowercase letters, digits or dashes (e.g. dev, prod)`,
    );
  }
  return stage;
}

/** Only `dev` may lose its data; every other stage (prod, staging, a customer's own) keeps it. */
export function isProtectedStage(stage: string): boolean {
  return stage !== DEFAULT_STAGE;
}

/** RETAIN outside dev, DESTROY in dev. */
export function removalPolicyFor(config: Pick<StageConfig, 'protectData'>): RemovalPolicy {
  return config.protectData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY;
}

const absent = (raw: unknown) => raw === undefined || raw === null || raw === '';

function parseDocsUrl(raw: unknown): string | undefined {
  if (absent(raw)) return undefined;
  if (typeof raw !== 'string' || !URL.canParse(raw) || new URL(raw).protocol !== 'https:') {
    throw new Error(`invalid docsUrl ${JSON.stringify(raw)}: an https URL is required`);
  }
  return raw.replace(/\/+$/, '');
}

function parsePublicUrl(raw: unknown): string | undefined {
  if (absent(raw)) return undefined;
  if (
    typeof raw !== 'string' ||
    !URL.canParse(raw) ||
    new URL(raw).protocol !== 'https:' ||
    new URL(raw).origin !== raw.replace(/\/+$/, '')
  )
    throw new Error(`invalid publicUrl ${JSON.stringify(raw)}: an https origin like https://api.example.com`);
  return raw.replace(/\/+$/, '');
}

function parseEmail(name: string, raw: unknown): string | undefined {
  if (absent(raw)) return undefined;
  if (typeof raw !== 'string' || !EMAIL_PATTERN.test(raw)) {
    throw new Error(`invalid ${name} ${JSON.stringify(raw)}: an email address is required`);
  }
  return raw;
}

function parseOrigins(raw: unknown): string[] {
  if (absent(raw)) return [];
  const list = typeof raw === 'string' ? raw.split(',').map((o) => o.trim()) : raw;
  if (!Array.isArray(list)) throw new Error('invalid mcpAllowedOrigins: a comma-separated list of origins');
  return list.map((o) => {
    if (typeof o !== 'string' || !URL.canParse(o) || new URL(o).origin !== o)
      throw new Error(
        `invalid mcpAllowedOrigins entry ${JSON.stringify(o)}: an origin like https://app.example.com`,
      );
    return o;
  });
}

function parseDomainName(raw: unknown): string | undefined {
  if (absent(raw)) return undefined;
  const labels = typeof raw === 'string' ? raw.split('.') : [];
  if (
    typeof raw !== 'string' ||
    raw.length > 253 ||
    labels.length < 2 ||
    !labels.every((l) => LABEL.test(l)) ||
    /^\d+$/.test(labels.at(-1) ?? '')
  )
    throw new Error(
      `invalid domainName ${JSON.stringify(raw)}: a lowercase hostname like herald.example.org (no scheme, port, path or wildcard)`,
    );
  return raw;
}

function parseDomain(
  raw: { domainName: unknown; certificateArn: unknown; hostedZoneId: unknown },
  region: string | undefined,
): StageDomain | undefined {
  const name = parseDomainName(raw.domainName);
  if (!name) {
    for (const key of ['certificateArn', 'hostedZoneId'] as const)
      if (!absent(raw[key])) throw new Error(`${key} is set without domainName: set both, or neither`);
    return undefined;
  }
  if (absent(raw.certificateArn))
    throw new Error(
      `domainName ${name} needs certificateArn: a regional ACM certificate for it in the stack's region`,
    );
  const arn = raw.certificateArn;
  const match = typeof arn === 'string' ? CERTIFICATE_ARN.exec(arn) : null;
  if (!match)
    throw new Error(
      `invalid certificateArn ${JSON.stringify(arn)}: an ACM certificate ARN like arn:aws:acm:eu-west-1:123456789012:certificate/<id>`,
    );
  // An HTTP API's regional domain takes a certificate from its own region (not us-east-1's, as an
  // edge-optimized one or CloudFront would).
  if (region && !Token.isUnresolved(region) && match[1] !== region)
    throw new Error(
      `certificateArn is in ${match[1]} but the stack deploys to ${region}: request the certificate for ${name} in ${region}`,
    );
  let hostedZoneId: string | undefined;
  if (!absent(raw.hostedZoneId)) {
    if (typeof raw.hostedZoneId !== 'string' || !HOSTED_ZONE_ID.test(raw.hostedZoneId))
      throw new Error(
        `invalid hostedZoneId ${JSON.stringify(raw.hostedZoneId)}: a Route 53 hosted zone id like Z0123456789ABCDEFGHIJ`,
      );
    hostedZoneId = raw.hostedZoneId;
  }
  return { name, certificateArn: arn as string, ...(hostedZoneId ? { hostedZoneId } : {}) };
}

/** Context flags arrive as strings (`-c deliveryConcurrency=32`); cdk.json holds numbers. */
function parseNumber(
  name: string,
  raw: unknown,
  rule: string,
  ok: (n: number) => boolean,
): number | undefined {
  if (absent(raw)) return undefined;
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isFinite(n) || !ok(n))
    throw new Error(`invalid ${name} ${JSON.stringify(raw)}: ${rule}`);
  return n;
}

function parseConcurrency(name: string, raw: unknown): number | undefined {
  const { min, max } = MAX_CONCURRENCY_RANGE;
  return parseNumber(
    name,
    raw,
    `an integer from ${min} to ${max} (the range of an SQS event source's maximum concurrency)`,
    (n) => Number.isInteger(n) && n >= min && n <= max,
  );
}

const parseRateLimit = (raw: unknown) =>
  parseNumber('throttleRateLimit', raw, 'a number of requests per second above 0', (n) => n > 0);
const parseBurstLimit = (raw: unknown) =>
  parseNumber(
    'throttleBurstLimit',
    raw,
    'a whole number of requests above 0',
    (n) => Number.isInteger(n) && n > 0,
  );

function parseTracing(raw: unknown): boolean {
  if (absent(raw)) return false;
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw new Error(`invalid tracing ${JSON.stringify(raw)}: true or false`);
}

const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;
const STREAM_ARN =
  /^arn:aws[a-z-]*:dynamodb:([a-z]{2}(?:-[a-z]+)+-\d):\d{12}:table\/([A-Za-z0-9_.-]{3,255})\/stream\/[^/\s]+$/;

function parseImportTable(raw: unknown, region?: string): ImportedTable | undefined {
  if (absent(raw)) return undefined;
  const { tableName, tableStreamArn } = objectOf(
    'importTable',
    raw,
    ['tableName', 'tableStreamArn'],
    'an object { "tableName": "<restored table>", "tableStreamArn": "<its stream ARN>" }',
  );
  if (typeof tableName !== 'string' || !TABLE_NAME.test(tableName))
    throw new Error(`invalid importTable.tableName ${JSON.stringify(tableName)}: a DynamoDB table name`);
  const match = typeof tableStreamArn === 'string' ? STREAM_ARN.exec(tableStreamArn) : null;
  if (!match)
    throw new Error(
      `invalid importTable.tableStreamArn ${JSON.stringify(tableStreamArn)}: a stream ARN like arn:aws:dynamodb:eu-west-1:123456789012:table/${tableName}/stream/2026-12-01T00:00:00.000 (aws dynamodb describe-table --table-name ${tableName} --query Table.LatestStreamArn)`,
    );
  if (match[2] !== tableName)
    throw new Error(
      `importTable.tableStreamArn is the stream of table ${match[2]}, not of ${tableName}: give the restored table's own stream`,
    );
  if (region && !Token.isUnresolved(region) && match[1] !== region)
    throw new Error(`importTable.tableStreamArn is in ${match[1]} but the stack deploys to ${region}`);
  return { tableName, tableStreamArn: tableStreamArn as string };
}

const parseRetentionDays = (raw: unknown) =>
  parseNumber(
    'inboxRetentionDays',
    raw,
    'a whole number of days from 1 to 3650',
    (n) => Number.isInteger(n) && n >= 1 && n <= 3650,
  );

function parseDisabledPlatforms(raw: unknown): Platform[] {
  if (absent(raw)) return [];
  let list: unknown = raw;
  if (typeof raw === 'string') {
    try {
      list = raw.trim().startsWith('[') ? JSON.parse(raw) : raw.split(',').map((p) => p.trim());
    } catch {
      list = undefined;
    }
  }
  const rule = `an array of platform names (${PLATFORMS.join(', ')}), e.g. ["x"]`;
  if (!Array.isArray(list)) throw new Error(`invalid inboxDisabledPlatforms ${JSON.stringify(raw)}: ${rule}`);
  for (const p of list)
    if (typeof p !== 'string' || !(PLATFORMS as readonly string[]).includes(p))
      throw new Error(`invalid inboxDisabledPlatforms entry ${JSON.stringify(p)}: ${rule}`);
  return [...new Set(list as Platform[])].sort();
}

const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d$/;
/** A foundation model id, or one with an inference profile's geography before it. */
const MODEL_ID = /^[a-z0-9][a-z0-9-]*\.[a-zA-Z0-9.:_-]{1,200}$/;
const GUARDRAIL_ID = /^[a-z0-9]{1,64}$/;
const GUARDRAIL_VERSION = /^(DRAFT|[1-9][0-9]{0,7})$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** The deadline stays under API Gateway's 30 s. */
const AI_TIMEOUT_RANGE = { min: 1000, max: 25_000 } as const;

function objectOf(
  name: string,
  raw: unknown,
  keys: readonly string[],
  shape: string,
): Record<string, unknown> {
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      value = undefined;
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`invalid ${name} ${JSON.stringify(raw)}: ${shape}`);
  const unknown = Object.keys(value).filter((k) => !keys.includes(k));
  if (unknown.length) throw new Error(`invalid ${name}: unknown key ${unknown.join(', ')}; ${shape}`);
  return value as Record<string, unknown>;
}

function parseRegion(name: string, raw: unknown): string {
  if (typeof raw !== 'string' || !REGION.test(raw))
    throw new Error(`invalid ${name} ${JSON.stringify(raw)}: an AWS region like eu-west-1`);
  return raw;
}

function parseBedrock(raw: unknown): BedrockSettings {
  const shape =
    '{ "modelId": "<model or inference profile id>", "region"?: "<region>", "regions"?: [<the profile\'s destination regions>], "guardrail"?: { "id", "version" } }';
  const b = objectOf('ai.bedrock', raw, ['modelId', 'region', 'regions', 'guardrail'], shape);
  if (typeof b.modelId !== 'string' || !MODEL_ID.test(b.modelId))
    throw new Error(
      `invalid ai.bedrock.modelId ${JSON.stringify(b.modelId)}: a model id like anthropic.claude-3-5-haiku-20241022-v1:0 or an inference profile id like eu.anthropic.claude-3-5-haiku-20241022-v1:0 (not an ARN)`,
    );
  const region = absent(b.region) ? undefined : parseRegion('ai.bedrock.region', b.region);
  const profile = INFERENCE_PROFILE_PREFIX.test(b.modelId);
  const regions = absent(b.regions) ? [] : b.regions;
  if (!Array.isArray(regions)) throw new Error('invalid ai.bedrock.regions: an array of AWS regions');
  const global = b.modelId.startsWith('global.');
  if (global && regions.length)
    throw new Error(
      `ai.bedrock.regions is not for a global inference profile: ${b.modelId} routes to any commercial region, and the stack grants its model there`,
    );
  if (profile && !global && regions.length === 0)
    throw new Error(
      `ai.bedrock.modelId ${b.modelId} is an inference profile: list the regions it routes requests to in ai.bedrock.regions (the profile's page in the Bedrock console shows them); its model is invoked in each`,
    );
  if (!profile && regions.length)
    throw new Error(
      `ai.bedrock.regions is only for an inference profile; ${b.modelId} is a foundation model, called in ai.bedrock.region`,
    );
  let guardrail: BedrockSettings['guardrail'];
  if (!absent(b.guardrail)) {
    const g = objectOf(
      'ai.bedrock.guardrail',
      b.guardrail,
      ['id', 'version'],
      '{ "id": "<guardrail id>", "version": "<number or DRAFT>" }',
    );
    if (typeof g.id !== 'string' || !GUARDRAIL_ID.test(g.id))
      throw new Error(
        `invalid ai.bedrock.guardrail.id ${JSON.stringify(g.id)}: a guardrail id (not its ARN)`,
      );
    const version = typeof g.version === 'number' ? String(g.version) : g.version;
    if (typeof version !== 'string' || !GUARDRAIL_VERSION.test(version))
      throw new Error(
        `invalid ai.bedrock.guardrail.version ${JSON.stringify(g.version)}: a version number or DRAFT`,
      );
    guardrail = { id: g.id, version };
  }
  return {
    modelId: b.modelId,
    region,
    regions: [...new Set(regions.map((r, i) => parseRegion(`ai.bedrock.regions[${i}]`, r)))].sort(),
    guardrail,
  };
}

function parseOpenAi(raw: unknown): OpenAiSettings {
  const shape = '{ "baseUrl": "https://…/v1", "model": "<model name>", "keyCiphertext"?: "<base64>" }';
  const o = objectOf('ai.openai', raw, ['baseUrl', 'model', 'keyCiphertext'], shape);
  // https only: the key travels in a header, and the functions reach no private network.
  if (typeof o.baseUrl !== 'string' || !URL.canParse(o.baseUrl) || new URL(o.baseUrl).protocol !== 'https:')
    throw new Error(
      `invalid ai.openai.baseUrl ${JSON.stringify(o.baseUrl)}: an https URL like https://llm.example.org/v1`,
    );
  if (typeof o.model !== 'string' || o.model.trim() === '' || o.model.length > 200)
    throw new Error(`invalid ai.openai.model ${JSON.stringify(o.model)}: the model name the endpoint serves`);
  if (!absent(o.keyCiphertext) && (typeof o.keyCiphertext !== 'string' || !BASE64.test(o.keyCiphertext)))
    throw new Error(
      'invalid ai.openai.keyCiphertext: the base64 CiphertextBlob of aws kms encrypt (docs/operator/ai.md), never the key itself',
    );
  return {
    baseUrl: o.baseUrl.replace(/\/+$/, ''),
    model: o.model,
    keyCiphertext: absent(o.keyCiphertext) ? undefined : (o.keyCiphertext as string),
  };
}

function parseAi(raw: unknown): AiSettings | undefined {
  if (absent(raw)) return undefined;
  const a = objectOf(
    'ai',
    raw,
    ['bedrock', 'openai', 'images', 'timeoutMs'],
    '{ "bedrock": {…} or "openai": {…}, "images"?: true|false, "timeoutMs"?: <ms> } (docs/operator/ai.md)',
  );
  if (absent(a.bedrock) === absent(a.openai))
    throw new Error('invalid ai: set ai.bedrock or ai.openai, exactly one (one engine answers)');
  const images = absent(a.images)
    ? false
    : a.images === true || a.images === 'true'
      ? true
      : a.images === false || a.images === 'false'
        ? false
        : undefined;
  if (images === undefined) throw new Error(`invalid ai.images ${JSON.stringify(a.images)}: true or false`);
  const { min, max } = AI_TIMEOUT_RANGE;
  return {
    bedrock: absent(a.bedrock) ? undefined : parseBedrock(a.bedrock),
    openai: absent(a.openai) ? undefined : parseOpenAi(a.openai),
    images,
    timeoutMs: parseNumber(
      'ai.timeoutMs',
      a.timeoutMs,
      `a whole number of milliseconds from ${min} to ${max}`,
      (n) => Number.isInteger(n) && n >= min && n <= max,
    ),
  };
}

/** Each setting's value, normalized, so a flag and the committed entry compare by meaning. */
const NORMALIZE: Record<SettingKey, (raw: unknown) => unknown> = {
  publicUrl: parsePublicUrl,
  alarmEmail: (raw) => parseEmail('alarmEmail', raw),
  notifySender: (raw) => parseEmail('notifySender', raw),
  docsUrl: parseDocsUrl,
  mcpAllowedOrigins: parseOrigins,
  domainName: parseDomainName,
  certificateArn: (raw) => (absent(raw) ? undefined : raw),
  hostedZoneId: (raw) => (absent(raw) ? undefined : raw),
  ...(Object.fromEntries(
    Object.keys(CONCURRENCY_SETTINGS).map((key) => [key, (raw: unknown) => parseConcurrency(key, raw)]),
  ) as Record<ConcurrencySetting, (raw: unknown) => unknown>),
  throttleRateLimit: parseRateLimit,
  throttleBurstLimit: parseBurstLimit,
  tracing: parseTracing,
  importTable: (raw) => parseImportTable(raw),
  ticketEmail: (raw) => parseEmail('ticketEmail', raw),
  inboxRetentionDays: parseRetentionDays,
  inboxDisabledPlatforms: parseDisabledPlatforms,
  ai: parseAi,
};

/** The committed entry of `stage` in `context.stages`, checked for shape and unknown keys. */
function committedEntry(stages: unknown, stage: string): Record<string, unknown> | undefined {
  if (absent(stages)) return undefined;
  if (typeof stages !== 'object' || Array.isArray(stages))
    throw new Error(`invalid "stages" in ${SETTINGS_FILE}: an object of stage name → settings`);
  const entry = (stages as Record<string, unknown>)[stage];
  if (entry === undefined) return undefined;
  if (entry === null || typeof entry !== 'object' || Array.isArray(entry))
    throw new Error(`invalid context.stages.${stage} in ${SETTINGS_FILE}: an object of settings`);
  const unknown = Object.keys(entry).filter((k) => !(SETTING_KEYS as readonly string[]).includes(k));
  if (unknown.length)
    throw new Error(
      `unknown setting${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} in context.stages.${stage} of ${SETTINGS_FILE}: the settings are ${SETTING_KEYS.join(', ')}`,
    );
  return entry as Record<string, unknown>;
}

/**
 * The settings in force: the committed entry, and for dev any `-c key=value` flag over it. A
 * protected stage takes its settings from the committed file only: a flag that differs from it is
 * refused, so what runs in production is what was reviewed.
 */
function settingsOf(context: Record<string, unknown>, stage: string): Record<SettingKey, unknown> {
  const committed = committedEntry(context.stages, stage) ?? {};
  const settings = {} as Record<SettingKey, unknown>;
  for (const key of SETTING_KEYS) {
    const flag = context[key];
    const kept = committed[key];
    if (!isProtectedStage(stage)) {
      settings[key] = absent(flag) ? kept : flag;
      continue;
    }
    if (!absent(flag) && JSON.stringify(NORMALIZE[key](flag)) !== JSON.stringify(NORMALIZE[key](kept)))
      throw new Error(
        `-c ${key}=${String(flag)} differs from context.stages.${stage}.${key} in ${SETTINGS_FILE} (${kept === undefined ? 'unset' : JSON.stringify(kept)}): stage ${stage} is protected, so its settings come from ${SETTINGS_FILE} only; edit the file (and have the change reviewed) instead of passing -c`,
      );
    settings[key] = kept;
  }
  return settings;
}

/**
 * The stage's configuration from a CDK context: `stage`, `stages` (cdk.json's per-stage entries)
 * and, for dev, flat `-c` settings. `region` is the stack's, when known, to check the certificate.
 */
export function stageConfigFrom(
  context: Record<string, unknown>,
  opts: { region?: string } = {},
): StageConfig {
  const stage = parseStage(context.stage);
  const s = settingsOf(context, stage);
  const domain = parseDomain(s, opts.region);
  let publicUrl = parsePublicUrl(s.publicUrl);
  if (domain) {
    const own = `https://${domain.name}`;
    if (publicUrl && publicUrl !== own)
      throw new Error(
        `publicUrl ${publicUrl} differs from domainName ${domain.name}: with a domain the public URL is ${own} (leave publicUrl out)`,
      );
    publicUrl = own;
  }
  const config: StageConfig = {
    stage,
    protectData: isProtectedStage(stage),
    docsUrl: parseDocsUrl(s.docsUrl),
    alarmEmail: parseEmail('alarmEmail', s.alarmEmail),
    ticketEmail: parseEmail('ticketEmail', s.ticketEmail),
    notifySender: parseEmail('notifySender', s.notifySender),
    mcpAllowedOrigins: parseOrigins(s.mcpAllowedOrigins),
    publicUrl,
    domain,
    concurrency: Object.fromEntries(
      Object.entries(CONCURRENCY_SETTINGS).flatMap(([key, worker]) => {
        const n = parseConcurrency(key, s[key as ConcurrencySetting]);
        return n === undefined ? [] : [[worker, n]];
      }),
    ),
    throttle: {
      rateLimit: parseRateLimit(s.throttleRateLimit) ?? DEFAULT_THROTTLE.rateLimit,
      burstLimit: parseBurstLimit(s.throttleBurstLimit) ?? DEFAULT_THROTTLE.burstLimit,
    },
    tracing: parseTracing(s.tracing),
    importTable: parseImportTable(s.importTable, opts.region),
    inbox: {
      retentionDays: parseRetentionDays(s.inboxRetentionDays),
      disabledPlatforms: parseDisabledPlatforms(s.inboxDisabledPlatforms),
    },
    ai: parseAi(s.ai),
  };
  // The switch drops the created table from the template: CloudFormation deletes it unless it is
  // retained, and only protected stages retain their data.
  if (config.importTable && !config.protectData)
    throw new Error(
      `importTable is refused on stage ${stage}: its resources are not retained, so switching to an imported table would delete the table the stack created; restore into a protected stage (docs/operator/restore.md)`,
    );
  if (config.protectData) {
    const missing = [
      ...(publicUrl ? [] : ['publicUrl (or domainName)']),
      ...(config.alarmEmail ? [] : ['alarmEmail']),
    ];
    if (missing.length)
      throw new Error(
        `stage ${stage} is protected and needs ${missing.join(' and ')} in context.stages.${stage} of ${SETTINGS_FILE}: the passkeys and the platforms' OAuth callbacks are bound to the public host, and without an alarm email no one hears of a failure (docs/operator/settings.md)`,
      );
  }
  return config;
}

/** The stage configuration from the CDK context visible at `scope` (usually the App). */
export function readStageConfig(scope: IConstruct, opts: { region?: string } = {}): StageConfig {
  const context: Record<string, unknown> = {
    stage: scope.node.tryGetContext('stage'),
    stages: scope.node.tryGetContext('stages'),
  };
  for (const key of SETTING_KEYS) context[key] = scope.node.tryGetContext(key);
  return stageConfigFrom(context, opts);
}
