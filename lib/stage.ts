import { RemovalPolicy } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

// Deployment stage and the other knobs read from CDK context (`cdk.json`, or `-c key=value`).
// Read and validated here, once; the stack and the app only see a typed StageConfig.

export const DEFAULT_STAGE = 'dev';
export const DEFAULT_DOCS_URL = 'https://docs.herald.dev';

const STAGE_PATTERN = /^[a-z0-9][a-z0-9-]{0,15}$/;
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export interface StageConfig {
  /** Lowercase alphanumerics and dashes, 1–16 characters; part of the stack name. */
  readonly stage: string;
  /** Outside `dev`, data is protected: deletion protection on, resources retained on stack delete. */
  readonly protectData: boolean;
  /** Origin of the documentation site; problem `type` URIs are built from it. */
  readonly docsUrl: string;
  /** Where alarm notifications go; no subscription when absent. */
  readonly alarmEmail: string | undefined;
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
   * own host.
   */
  readonly publicUrl: string | undefined;
  /**
   * A custom domain for the API (an API Gateway regional domain with this ACM certificate, in the
   * stack's region); with a hosted zone id its alias records are created too. Without a publicUrl,
   * `https://<name>` is the public URL.
   */
  readonly domain: { name: string; certificateArn: string; hostedZoneId?: string } | undefined;
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

function parseDocsUrl(raw: unknown): string {
  if (raw === undefined || raw === null || raw === '') return DEFAULT_DOCS_URL;
  if (typeof raw !== 'string' || !URL.canParse(raw) || new URL(raw).protocol !== 'https:') {
    throw new Error(`invalid docsUrl ${JSON.stringify(raw)}: an https URL is required`);
  }
  return raw.replace(/\/+$/, '');
}

function parsePublicUrl(raw: unknown): string | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
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
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string' || !EMAIL_PATTERN.test(raw)) {
    throw new Error(`invalid ${name} ${JSON.stringify(raw)}: an email address is required`);
  }
  return raw;
}

function parseOrigins(raw: unknown): string[] {
  if (raw === undefined || raw === null || raw === '') return [];
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

const DOMAIN_PATTERN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;
const CERTIFICATE_ARN_PATTERN = /^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate\/[0-9a-f-]+$/;
const HOSTED_ZONE_PATTERN = /^Z[A-Z0-9]{1,31}$/;

function parseDomain(context: Record<string, unknown>): StageConfig['domain'] {
  const blank = (v: unknown) => v === undefined || v === null || v === '';
  const { domainName: name, certificateArn, hostedZoneId } = context;
  if (blank(name)) {
    if (!blank(certificateArn) || !blank(hostedZoneId))
      throw new Error('certificateArn and hostedZoneId need a domainName');
    return undefined;
  }
  if (typeof name !== 'string' || !DOMAIN_PATTERN.test(name))
    throw new Error(`invalid domainName ${JSON.stringify(name)}: a lowercase host name like api.example.com`);
  if (typeof certificateArn !== 'string' || !CERTIFICATE_ARN_PATTERN.test(certificateArn))
    throw new Error(
      `invalid certificateArn ${JSON.stringify(certificateArn)}: the ARN of an ACM certificate for ${name} in the stack's region`,
    );
  if (blank(hostedZoneId)) return { name, certificateArn };
  if (typeof hostedZoneId !== 'string' || !HOSTED_ZONE_PATTERN.test(hostedZoneId))
    throw new Error(
      `invalid hostedZoneId ${JSON.stringify(hostedZoneId)}: a Route 53 zone id like Z0123456789ABC`,
    );
  return { name, certificateArn, hostedZoneId };
}

export function stageConfigFrom(context: Record<string, unknown>): StageConfig {
  const stage = parseStage(context.stage);
  const domain = parseDomain(context);
  return {
    stage,
    protectData: isProtectedStage(stage),
    docsUrl: parseDocsUrl(context.docsUrl),
    alarmEmail: parseEmail('alarmEmail', context.alarmEmail),
    notifySender: parseEmail('notifySender', context.notifySender),
    mcpAllowedOrigins: parseOrigins(context.mcpAllowedOrigins),
    publicUrl: parsePublicUrl(context.publicUrl) ?? (domain ? `https://${domain.name}` : undefined),
    domain,
  };
}

/** The stage configuration from the CDK context visible at `scope` (usually the App). */
export function readStageConfig(scope: IConstruct): StageConfig {
  return stageConfigFrom({
    stage: scope.node.tryGetContext('stage'),
    docsUrl: scope.node.tryGetContext('docsUrl'),
    alarmEmail: scope.node.tryGetContext('alarmEmail'),
    notifySender: scope.node.tryGetContext('notifySender'),
    mcpAllowedOrigins: scope.node.tryGetContext('mcpAllowedOrigins'),
    publicUrl: scope.node.tryGetContext('publicUrl'),
    domainName: scope.node.tryGetContext('domainName'),
    certificateArn: scope.node.tryGetContext('certificateArn'),
    hostedZoneId: scope.node.tryGetContext('hostedZoneId'),
  });
}
